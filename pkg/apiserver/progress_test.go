/*
Copyright The TensorStack Training Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package apiserver

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// recordingAuthorizer stands for the server's own authorizer: it denies
// everything and counts the requests that reach it.
type recordingAuthorizer struct {
	calls int
}

var errNext = errors.New("decided by the next authorizer")

func (r *recordingAuthorizer) authorizer() authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
		r.calls++
		return authorizer.DecisionDeny, "next", errNext
	})
}

// podUser is a user of a pod-bound service-account token.
func podUser(name string, extra map[string][]string) user.Info {
	return &user.DefaultInfo{Name: name, Extra: extra}
}

func podExtras() map[string][]string {
	return map[string][]string{
		serviceaccount.PodNameKey: {"j-master-0"},
		serviceaccount.PodUIDKey:  {"pod-uid"},
	}
}

// podReport is a pod's progress report to job j in namespace ns, changed
// by mod.
func podReport(mod func(*authorizer.AttributesRecord)) authorizer.AttributesRecord {
	a := authorizer.AttributesRecord{
		User:            podUser("system:serviceaccount:ns:default", podExtras()),
		Verb:            "create",
		Namespace:       "ns",
		APIGroup:        "batch.tensorstack.dev",
		APIVersion:      "v1beta1",
		Resource:        "pytorchtrainingjobs",
		Subresource:     "progress",
		Name:            "j",
		ResourceRequest: true,
	}
	if mod != nil {
		mod(&a)
	}
	return a
}

func TestPodReporters(t *testing.T) {
	cases := []struct {
		name  string
		attrs authorizer.AttributesRecord
		allow bool
	}{
		{"a pod reports to a PyTorch job", podReport(nil), true},
		{"a pod reports to a TensorFlow job", podReport(func(a *authorizer.AttributesRecord) { a.Resource = "tensorflowtrainingjobs" }), true},
		{"a pod of another service account of the namespace", podReport(func(a *authorizer.AttributesRecord) {
			a.User = podUser("system:serviceaccount:ns:trainer", podExtras())
		}), true},

		{"a job of another namespace", podReport(func(a *authorizer.AttributesRecord) { a.Namespace = "other" }), false},
		{"a cluster-scoped request", podReport(func(a *authorizer.AttributesRecord) { a.Namespace = "" }), false},
		{"a user with pod extras that is not a service account", podReport(func(a *authorizer.AttributesRecord) {
			a.User = podUser("alice", podExtras())
		}), false},
		{"a service account token not bound to a pod", podReport(func(a *authorizer.AttributesRecord) {
			a.User = podUser("system:serviceaccount:ns:default", nil)
		}), false},
		{"no pod uid", podReport(func(a *authorizer.AttributesRecord) {
			a.User = podUser("system:serviceaccount:ns:default", map[string][]string{serviceaccount.PodNameKey: {"j-master-0"}})
		}), false},
		{"no pod name", podReport(func(a *authorizer.AttributesRecord) {
			a.User = podUser("system:serviceaccount:ns:default", map[string][]string{serviceaccount.PodUIDKey: {"pod-uid"}})
		}), false},
		{"two pod names", podReport(func(a *authorizer.AttributesRecord) {
			a.User = podUser("system:serviceaccount:ns:default", map[string][]string{
				serviceaccount.PodNameKey: {"a", "b"}, serviceaccount.PodUIDKey: {"pod-uid"},
			})
		}), false},
		{"no user", podReport(func(a *authorizer.AttributesRecord) { a.User = nil }), false},
		{"verb get", podReport(func(a *authorizer.AttributesRecord) { a.Verb = "get" }), false},
		{"verb update", podReport(func(a *authorizer.AttributesRecord) { a.Verb = "update" }), false},
		{"subresource status", podReport(func(a *authorizer.AttributesRecord) { a.Subresource = "status" }), false},
		{"the job itself", podReport(func(a *authorizer.AttributesRecord) { a.Subresource = "" }), false},
		{"another group", podReport(func(a *authorizer.AttributesRecord) { a.APIGroup = "kubeflow.org" }), false},
		{"another resource", podReport(func(a *authorizer.AttributesRecord) { a.Resource = "pods" }), false},
		{"an empty name", podReport(func(a *authorizer.AttributesRecord) { a.Name = "" }), false},
		{"a non-resource request", podReport(func(a *authorizer.AttributesRecord) {
			a.ResourceRequest = false
			a.Path = "/apis/batch.tensorstack.dev/v1beta1/namespaces/ns/pytorchtrainingjobs/j/progress"
		}), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := isPodReport(tc.attrs); got != tc.allow {
				t.Errorf("isPodReport = %v, want %v", got, tc.allow)
			}

			next := &recordingAuthorizer{}
			authz := withPodReporters(next.authorizer())
			decision, reason, err := authz.Authorize(context.Background(), tc.attrs)
			if tc.allow {
				if decision != authorizer.DecisionAllow || err != nil || reason != podReportReason {
					t.Errorf("Authorize = %v, %q, %v; want Allow, %q", decision, reason, err, podReportReason)
				}
				if next.calls != 0 {
					t.Errorf("the next authorizer was asked %d times, want 0", next.calls)
				}
			} else {
				if decision != authorizer.DecisionDeny || reason != "next" || !errors.Is(err, errNext) {
					t.Errorf("Authorize = %v, %q, %v; want the next authorizer's Deny", decision, reason, err)
				}
				if next.calls != 1 {
					t.Errorf("the next authorizer was asked %d times, want 1", next.calls)
				}
			}

			next.calls = 0
			d := authz.ConditionsAwareAuthorize(context.Background(), tc.attrs)
			if tc.allow {
				if !d.IsAllow() || d.Reason() != podReportReason || next.calls != 0 {
					t.Errorf("ConditionsAwareAuthorize = %v with %d calls of the next; want Allow without", d, next.calls)
				}
			} else {
				if !d.IsDeny() || !errors.Is(d.Error(), errNext) || next.calls != 1 {
					t.Errorf("ConditionsAwareAuthorize = %v with %d calls of the next; want its Deny after 1", d, next.calls)
				}
			}
		})
	}
}

func TestWithPodReportersNil(t *testing.T) {
	if authz := withPodReporters(nil); authz != nil {
		t.Errorf("withPodReporters(nil) = %#v, want nil", authz)
	}
}

func TestPodReportersEvaluateConditionsDelegates(t *testing.T) {
	next := &recordingAuthorizer{}
	authz := withPodReporters(next.authorizer())
	d := authorizer.ConditionsAwareDecisionFromParts(authorizer.DecisionNoOpinion, "", nil)
	// AuthorizerFunc supports no conditions; podReporters passes its answer on.
	decision, _, err := authz.EvaluateConditions(context.Background(), d, nil)
	if decision != authorizer.DecisionDeny || !errors.Is(err, authorizer.ErrorConditionEvaluationNotSupported) {
		t.Errorf("EvaluateConditions = %v, %v; want the next authorizer's Deny, %v", decision, err, authorizer.ErrorConditionEvaluationNotSupported)
	}
}
