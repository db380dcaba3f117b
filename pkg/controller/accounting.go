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
	"k8s.io/component-base/metrics"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/kueue"
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

// planAccounting closes the time of the state the job leaves, if it leaves
// one, and opens the next.
func (r *reconciler) planAccounting() {
	state := accountingState(r.status)
	a := r.status.Accounting
	if a == nil {
		if state == "" {
			// Finished before the accounting existed: nothing to add.
			return
		}
		a = &v1beta1.Accounting{}
		r.status.Accounting = a
	}
	if a.State == state && (state == "" || a.StateSince != nil) {
		return
	}
	if a.StateSince != nil {
		addStateSeconds(a, a.State, wholeSeconds(r.now.Sub(a.StateSince.Time)))
	}
	a.State = state
	a.StateSince = nil
	if state != "" {
		a.StateSince = r.metaNow()
	}
}

func addStateSeconds(a *v1beta1.Accounting, state v1beta1.AccountingState, seconds int64) {
	if counter := a.StateSeconds(state); counter != nil {
		*counter += seconds
	}
}

func wholeSeconds(d time.Duration) int64 { return max(int64(math.Round(d.Seconds())), 0) }

// recordInterruption counts a stop of running replicas: the work since the
// last checkpoint, or since the replicas started when no checkpoint is
// newer, is lost for every replica that ran. answered says, for a stop that
// asked for a checkpoint, whether one came.
func (r *reconciler) recordInterruption(reason string, replicas int32, answered *bool) {
	a := r.status.Accounting
	if a == nil {
		a = &v1beta1.Accounting{}
		r.status.Accounting = a
	}
	since := r.runStart()
	var latest *v1beta1.CheckpointRecord
	if c := r.status.Checkpoint; c != nil {
		latest = c.Latest
	}
	if latest != nil && latest.ReportTime.After(since) {
		since = latest.ReportTime.Time
	}
	lost := wholeSeconds(r.now.Sub(since))
	in := v1beta1.Interruption{
		Time:               *r.metaNow(),
		Reason:             reason,
		Replicas:           replicas,
		LostSeconds:        lost,
		LostReplicaSeconds: lost * int64(replicas),
		CheckpointAnswered: answered,
	}
	resumeStep := int64(0)
	if latest != nil && latest.Step != nil {
		resumeStep = *latest.Step
		in.ResumeStep = latest.Step
	}
	if p := r.status.Progress; p != nil && p.Step != nil {
		steps := max(*p.Step-resumeStep, 0)
		in.LostSteps = &steps
		a.LostSteps += steps
	}
	a.Interruptions++
	a.LostReplicaSeconds += in.LostReplicaSeconds
	a.Recent = append(a.Recent, in)
	if over := len(a.Recent) - batch.MaxRecentInterruptions; over > 0 {
		a.Recent = append([]v1beta1.Interruption(nil), a.Recent[over:]...)
	}
}

// runStart is when the running replicas' training last began: when the
// last of their training containers started; the job's start time when
// none reports one.
func (r *reconciler) runStart() time.Time {
	var start time.Time
	for _, p := range r.runningPods() {
		if t, ok := r.trainingStarted(p); ok && t.After(start) {
			start = t
		}
	}
	if start.IsZero() && r.status.StartTime != nil {
		start = r.status.StartTime.Time
	}
	if start.IsZero() {
		start = r.now
	}
	return start
}

var (
	jobStateSeconds = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           jobSeriesPrefix + "state_seconds_total",
		Help:           "Time jobs spent queued, starting, running or paused, by namespace, queue and state; added when a job leaves the state.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"namespace", "queue", "state"})

	jobInterruptions = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           jobSeriesPrefix + "interruptions_total",
		Help:           "Stops of running jobs (Pause, Evicted, Resize, RestartJob, Stalled), by namespace, queue and reason.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"namespace", "queue", "reason"})

	jobLostWork = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           jobSeriesPrefix + "lost_replica_seconds_total",
		Help:           "Work interruptions lost: for each, the time since the last checkpoint times the replicas that ran, by namespace and queue.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"namespace", "queue"})
)

// observeAccounting adds to the accounting metrics what a stored status
// write added to the job's accounting.
func observeAccounting(job v1beta1.TrainingJob, old, cur *v1beta1.Accounting) {
	if cur == nil {
		return
	}
	if old == nil {
		old = &v1beta1.Accounting{}
	}
	ns, queue := job.GetNamespace(), kueue.QueueName(job)
	for _, state := range v1beta1.AccountingStates {
		if d := *cur.StateSeconds(state) - *old.StateSeconds(state); d > 0 {
			jobStateSeconds.WithLabelValues(ns, queue, string(state)).Add(float64(d))
		}
	}
	added := int(cur.Interruptions - old.Interruptions)
	for i := max(len(cur.Recent)-added, 0); i < len(cur.Recent); i++ {
		jobInterruptions.WithLabelValues(ns, queue, cur.Recent[i].Reason).Inc()
	}
	if d := cur.LostReplicaSeconds - old.LostReplicaSeconds; d > 0 {
		jobLostWork.WithLabelValues(ns, queue).Add(float64(d))
	}
}
