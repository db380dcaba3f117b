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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// A pause and a resume, carried out on the status copy; the rules they
// follow are in pause_policy.go.

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
