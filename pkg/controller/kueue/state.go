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

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/owner"
)

// State is what a queued job's Workload says.
type State struct {
	Workload *kueuev1beta2.Workload // nil until it exists; the cache's, never edited
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
	// Prebuilt: the Workload was made for the job beforehand (by
	// MultiKueue) and keeps the pod sets it was made with.
	Prebuilt bool
	// Unadopted: the prebuilt Workload has no controller yet; the job
	// takes it before anything else, and does not run until then.
	Unadopted bool
	// Mismatch, on an unadopted Workload, says how its pod sets differ
	// from the job's (MatchPodSets): the job does not take it.
	Mismatch string
}

// Read reads the job's Workload from the cache.
func (q *Queue) Read(job *owner.Job) (*State, error) {
	wl, err := owner.Cached[*kueuev1beta2.Workload](q.workloads.GetIndexer(), job.Object.GetNamespace(), workloadNameOf(job))
	if err != nil {
		return nil, fmt.Errorf("getting the job's Workload: %w", err)
	}
	st := &State{Prebuilt: PrebuiltWorkload(job.Object) != ""}
	switch {
	case wl == nil:
		return st, nil
	case st.Prebuilt && metav1.GetControllerOf(wl) == nil:
		st.Unadopted = true
	case !metav1.IsControlledBy(wl, job.Object):
		return st, nil
	}
	st.Workload = wl
	conds := wl.Status.Conditions
	if c := meta.FindStatusCondition(conds, kueuev1beta2.WorkloadEvicted); c != nil && c.Status == metav1.ConditionTrue {
		st.Evicted = c
	}
	if c := meta.FindStatusCondition(conds, kueuev1beta2.WorkloadQuotaReserved); c == nil || c.Status != metav1.ConditionTrue {
		st.Waiting = c
		if st.Waiting == nil {
			st.Waiting = &metav1.Condition{Type: kueuev1beta2.WorkloadQuotaReserved, Reason: "Pending", Message: "waiting for Kueue"}
		}
	}
	st.Admitted = meta.IsStatusConditionTrue(conds, kueuev1beta2.WorkloadAdmitted) && st.Evicted == nil && Active(wl) &&
		wl.Status.Admission != nil && !st.Unadopted
	if st.Admitted {
		st.AdmittedCounts = admittedCounts(wl)
	}
	return st, nil
}

// MatchPodSets says how a prebuilt Workload's pod sets differ from the
// job's, or "" when they match, with Kueue's own test (its jobframework
// takes a prebuilt Workload only when it is equivalent to the job): the
// same pod sets in the same order, with the same counts and minimum
// counts, tolerations, init containers and containers.
func MatchPodSets(workload, job []kueuev1beta2.PodSet) string {
	if len(workload) != len(job) {
		return fmt.Sprintf("it has %d pod sets, the job %d", len(workload), len(job))
	}
	for i := range job {
		w, j := &workload[i], &job[i]
		switch {
		case w.Name != j.Name:
			return fmt.Sprintf("its pod set %d is %s, the job's %s", i, w.Name, j.Name)
		case w.Count != j.Count:
			return fmt.Sprintf("pod set %s has %d pods, the job's %d", w.Name, w.Count, j.Count)
		case ptr.Deref(w.MinCount, -1) != ptr.Deref(j.MinCount, -1):
			return fmt.Sprintf("pod set %s has another minimum count than the job's", w.Name)
		case !equality.Semantic.DeepEqual(w.Template.Spec.Tolerations, j.Template.Spec.Tolerations):
			return fmt.Sprintf("pod set %s has other tolerations than the job's", w.Name)
		case !equality.Semantic.DeepEqual(w.Template.Spec.InitContainers, j.Template.Spec.InitContainers):
			return fmt.Sprintf("pod set %s has other init containers than the job's", w.Name)
		case !equality.Semantic.DeepEqual(w.Template.Spec.Containers, j.Template.Spec.Containers):
			return fmt.Sprintf("pod set %s has other containers than the job's", w.Name)
		}
	}
	return ""
}

// Active reads spec.active; unset means active.
func Active(wl *kueuev1beta2.Workload) bool {
	return wl.Spec.Active == nil || *wl.Spec.Active
}

// admittedCounts reads the count of every pod set assignment that has one.
func admittedCounts(wl *kueuev1beta2.Workload) map[v1beta1.ReplicaType]int32 {
	out := map[v1beta1.ReplicaType]int32{}
	for _, a := range wl.Status.Admission.PodSetAssignments {
		if a.Count != nil {
			out[v1beta1.ReplicaType(a.Name)] = max(*a.Count, 0)
		}
	}
	return out
}
