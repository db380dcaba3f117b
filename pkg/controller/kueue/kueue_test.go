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

package kueue

import (
	"context"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
)

func TestProbe(t *testing.T) {
	kueueList := &metav1.APIResourceList{GroupVersion: "kueue.x-k8s.io/v1beta2", APIResources: []metav1.APIResource{
		{Name: "workloads", Namespaced: true, Kind: "Workload"},
		{Name: "localqueues", Namespaced: true, Kind: "LocalQueue"},
	}}
	// Kueue v0.15 and older serve only v1beta1, which v0.20 stops serving:
	// the controller does not use it.
	oldKueueList := &metav1.APIResourceList{GroupVersion: "kueue.x-k8s.io/v1beta1", APIResources: []metav1.APIResource{
		{Name: "workloads", Namespaced: true, Kind: "Workload"},
	}}
	coreList := &metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Namespaced: true, Kind: "Pod"}}}
	type denial struct{ verb, resource string }
	cases := map[string]struct {
		served     []*metav1.APIResourceList
		denied     denial
		wantReason string
		wantWords  string // in the message
	}{
		"Kueue with access":      {[]*metav1.APIResourceList{coreList, kueueList}, denial{}, ReasonAvailable, ""},
		"no Kueue":               {[]*metav1.APIResourceList{coreList}, denial{}, ReasonNotInstalled, "no version of Kueue's API"},
		"only v1beta1":           {[]*metav1.APIResourceList{coreList, oldKueueList}, denial{}, ReasonNotServed, "v0.16"},
		"no status access":       {[]*metav1.APIResourceList{kueueList}, denial{"update", "workloads"}, ReasonForbidden, "update workloads/status"},
		"no watch on Workloads":  {[]*metav1.APIResourceList{kueueList}, denial{"watch", "workloads"}, ReasonForbidden, "watch workloads"},
		"no create":              {[]*metav1.APIResourceList{kueueList}, denial{"create", "workloads"}, ReasonForbidden, "create workloads"},
		"no list on LocalQueues": {[]*metav1.APIResourceList{kueueList}, denial{"list", "localqueues"}, ReasonForbidden, "list localqueues"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			client := kubefake.NewClientset()
			client.Resources = tc.served
			client.PrependReactor("create", "selfsubjectaccessreviews", func(a core.Action) (bool, runtime.Object, error) {
				review := a.(core.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
				attrs := review.Spec.ResourceAttributes
				review.Status.Allowed = attrs.Group == "kueue.x-k8s.io" &&
					(attrs.Resource == "workloads" || attrs.Resource == "localqueues") &&
					(attrs.Verb != tc.denied.verb || attrs.Resource != tc.denied.resource)
				return true, review, nil
			})
			got := Probe(context.Background(), client.Discovery(), client.AuthorizationV1().SelfSubjectAccessReviews())
			if got.Reason != tc.wantReason || got.Usable != (tc.wantReason == ReasonAvailable) {
				t.Fatalf("Probe = %+v, want reason %s", got, tc.wantReason)
			}
			if !strings.Contains(got.Message, tc.wantWords) {
				t.Errorf("message %q does not say %q", got.Message, tc.wantWords)
			}
		})
	}
}
