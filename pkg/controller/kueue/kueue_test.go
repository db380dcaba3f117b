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

func TestResolveQueueing(t *testing.T) {
	kueueList := &metav1.APIResourceList{GroupVersion: "kueue.x-k8s.io/v1beta2", APIResources: []metav1.APIResource{
		{Name: "workloads", Namespaced: true, Kind: "Workload"},
	}}
	// Kueue v0.15 and older serve only v1beta1, which v0.20 stops serving:
	// the controller does not use it.
	oldKueueList := &metav1.APIResourceList{GroupVersion: "kueue.x-k8s.io/v1beta1", APIResources: []metav1.APIResource{
		{Name: "workloads", Namespaced: true, Kind: "Workload"},
	}}
	coreList := &metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Namespaced: true, Kind: "Pod"}}}
	cases := []struct {
		name      string
		served    []*metav1.APIResourceList
		denied    string // a verb the controller may not use on Workloads
		requested Queueing
		want      Queueing
		wantErr   bool
	}{
		{"auto with Kueue and access", []*metav1.APIResourceList{coreList, kueueList}, "", QueueingAuto, QueueingKueue, false},
		{"auto without Kueue", []*metav1.APIResourceList{coreList}, "", QueueingAuto, QueueingNone, false},
		{"auto with only v1beta1", []*metav1.APIResourceList{coreList, oldKueueList}, "", QueueingAuto, QueueingNone, false},
		{"kueue with only v1beta1", []*metav1.APIResourceList{coreList, oldKueueList}, "", QueueingKueue, "", true},
		{"auto without status access", []*metav1.APIResourceList{kueueList}, "update", QueueingAuto, QueueingNone, false},
		{"auto without access runs unqueued", []*metav1.APIResourceList{kueueList}, "watch", QueueingAuto, QueueingNone, false},
		{"kueue without access", []*metav1.APIResourceList{kueueList}, "create", QueueingKueue, "", true},
		{"kueue not served", []*metav1.APIResourceList{coreList}, "", QueueingKueue, "", true},
		{"none", nil, "", QueueingNone, QueueingNone, false},
		{"unknown", nil, "", "volcano", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := kubefake.NewClientset()
			client.Resources = tc.served
			client.PrependReactor("create", "selfsubjectaccessreviews", func(a core.Action) (bool, runtime.Object, error) {
				review := a.(core.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
				attrs := review.Spec.ResourceAttributes
				review.Status.Allowed = attrs.Verb != tc.denied && attrs.Group == "kueue.x-k8s.io" && attrs.Resource == "workloads"
				return true, review, nil
			})
			got, why, err := ResolveQueueing(context.Background(), client.Discovery(), client.AuthorizationV1().SelfSubjectAccessReviews(), tc.requested)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("ResolveQueueing(%s) = %q (%s), %v; want %q, error %v", tc.requested, got, why, err, tc.want, tc.wantErr)
			}
			if tc.denied != "" && !tc.wantErr && !strings.Contains(why, tc.denied) {
				t.Errorf("the reason %q does not name the verb %s", why, tc.denied)
			}
			if got == QueueingNone && why == "" {
				t.Errorf("queueing none with no reason: jobs naming a queue could not say why they run unqueued")
			}
		})
	}
}
