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
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/owner"
)

// State is what a queued job's Workload says.
type State struct {
	Workload *unstructured.Unstructured // nil until it exists
	// Admitted: the job may run.
	Admitted bool
	// Evicted is the Evicted condition when True.
	Evicted *metav1.Condition
	// Waiting is the QuotaReserved condition while it is not True.
	Waiting *metav1.Condition
	// AdmittedCounts are the pods per pod set the admission allows, from
	// status.admission.podSetAssignments; below the pod set's count when
	// Kueue admitted an elastic job partially.
	AdmittedCounts map[v1beta1.ReplicaType]int32
}

// Read reads the job's Workload from the cache.
func (q *Queue) Read(job *owner.Job) (*State, error) {
	wl, err := owner.Cached[*unstructured.Unstructured](q.informer.GetIndexer(), job.Object.GetNamespace(),
		WorkloadName(job.Kind, job.Object.GetName()))
	if err != nil {
		return nil, fmt.Errorf("getting the job's Workload: %w", err)
	}
	st := &State{}
	if wl == nil || !metav1.IsControlledBy(wl, job.Object) {
		return st, nil
	}
	st.Workload = wl
	conds := WorkloadConditions(wl)
	if c := meta.FindStatusCondition(conds, ConditionEvicted); c != nil && c.Status == metav1.ConditionTrue {
		st.Evicted = c
	}
	if c := meta.FindStatusCondition(conds, ConditionQuotaReserved); c == nil || c.Status != metav1.ConditionTrue {
		st.Waiting = c
		if st.Waiting == nil {
			st.Waiting = &metav1.Condition{Type: ConditionQuotaReserved, Reason: "Pending", Message: "waiting for Kueue"}
		}
	}
	st.Admitted = meta.IsStatusConditionTrue(conds, ConditionAdmitted) && st.Evicted == nil && WorkloadActive(wl) &&
		WorkloadAdmission(wl) != nil
	if st.Admitted {
		st.AdmittedCounts = admittedCounts(wl)
	}
	return st, nil
}

// WorkloadConditions reads status.conditions of a Workload.
func WorkloadConditions(wl *unstructured.Unstructured) []metav1.Condition {
	raw, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
	return appendDecoded(make([]metav1.Condition, 0, len(raw)), raw)
}

// appendDecoded appends the items of an unstructured list that decode as a
// T; the others, which Kueue never writes, are skipped.
func appendDecoded[T any](to []T, raw []any) []T {
	for _, item := range raw {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		var t T
		if err := runtimeConverter.FromUnstructured(m, &t); err == nil {
			to = append(to, t)
		}
	}
	return to
}

// WorkloadActive reads spec.active; unset means active.
func WorkloadActive(wl *unstructured.Unstructured) bool {
	active, found, err := unstructured.NestedBool(wl.Object, "spec", "active")
	return !found || err != nil || active
}

// admittedCounts reads the count of every pod set assignment that has one.
func admittedCounts(wl *unstructured.Unstructured) map[v1beta1.ReplicaType]int32 {
	out := map[v1beta1.ReplicaType]int32{}
	assignments, _, _ := unstructured.NestedSlice(wl.Object, "status", "admission", "podSetAssignments")
	for _, item := range assignments {
		a, ok := item.(map[string]any)
		if !ok {
			continue
		}
		name, _, _ := unstructured.NestedString(a, "name")
		if count, found, err := unstructured.NestedInt64(a, "count"); found && err == nil {
			out[v1beta1.ReplicaType(name)] = int32(min(max(count, 0), math.MaxInt32))
		}
	}
	return out
}

// WorkloadAdmission reads status.admission, or nil.
func WorkloadAdmission(wl *unstructured.Unstructured) map[string]any {
	a, found, err := unstructured.NestedMap(wl.Object, "status", "admission")
	if !found || err != nil {
		return nil
	}
	return a
}

var runtimeConverter = runtime.DefaultUnstructuredConverter
