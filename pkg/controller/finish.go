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
)

// succeeded says whether the replicas' phases, as this reconcile set them,
// meet the job's success policy. In debug mode nothing succeeds: exits of
// debug pods never decide the job's outcome.
func (r *reconciler) succeeded(debug bool) bool {
	return !debug && r.topo.Total > 0 && jobSucceeded(r.kind.Adapter, r.topo, r.spec.RunPolicy.SuccessPolicy, r)
}

// finish makes the job terminal and plans its clean-up.
func (r *reconciler) finish(phase v1beta1.JobPhase, reason, message string) {
	st := r.status
	st.Phase = phase
	if st.CompletionTime == nil {
		st.CompletionTime = r.metaNow()
	}
	if phase == v1beta1.JobSucceeded {
		r.setCondition(v1beta1.ConditionCompleted, metav1.ConditionTrue, ReasonSucceeded, message)
		r.event(corev1.EventTypeNormal, ReasonSucceeded, "Succeeded: %s", message)
	} else {
		r.setCondition(v1beta1.ConditionCompleted, metav1.ConditionTrue, ReasonFailed, message)
		r.setCondition(v1beta1.ConditionFailed, metav1.ConditionTrue, reason, message)
		r.event(corev1.EventTypeWarning, reason, "Failed: %s", message)
		if r.failure != "" {
			r.setCondition(v1beta1.ConditionReplicaFailure, metav1.ConditionTrue, ReasonReplicaFailed, r.failure)
		}
	}
	r.endAttempt(reason, message)
	// A finished job creates no more pods: it has nothing to avoid.
	st.SuspectNodes = nil
	r.creates = nil
	// Replacements decided in this reconcile stay recorded, but nothing is
	// replaced any more: clean-up decides which pods go.
	r.deletes = nil
	r.planFinished()
}

// replicaEnded says whether a replica phase says how the replica ended:
// it succeeded or failed.
func replicaEnded(p v1beta1.ReplicaPhase) bool {
	return p == v1beta1.ReplicaSucceeded || p == v1beta1.ReplicaFailed
}

// outcomeRecorded says whether a replica phase is an outcome: the replica
// ended, or was stopped.
func outcomeRecorded(p v1beta1.ReplicaPhase) bool {
	return replicaEnded(p) || p == v1beta1.ReplicaDeleted
}

// planFinished applies the clean-up policy and the TTL to a finished job.
// A job that ran out of time has its running pods stopped whatever the
// policy.
func (r *reconciler) planFinished() {
	st := r.status
	policy := cleanUpPolicy(r.spec)
	stopRunning := false
	if c := meta.FindStatusCondition(st.Conditions, v1beta1.ConditionFailed); c != nil &&
		c.Status == metav1.ConditionTrue && c.Reason == ReasonDeadlineExceeded {
		stopRunning = true
	}
	for _, s := range r.slots {
		switch {
		case r.old.Phase.IsFinished() && s.prev != nil && outcomeRecorded(s.prev.Phase):
			// Once a job's end is written, the outcome it recorded for a
			// replica is final: a pod stopped as unfinished that exits
			// anyway, or a pod removed later on (by hand, with its
			// namespace), changes nothing.
			s.phase, s.keepRecord = s.prev.Phase, true
		case s.pod == nil && s.prev != nil && replicaEnded(s.prev.Phase):
			// The pod of a replica that ended is gone: its outcome stays.
			s.phase = s.prev.Phase
		case s.pod == nil:
			s.phase = v1beta1.ReplicaDeleted
		default:
			s.phase = podPhase(s.pod)
		}
		if s.pod == nil {
			continue
		}
		stopping := s.pod.DeletionTimestamp != nil
		if cleanUpRemoves(policy, stopRunning, s.pod) {
			why := fmt.Sprintf("the job finished (clean-up policy %s)", policy)
			if !cleanUpRemoves(policy, false, s.pod) {
				// The policy keeps the pod; the deadline does not.
				why = "the job ran past activeDeadlineSeconds, which stops its running pods whatever the clean-up policy"
			}
			r.delete(s.pod, why)
			stopping = true
		}
		// A replica stopped unfinished is recorded Deleted at once, in the
		// write that finishes the job, rather than once its pod is gone.
		if !s.keepRecord && stopping && !isTerminated(s.pod) {
			s.phase = v1beta1.ReplicaDeleted
		}
	}
	for _, p := range r.extra {
		if p.DeletionTimestamp == nil {
			r.delete(p, "it belongs to no replica of the job")
		}
	}
	if meta.FindStatusCondition(st.Conditions, v1beta1.ConditionRunning) != nil {
		r.setCondition(v1beta1.ConditionRunning, metav1.ConditionFalse, string(st.Phase), "the job finished")
	}

	r.planTTL()
}

// planTTL deletes the finished job once its TTL has passed, and otherwise
// looks at it again then.
func (r *reconciler) planTTL() {
	done := r.now
	if r.status.CompletionTime != nil {
		done = r.status.CompletionTime.Time
	}
	expiry, ok := ttlExpiry(r.spec.RunPolicy.TTLSecondsAfterFinished, done)
	switch {
	case !ok:
	case r.now.Before(expiry):
		r.requeueAt(expiry)
	default:
		r.deleteJob = true
	}
}
