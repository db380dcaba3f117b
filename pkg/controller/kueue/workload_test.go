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
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

func groups(counts ...int32) []podbuilder.ReplicaGroup {
	types := []v1beta1.ReplicaType{"master", "worker", "ps"}
	var out []podbuilder.ReplicaGroup
	for i, n := range counts {
		spec := &v1beta1.ReplicaSpec{Type: types[i], Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "pytorch", Image: "trainer:1"}}}}}
		out = append(out, podbuilder.ReplicaGroup{Spec: spec, Type: types[i], Replicas: n})
	}
	return out
}

func noMinCount(int) int32 { return 0 }

// TestPodSets: one pod set per type with replicas, in order, with its count
// and template; minCount only where given; the digest follows every change.
func TestPodSets(t *testing.T) {
	sets, digest, err := PodSets(groups(1, 0, 2), noMinCount)
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 2 {
		t.Fatalf("%d pod sets, want 2 (the empty type has none)", len(sets))
	}
	for i, want := range []struct {
		name  string
		count int64
	}{{"master", 1}, {"ps", 2}} {
		set := sets[i].(map[string]any)
		if set["name"] != want.name || set["count"] != want.count || set["template"] == nil {
			t.Errorf("pod set %d: %v, want %s x%d with a template", i, set, want.name, want.count)
		}
		if _, ok := set["minCount"]; ok {
			t.Errorf("pod set %s has a minCount", want.name)
		}
	}
	_, same, _ := PodSets(groups(1, 0, 2), noMinCount)
	_, resized, _ := PodSets(groups(1, 0, 3), noMinCount)
	elasticSets, elastic, _ := PodSets(groups(1, 4), func(gi int) int32 {
		if gi == 1 {
			return 2
		}
		return 0
	})
	if same != digest || resized == digest {
		t.Errorf("digests: same %v, resized differs %v", same == digest, resized != digest)
	}
	if m := elasticSets[1].(map[string]any)["minCount"]; m != int64(2) || elastic == digest {
		t.Errorf("the scaled pod set's minCount %v, want 2", m)
	}
}

// TestReadAdmission reads what Kueue wrote: conditions, activity, the
// admission and its counts.
func TestReadAdmission(t *testing.T) {
	wl := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"active": false},
		"status": map[string]any{
			"conditions": []any{map[string]any{"type": "Admitted", "status": "True", "reason": "Admitted",
				"lastTransitionTime": "2026-03-01T10:00:00Z", "message": ""}},
			"admission": map[string]any{"clusterQueue": "cq", "podSetAssignments": []any{
				map[string]any{"name": "worker", "count": int64(3)}, map[string]any{"name": "master"},
			}},
		},
	}}
	if c := WorkloadConditions(wl); len(c) != 1 || c[0].Type != ConditionAdmitted {
		t.Errorf("conditions %+v", c)
	}
	if WorkloadActive(wl) {
		t.Errorf("spec.active false reads as active")
	}
	if WorkloadAdmission(wl) == nil {
		t.Errorf("no admission")
	}
	counts := admittedCounts(wl)
	if len(counts) != 1 || counts["worker"] != 3 {
		t.Errorf("admitted counts %v, want worker 3 only", counts)
	}
	if !WorkloadActive(&unstructured.Unstructured{Object: map[string]any{}}) {
		t.Errorf("a Workload without spec.active is active")
	}
}
