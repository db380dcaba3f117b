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
	"time"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// The accounting of a job carried out on the status copy, and its metrics;
// the rules are in accounting_policy.go.

// planAccounting closes the time of the state the job leaves, if it leaves
// one, and opens the next (accountState).
func (r *reconciler) planAccounting() {
	r.status.Accounting = accountState(r.status.Accounting, accountingState(r.status), r.now)
}

// recordInterruption counts a stop of running replicas (addInterruption).
// answered says, for a stop that asked for a checkpoint, whether one came.
func (r *reconciler) recordInterruption(reason string, replicas int32, answered *bool) {
	var latest *v1beta1.CheckpointRecord
	if c := r.status.Checkpoint; c != nil {
		latest = c.Latest
	}
	r.status.Accounting = addInterruption(r.status.Accounting, interruptionInput{
		reason:        reason,
		replicas:      replicas,
		answered:      answered,
		trainingSince: r.runStart(),
		latest:        latest,
		progress:      r.status.Progress,
		now:           r.now,
	})
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
