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
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// TestPodSetsTopology maps a job's topology requests onto its pod sets:
// the job's own request goes to every pod set, grouped when there are two;
// a replica type's request to its pod set alone; pods rank by replica
// index.
func TestPodSetsTopology(t *testing.T) {
	const rack = "topology.example.com/rack"
	index := ptr.To(v1beta1.LabelReplicaIndex)
	whole := map[string]string{batch.AnnotationRequiredTopology: rack}

	sets, _, err := PodSets(whole, groups(1, 3), noMinCount)
	if err != nil {
		t.Fatal(err)
	}
	// A group's pods are placed without ranks: Kueue ranks a group as one
	// sequence, and replica indexes restart in each type.
	want := &kueuev1beta2.PodSetTopologyRequest{Required: ptr.To(rack), PodSetGroupName: ptr.To(wholeJobGroup)}
	for _, s := range sets {
		if diff := cmp.Diff(want, s.TopologyRequest); diff != "" {
			t.Errorf("pod set %s (-want +got):\n%s", s.Name, diff)
		}
	}

	// One pod set: no group to form.
	sets, _, _ = PodSets(whole, groups(0, 4), noMinCount)
	if diff := cmp.Diff(&kueuev1beta2.PodSetTopologyRequest{Required: ptr.To(rack), PodIndexLabel: index}, sets[0].TopologyRequest); diff != "" {
		t.Errorf("a single pod set (-want +got):\n%s", diff)
	}

	// Per replica type, preferred.
	g := groups(1, 3)
	g[1].Spec.Template.Annotations = map[string]string{batch.AnnotationPreferredTopology: rack}
	sets, _, _ = PodSets(nil, g, noMinCount)
	if sets[0].TopologyRequest != nil {
		t.Errorf("the master's pod set asks for %+v; only the worker's template asked", sets[0].TopologyRequest)
	}
	if diff := cmp.Diff(&kueuev1beta2.PodSetTopologyRequest{Preferred: ptr.To(rack), PodIndexLabel: index}, sets[1].TopologyRequest); diff != "" {
		t.Errorf("the worker's pod set (-want +got):\n%s", diff)
	}

	// Without a request, none.
	sets, plain, _ := PodSets(nil, groups(1, 3), noMinCount)
	_, requested, _ := PodSets(whole, groups(1, 3), noMinCount)
	if sets[0].TopologyRequest != nil || sets[1].TopologyRequest != nil || plain == requested {
		t.Errorf("no request: %+v %+v; digests differ %v", sets[0].TopologyRequest, sets[1].TopologyRequest, plain != requested)
	}
}

func TestRequestedLevels(t *testing.T) {
	wl := &kueuev1beta2.Workload{Spec: kueuev1beta2.WorkloadSpec{PodSets: []kueuev1beta2.PodSet{
		{Name: "master", TopologyRequest: &kueuev1beta2.PodSetTopologyRequest{Required: ptr.To("rack")}},
		{Name: "worker", TopologyRequest: &kueuev1beta2.PodSetTopologyRequest{Required: ptr.To("rack")}},
		{Name: "ps", TopologyRequest: &kueuev1beta2.PodSetTopologyRequest{Preferred: ptr.To("block")}},
		{Name: "evaluator"},
	}}}
	if got := RequestedLevels(wl); !slices.Equal(got, []string{"rack", "block"}) {
		t.Errorf("RequestedLevels = %v, want rack and block once each", got)
	}
}
