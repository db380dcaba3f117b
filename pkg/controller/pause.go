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

package controller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// The pause and debug rules: what a stopped job's replicas record, where a
// pause stands, and which pods debug mode runs again or replaces.

// planPause deletes every pod; the job is Paused once none is left.
func (r *reconciler) planPause() {
	if !r.stopRunning(StopPause, "the job was paused") {
		r.holdPods()
		r.setCondition(v1beta1.ConditionPaused, metav1.ConditionTrue, ReasonPausing, r.checkpointWaitMessage())
		return
	}
	reason, message, paused := pauseState(r.stopPods("the job is paused", v1beta1.ReplicaDeleted))
	r.setCondition(v1beta1.ConditionPaused, metav1.ConditionTrue, reason, message)
	if !paused {
		return
	}
	// A queued job's Workload is inactive while paused; once the pods are
	// gone, Kueue's quota can go back.
	r.queueStopped = true
	if r.status.Phase != v1beta1.JobPaused {
		r.status.Phase = v1beta1.JobPaused
		r.event(corev1.EventTypeNormal, ReasonPaused, "Paused: every pod of the job is gone")
	}
}

// hasBeenPaused says whether the job was paused at some point: its Paused
// condition was True, and is still, or was turned False by a resume.
func (r *reconciler) hasBeenPaused() bool {
	c := meta.FindStatusCondition(r.status.Conditions, v1beta1.ConditionPaused)
	return c != nil && (c.Status == metav1.ConditionTrue || c.Reason == ReasonResumed)
}

// resume starts a job again that was paused, with a fresh deadline.
func (r *reconciler) resume() {
	st := r.status
	if c := meta.FindStatusCondition(st.Conditions, v1beta1.ConditionPaused); c != nil && c.Status == metav1.ConditionTrue {
		r.setCondition(v1beta1.ConditionPaused, metav1.ConditionFalse, ReasonResumed, "the job was resumed")
	}
	if st.Phase == v1beta1.JobPaused {
		st.Phase = v1beta1.JobResuming
		st.StartTime = r.metaNow()
		r.event(corev1.EventTypeNormal, ReasonResumed, "Resuming: creating the job's pods again")
	}
	if st.StartTime == nil {
		st.StartTime = r.metaNow()
	}
}

// stopPods deletes every pod of the job, for a pause or while Kueue does not
// admit it, and returns how many are left. Each is recorded Deleted, with
// its UID, so that a resume before the pod is gone sees a replacement, not
// a vanished replica; a replica without a pod is Deleted when it had one,
// else podless.
func (r *reconciler) stopPods(why string, podless v1beta1.ReplicaPhase) int {
	remaining := len(r.extra)
	for _, s := range r.slots {
		s.phase = stoppedReplicaPhase(s.pod != nil, s.prev, podless)
		if s.pod == nil {
			continue
		}
		remaining++
		if s.pod.DeletionTimestamp == nil {
			r.delete(s.pod, why)
		}
	}
	return remaining
}

// stoppedReplicaPhase is what the status records for a replica of a stopped
// job: Deleted for one that has a pod, or had one (its entry carries a pod
// UID), so that a resume counts its pod as replaced, not vanished; podless
// for one that never had a pod.
func stoppedReplicaPhase(hasPod bool, prev *v1beta1.ReplicaStatus, podless v1beta1.ReplicaPhase) v1beta1.ReplicaPhase {
	if hasPod || (prev != nil && prev.UID != "") {
		return v1beta1.ReplicaDeleted
	}
	return podless
}

// pauseState says where a pause stands with remaining pods still to go: the
// Paused condition's reason and message, and whether the job is Paused.
func pauseState(remaining int) (reason, message string, paused bool) {
	if remaining > 0 {
		return ReasonPausing, fmt.Sprintf("waiting for %d pods to terminate", remaining), false
	}
	return ReasonPaused, "the job is paused: it has no pods", true
}

// rerunsAfterSuccess says whether a replica whose pod succeeded runs again:
// in debug mode every replica does, otherwise only under RestartPolicy
// Always.
func rerunsAfterSuccess(debug bool, policy v1beta1.RestartPolicy) bool {
	return debug || restartsOnSuccess(policy)
}

// runModeChanged says whether a pod was made for the other run mode (debug
// or immediate) and so must be replaced. Pods that predate the annotation
// are kept.
func runModeChanged(pod *corev1.Pod, debug bool) bool {
	made := pod.Annotations[podbuilder.AnnotationRunMode]
	return made != "" && made != podbuilder.RunMode(debug)
}
