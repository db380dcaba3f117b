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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

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
	sets, digest, err := PodSets(nil, groups(1, 0, 2), noMinCount, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 2 {
		t.Fatalf("%d pod sets, want 2 (the empty type has none)", len(sets))
	}
	for i, want := range []struct {
		name  kueuev1beta2.PodSetReference
		count int32
	}{{"master", 1}, {"ps", 2}} {
		set := sets[i]
		if set.Name != want.name || set.Count != want.count || len(set.Template.Spec.Containers) != 1 {
			t.Errorf("pod set %d: %s x%d with %d containers, want %s x%d with the template", i, set.Name, set.Count,
				len(set.Template.Spec.Containers), want.name, want.count)
		}
		if set.MinCount != nil {
			t.Errorf("pod set %s has a minCount", want.name)
		}
	}
	_, same, _ := PodSets(nil, groups(1, 0, 2), noMinCount, nil)
	_, resized, _ := PodSets(nil, groups(1, 0, 3), noMinCount, nil)
	elasticSets, elastic, _ := PodSets(nil, groups(1, 4), func(gi int) int32 {
		if gi == 1 {
			return 2
		}
		return 0
	}, nil)
	if same != digest || resized == digest {
		t.Errorf("digests: same %v, resized differs %v", same == digest, resized != digest)
	}
	if m := elasticSets[1].MinCount; m == nil || *m != 2 || elastic == digest {
		t.Errorf("the scaled pod set's minCount %v, want 2", m)
	}
}

// TestAdmittedCounts reads the counts of an admission's pod set
// assignments; an assignment without one leaves its pod set whole.
func TestAdmittedCounts(t *testing.T) {
	wl := &kueuev1beta2.Workload{
		Spec: kueuev1beta2.WorkloadSpec{Active: ptr.To(false)},
		Status: kueuev1beta2.WorkloadStatus{Admission: &kueuev1beta2.Admission{ClusterQueue: "cq",
			PodSetAssignments: []kueuev1beta2.PodSetAssignment{{Name: "worker", Count: ptr.To[int32](3)}, {Name: "master"}}}},
	}
	if Active(wl) {
		t.Errorf("spec.active false reads as active")
	}
	counts := admittedCounts(wl)
	if len(counts) != 1 || counts["worker"] != 3 {
		t.Errorf("admitted counts %v, want worker 3 only", counts)
	}
	if !Active(&kueuev1beta2.Workload{}) {
		t.Errorf("a Workload without spec.active is active")
	}
}

// TestPodsReadyCondition walks the condition through a job's life: not
// ready before the first start, Started, WaitForRecovery when a pod is
// lost (and while it stays lost), Recovered, and WaitForRecovery again.
func TestPodsReadyCondition(t *testing.T) {
	var current *metav1.Condition
	for i, step := range []struct {
		ready  bool
		status metav1.ConditionStatus
		reason string
	}{
		{false, metav1.ConditionFalse, kueuev1beta2.WorkloadWaitForStart},
		{false, metav1.ConditionFalse, kueuev1beta2.WorkloadWaitForStart},
		{true, metav1.ConditionTrue, kueuev1beta2.WorkloadStarted},
		{true, metav1.ConditionTrue, kueuev1beta2.WorkloadStarted},
		{false, metav1.ConditionFalse, kueuev1beta2.WorkloadWaitForRecovery},
		{false, metav1.ConditionFalse, kueuev1beta2.WorkloadWaitForRecovery},
		{true, metav1.ConditionTrue, kueuev1beta2.WorkloadRecovered},
		{false, metav1.ConditionFalse, kueuev1beta2.WorkloadWaitForRecovery},
	} {
		next := PodsReadyCondition(current, step.ready)
		if next.Type != kueuev1beta2.WorkloadPodsReady || next.Status != step.status || next.Reason != step.reason || next.Message == "" {
			t.Fatalf("step %d (ready %v, from %+v): %s %s %s, want %s %s", i, step.ready, current,
				next.Type, next.Status, next.Reason, step.status, step.reason)
		}
		current = &next
	}
	// Kueue's own reason before v0.16 ("PodsReady" while False) counts as
	// not started.
	old := &metav1.Condition{Type: kueuev1beta2.WorkloadPodsReady, Status: metav1.ConditionFalse, Reason: "PodsReady"}
	if next := PodsReadyCondition(old, false); next.Reason != kueuev1beta2.WorkloadWaitForStart {
		t.Errorf("from Kueue's old reason: %s, want %s", next.Reason, kueuev1beta2.WorkloadWaitForStart)
	}
}
