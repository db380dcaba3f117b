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

// ReasonStalled is the Failed condition's reason, and the event's, for a
// job that stopped progressing.
const ReasonStalled = "Stalled"

// planStall carries out the stall watchdog's decision (stall_policy.go). It
// returns the Stalled condition and its event, and the job's end under
// stallPolicy Fail, or under Restart with no restart left.
func (r *reconciler) planStall(debug bool) (decision, *ending) {
	in := stallInput{
		deadline:     r.spec.RunPolicy.ProgressDeadlineSeconds,
		policy:       r.spec.RunPolicy.StallPolicy,
		debug:        debug,
		progress:     r.status.Progress,
		backoffCount: r.status.BackoffCount,
		backoffLimit: backoffLimit(r.spec),
		now:          r.now,
	}
	if in.deadline != nil && !debug {
		in.runningSince, in.allRunning = r.allRunningSince()
	}
	d := decideStall(in)
	switch d.step {
	case stallUnwatched:
		return stallResolved(r.status.Conditions, "the job has no progress deadline now"), nil
	case stallClockStopped:
		return decision{}, nil
	case stallProgressing:
		resolved := stallResolved(r.status.Conditions, "the job makes progress")
		resolved.requeueAt(d.comeBack)
		return resolved, nil
	}
	newStall := !meta.IsStatusConditionTrue(r.status.Conditions, v1beta1.ConditionStalled)
	if newStall {
		r.status.Stall = r.stallRecord()
	}
	stalled := stalledCondition(newStall, d.message, stallPolicyOf(in.policy))
	switch d.action {
	case stallFails:
		r.stallLogs = true
		return stalled, jobFailed(ReasonStalled, d.message)
	case stallOutOfRestarts:
		r.stallLogs = true
		return stalled, jobFailed(ReasonBackoffLimitExceeded,
			fmt.Sprintf("the job has used all %d of its restarts, and %s", in.backoffLimit, d.message))
	case stallRestarts:
		if !r.stopRunning(StopStalled, d.message) {
			return stalled, nil
		}
		r.stallLogs = true
		r.status.BackoffCount++
		r.restartAll(fmt.Sprintf("The job stalled; restarting every replica (restart %d of %d)", r.status.BackoffCount, in.backoffLimit))
	}
	return stalled, nil
}

// stalledCondition is the Stalled condition of a job that stopped
// progressing, and its event when the stall is new (Stalled not yet True).
func stalledCondition(newStall bool, message string, policy v1beta1.StallPolicy) decision {
	var d decision
	if newStall {
		d.event(corev1.EventTypeWarning, ReasonStalled, "Stalled: %s (stall policy %s)", message, policy)
	}
	d.setCondition(v1beta1.ConditionStalled, metav1.ConditionTrue, v1beta1.ReasonProgressDeadlineExceeded, message)
	return d
}

// stallResolved turns a True Stalled condition False.
func stallResolved(conditions []metav1.Condition, why string) decision {
	var d decision
	if meta.IsStatusConditionTrue(conditions, v1beta1.ConditionStalled) {
		d.setCondition(v1beta1.ConditionStalled, metav1.ConditionFalse, v1beta1.ReasonProgressing, why)
	}
	return d
}

// allRunningSince is when the last replica's training container started
// running, and false unless every replica's pod runs now.
func (r *reconciler) allRunningSince() (time.Time, bool) {
	var since time.Time
	if len(r.slots) == 0 {
		return since, false
	}
	for _, s := range r.slots {
		p := s.pod
		if p == nil || s.replacing || p.DeletionTimestamp != nil || podOutcome(p) != corev1.PodRunning {
			return since, false
		}
		started, ok := r.trainingStarted(p)
		if !ok {
			return since, false
		}
		if started.After(since) {
			since = started
		}
	}
	return since, true
}

func (r *reconciler) stallRecord() *v1beta1.StallStatus {
	st := &v1beta1.StallStatus{Time: *r.metaNow()}
	if p := r.status.Progress; p != nil {
		st.Reporter, st.Step, st.Epoch = p.Reporter, p.Step, p.Epoch
	}
	return st
}

// restartAll replaces every replica at once, without a backoff delay: the
// stop of a stalled job.
func (r *reconciler) restartAll(message string) {
	r.restartingJob = true
	if r.restartsInPlace() {
		r.decided.event(corev1.EventTypeWarning, ReasonRestartingJob, "%s, in place as attempt %d", message, r.status.AttemptCount)
		return
	}
	r.decided.event(corev1.EventTypeWarning, ReasonRestartingJob, "%s", message)
	r.replaceEveryReplica("the job stalled")
}
