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

package kueueview

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	visibilityv1beta2 "sigs.k8s.io/kueue/apis/visibility/v1beta2"
	kueuefake "sigs.k8s.io/kueue/client-go/clientset/versioned/fake"

	"tensorstack.dev/training/pkg/kueueview/kueueviewtest"
)

// servingVisibility is a discovery that serves Kueue's visibility API.
func servingVisibility() *kubefake.Clientset {
	kube := kubefake.NewClientset()
	kube.Resources = []*metav1.APIResourceList{{GroupVersion: VisibilityGroupVersion,
		APIResources: []metav1.APIResource{{Name: "clusterqueues/pendingworkloads"}, {Name: "localqueues/pendingworkloads"}}}}
	return kube
}

func TestVisibilityIsNotAskedWhereNotServed(t *testing.T) {
	pending, note := Visibility(t.Context(), kubefake.NewClientset().Discovery(), kueueviewtest.Clientset{Interface: kueuefake.NewSimpleClientset()})
	if pending != nil || note != NotServed {
		t.Errorf("note %q, want %q and nothing to ask", note, NotServed)
	}
}

func TestVisibilityFallsBackToTheUsersLocalQueues(t *testing.T) {
	kueue := kueuefake.NewSimpleClientset()
	kueue.PrependReactor("get", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		get := action.(clienttesting.GetAction)
		if get.GetSubresource() != "pendingworkloads" {
			return false, nil, nil
		}
		if get.GetResource().Resource == "clusterqueues" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "visibility.kueue.x-k8s.io", Resource: "clusterqueues"},
				get.GetName(), errors.New("batch users may not"))
		}
		// Two LocalQueues of the user's, each with one Workload, the
		// second in line overall and the fifth.
		position := map[string]int32{"a": 4, "b": 1}[get.GetName()]
		return true, &visibilityv1beta2.PendingWorkloadsSummary{Items: []visibilityv1beta2.PendingWorkload{{
			ObjectMeta:     metav1.ObjectMeta{Namespace: get.GetNamespace(), Name: "wl-" + get.GetName()},
			LocalQueueName: kueuev1beta2.LocalQueueName(get.GetName()), PositionInClusterQueue: position,
		}}}, nil
	})
	pending, note := Visibility(t.Context(), servingVisibility().Discovery(), kueueviewtest.Clientset{Interface: kueue})
	if pending == nil || note != "" {
		t.Fatalf("served, yet the note %q", note)
	}
	items, note, err := pending("gpus", []LocalQueue{{Namespace: "team", Name: "a"}, {Namespace: "team", Name: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 || items[0].Name != "wl-b" || items[1].Name != "wl-a" || !strings.Contains(note, "LocalQueues only") {
		t.Errorf("items %+v, note %q: want wl-b then wl-a, in the ClusterQueue's order, and a note saying what is left out", items, note)
	}
	if _, _, err := pending("gpus", nil); !apierrors.IsForbidden(err) {
		t.Errorf("with no LocalQueue to ask: %v, want the ClusterQueue's 403", err)
	}
}
