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
	corev1 "k8s.io/api/core/v1"
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

	sets, _, err := PodSets(whole, groups(1, 3), noMinCount, nil)
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
	sets, _, _ = PodSets(whole, groups(0, 4), noMinCount, nil)
	if diff := cmp.Diff(&kueuev1beta2.PodSetTopologyRequest{Required: ptr.To(rack), PodIndexLabel: index}, sets[0].TopologyRequest); diff != "" {
		t.Errorf("a single pod set (-want +got):\n%s", diff)
	}

	// Per replica type, preferred.
	g := groups(1, 3)
	g[1].Spec.Template.Annotations = map[string]string{batch.AnnotationPreferredTopology: rack}
	sets, _, _ = PodSets(nil, g, noMinCount, nil)
	if sets[0].TopologyRequest != nil {
		t.Errorf("the master's pod set asks for %+v; only the worker's template asked", sets[0].TopologyRequest)
	}
	if diff := cmp.Diff(&kueuev1beta2.PodSetTopologyRequest{Preferred: ptr.To(rack), PodIndexLabel: index}, sets[1].TopologyRequest); diff != "" {
		t.Errorf("the worker's pod set (-want +got):\n%s", diff)
	}

	// Without a request, none.
	sets, plain, _ := PodSets(nil, groups(1, 3), noMinCount, nil)
	_, requested, _ := PodSets(whole, groups(1, 3), noMinCount, nil)
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

// TestAssignedNodes reads the nodes of topology assignments in Kueue's
// compact form (one value for a whole slice, or roots with a prefix and a
// suffix), each once, and none where no level is the node's.
func TestAssignedNodes(t *testing.T) {
	assignment := func(levels []string, slices ...kueuev1beta2.TopologyAssignmentSlice) kueuev1beta2.PodSetAssignment {
		return kueuev1beta2.PodSetAssignment{TopologyAssignment: &kueuev1beta2.TopologyAssignment{Levels: levels, Slices: slices}}
	}
	slice := func(values ...kueuev1beta2.TopologyAssignmentSliceLevelValues) kueuev1beta2.TopologyAssignmentSlice {
		return kueuev1beta2.TopologyAssignmentSlice{DomainCount: 1, ValuesPerLevel: values}
	}
	one := func(v string) kueuev1beta2.TopologyAssignmentSliceLevelValues {
		return kueuev1beta2.TopologyAssignmentSliceLevelValues{Universal: ptr.To(v)}
	}
	roots := func(prefix, suffix string, roots ...string) kueuev1beta2.TopologyAssignmentSliceLevelValues {
		return kueuev1beta2.TopologyAssignmentSliceLevelValues{Individual: &kueuev1beta2.TopologyAssignmentSliceLevelIndividualValues{
			Prefix: ptr.To(prefix), Suffix: ptr.To(suffix), Roots: roots}}
	}
	byNode := []string{"rack", corev1.LabelHostname}
	wl := &kueuev1beta2.Workload{Status: kueuev1beta2.WorkloadStatus{Admission: &kueuev1beta2.Admission{
		PodSetAssignments: []kueuev1beta2.PodSetAssignment{
			assignment(byNode, slice(one("r1"), one("gpu-7"))),
			assignment(byNode, slice(one("r1"), roots("gpu-", ".local", "1", "2")), slice(one("r2"), one("gpu-7"))),
			assignment([]string{"rack"}, slice(one("r3"))),
			{Name: "no-topology"},
		},
	}}}
	if got, want := AssignedNodes(wl), []string{"gpu-7", "gpu-1.local", "gpu-2.local"}; !slices.Equal(got, want) {
		t.Errorf("assigned nodes %v, want %v", got, want)
	}
	if got := AssignedNodes(&kueuev1beta2.Workload{}); got != nil {
		t.Errorf("nodes %v of a Workload without admission", got)
	}
}

// TestPodSetsKeepOffNodes: the nodes to avoid are in every pod set's
// template, as in the pods, and change the digest.
func TestPodSetsKeepOffNodes(t *testing.T) {
	_, plain, _ := PodSets(nil, groups(1, 2), noMinCount, nil)
	sets, avoiding, err := PodSets(nil, groups(1, 2), noMinCount, []string{"n1", "n2"})
	if err != nil {
		t.Fatal(err)
	}
	if plain == avoiding {
		t.Errorf("the digest does not follow the nodes to avoid")
	}
	for _, ps := range sets {
		a := ps.Template.Spec.Affinity
		if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
			t.Fatalf("pod set %s has no required node affinity", ps.Name)
		}
		term := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0]
		if len(term.MatchFields) != 1 || term.MatchFields[0].Operator != corev1.NodeSelectorOpNotIn ||
			!slices.Equal(term.MatchFields[0].Values, []string{"n1", "n2"}) {
			t.Errorf("pod set %s matchFields %+v, want metadata.name NotIn n1, n2", ps.Name, term.MatchFields)
		}
	}
}
