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
	"math"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// The accounting of a job (status.accounting): where its time went, and
// what its interruptions cost. Its figures change only when the job changes
// state or is interrupted, so it adds no status writes of its own.

// accountingState is what a job spends its time on now, by its planned
// status; empty once it finished.
func accountingState(st *v1beta1.TrainingJobStatus) v1beta1.AccountingState {
	switch {
	case st.Phase.IsFinished():
		return ""
	case st.Phase == v1beta1.JobPaused:
		return v1beta1.AccountingPaused
	case meta.IsStatusConditionTrue(st.Conditions, v1beta1.ConditionQueued):
		return v1beta1.AccountingQueued
	case st.Phase == v1beta1.JobRunning:
		return v1beta1.AccountingRunning
	default:
		return v1beta1.AccountingStarting
	}
}

// accountState moves a job's accounting to state at now: the time spent in
// the state it leaves is added to that state's seconds, and the next state's
// clock starts. It returns the accounting, made for a job that enters a
// state without one; nil for a job that finished before accounting existed.
func accountState(a *v1beta1.Accounting, state v1beta1.AccountingState, now time.Time) *v1beta1.Accounting {
	if a == nil {
		if state == "" {
			return nil
		}
		a = &v1beta1.Accounting{}
	}
	if a.State == state && (state == "" || a.StateSince != nil) {
		return a
	}
	if a.StateSince != nil {
		addStateSeconds(a, a.State, wholeSeconds(now.Sub(a.StateSince.Time)))
	}
	a.State = state
	a.StateSince = nil
	if state != "" {
		since := metav1.NewTime(now).Rfc3339Copy()
		a.StateSince = &since
	}
	return a
}

func addStateSeconds(a *v1beta1.Accounting, state v1beta1.AccountingState, seconds int64) {
	if counter := a.StateSeconds(state); counter != nil {
		*counter += seconds
	}
}

func wholeSeconds(d time.Duration) int64 { return max(int64(math.Round(d.Seconds())), 0) }

// interruptionInput is what an interruption is counted from.
type interruptionInput struct {
	// reason is the stop's; replicas how many of them ran.
	reason   string
	replicas int32
	// answered, for a stop that asked for a checkpoint, is whether one came.
	answered *bool
	// trainingSince is when the running replicas' training last began.
	trainingSince time.Time
	// latest is the job's latest checkpoint, progress its last report.
	latest   *v1beta1.CheckpointRecord
	progress *v1beta1.ProgressStatus
	now      time.Time
}

// addInterruption counts a stop of running replicas: the work since the
// last checkpoint, or since the replicas started when no checkpoint is
// newer, is lost for every replica that ran; so are the steps since the
// step the next attempt resumes from. It returns the accounting, made when
// the job had none.
func addInterruption(a *v1beta1.Accounting, in interruptionInput) *v1beta1.Accounting {
	if a == nil {
		a = &v1beta1.Accounting{}
	}
	since := in.trainingSince
	if in.latest != nil && in.latest.ReportTime.After(since) {
		since = in.latest.ReportTime.Time
	}
	lost := wholeSeconds(in.now.Sub(since))
	record := v1beta1.Interruption{
		Time:               metav1.NewTime(in.now).Rfc3339Copy(),
		Reason:             in.reason,
		Replicas:           in.replicas,
		LostSeconds:        lost,
		LostReplicaSeconds: lost * int64(in.replicas),
		CheckpointAnswered: in.answered,
	}
	resumeStep := int64(0)
	if in.latest != nil && in.latest.Step != nil {
		resumeStep = *in.latest.Step
		record.ResumeStep = in.latest.Step
	}
	if p := in.progress; p != nil && p.Step != nil {
		steps := max(*p.Step-resumeStep, 0)
		record.LostSteps = &steps
		a.LostSteps += steps
	}
	a.Interruptions++
	a.LostReplicaSeconds += record.LostReplicaSeconds
	a.Recent = append(a.Recent, record)
	if over := len(a.Recent) - batch.MaxRecentInterruptions; over > 0 {
		a.Recent = append([]v1beta1.Interruption(nil), a.Recent[over:]...)
	}
	return a
}
