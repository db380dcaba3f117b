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
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// finishJob ends a job with its outcome, on the plan's copy of the status:
// the phase, the completion time, and the conditions and event of the
// outcome (failure, when not empty, is the replica failure seen now). A
// finished job creates no more pods, so it has no suspect nodes to avoid.
func finishJob(st *v1beta1.TrainingJobStatus, now *metav1.Time, phase v1beta1.JobPhase,
	reason, message, failure string) decision {
	var d decision
	st.Phase = phase
	if st.CompletionTime == nil {
		st.CompletionTime = now
	}
	if phase == v1beta1.JobSucceeded {
		d.setCondition(v1beta1.ConditionCompleted, metav1.ConditionTrue, ReasonSucceeded, message)
		d.event(corev1.EventTypeNormal, ReasonSucceeded, "Succeeded: %s", message)
	} else {
		d.setCondition(v1beta1.ConditionCompleted, metav1.ConditionTrue, ReasonFailed, message)
		d.setCondition(v1beta1.ConditionFailed, metav1.ConditionTrue, reason, message)
		d.event(corev1.EventTypeWarning, reason, "Failed: %s", message)
		if failure != "" {
			d.setCondition(v1beta1.ConditionReplicaFailure, metav1.ConditionTrue, ReasonReplicaFailed, failure)
		}
	}
	st.SuspectNodes = nil
	return d
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

// finishedJob is what the clean-up of a finished job reads.
type finishedJob struct {
	spec   *v1beta1.TrainingJobSpec
	status *v1beta1.TrainingJobStatus // the plan's copy, finished
	// failedReason is the reason the job failed for; empty when it did not.
	failedReason string
	// recorded: the job's end was already written (the status as read is
	// finished).
	recorded bool
	slots    []*slot
	extra    []*corev1.Pod
	now      time.Time
}

// cleanUpFinished applies the clean-up policy and the TTL to a finished
// job: it sets each replica's final phase on its slot, and decides which
// pods go, and when the job goes. A job that ran out of time has its
// running pods stopped whatever the policy.
func cleanUpFinished(f finishedJob) decision {
	var d decision
	policy := cleanUpPolicy(f.spec)
	stopRunning := f.failedReason == ReasonDeadlineExceeded
	for _, s := range f.slots {
		switch {
		case f.recorded && s.prev != nil && outcomeRecorded(s.prev.Phase):
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
			d.delete(s.pod, why)
			stopping = true
		}
		// A replica stopped unfinished is recorded Deleted at once, in the
		// write that finishes the job, rather than once its pod is gone.
		if !s.keepRecord && stopping && !isTerminated(s.pod) {
			s.phase = v1beta1.ReplicaDeleted
		}
	}
	for _, p := range f.extra {
		if p.DeletionTimestamp == nil {
			d.delete(p, "it belongs to no replica of the job")
		}
	}
	if meta.FindStatusCondition(f.status.Conditions, v1beta1.ConditionRunning) != nil {
		d.setCondition(v1beta1.ConditionRunning, metav1.ConditionFalse, string(f.status.Phase), "the job finished")
	}

	// The TTL: the job goes once it has passed, and is looked at again
	// then otherwise.
	done := f.now
	if f.status.CompletionTime != nil {
		done = f.status.CompletionTime.Time
	}
	expiry, ok := ttlExpiry(f.spec.RunPolicy.TTLSecondsAfterFinished, done)
	switch {
	case !ok:
	case f.now.Before(expiry):
		d.requeueAt(expiry)
	default:
		d.deleteJob = true
	}
	return d
}
