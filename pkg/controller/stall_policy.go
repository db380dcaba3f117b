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
	"strings"
	"time"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// The stall watchdog (spec.runPolicy.progressDeadlineSeconds): its clock
// runs only while every replica runs, from the last of them starting or the
// last report that moved the step or epoch, whichever is later; time paused,
// queued or starting never counts. Once it runs out, the job's stallPolicy
// says what happens.

// stallStep is what the watchdog sees in one reconcile.
type stallStep string

const (
	// stallUnwatched: no progress deadline, or a debug run.
	stallUnwatched stallStep = "Unwatched"
	// stallClockStopped: not every replica runs, so the clock does not.
	stallClockStopped stallStep = "ClockStopped"
	// stallProgressing: the deadline has not passed.
	stallProgressing stallStep = "Progressing"
	// stallStalled: the deadline passed without progress.
	stallStalled stallStep = "Stalled"
)

// stallAction is what a stalled job does, by its stallPolicy.
type stallAction string

const (
	stallReport        stallAction = "Report"        // None: the condition says so, nothing more
	stallFails         stallAction = "Fail"          // Fail: the job fails
	stallRestarts      stallAction = "Restart"       // Restart: every replica starts again
	stallOutOfRestarts stallAction = "OutOfRestarts" // Restart, with no restart left: the job fails
)

// stallInput is what the watchdog decides on.
type stallInput struct {
	// deadline is progressDeadlineSeconds; nil for none.
	deadline *int64
	policy   v1beta1.StallPolicy
	debug    bool
	// allRunning: every replica's training container runs, the last of
	// them since runningSince.
	allRunning   bool
	runningSince time.Time
	progress     *v1beta1.ProgressStatus
	// backoffCount and backoffLimit are the job's restarts used and allowed.
	backoffCount, backoffLimit int32
	now                        time.Time
}

// stallDecision is what the watchdog decides.
type stallDecision struct {
	step stallStep
	// action, for a stalled job; message says what stalled.
	action  stallAction
	message string
	// comeBack is when the deadline falls, for a job still progressing.
	comeBack time.Time
}

// decideStall runs the watchdog once.
func decideStall(in stallInput) stallDecision {
	switch {
	case in.deadline == nil || in.debug:
		return stallDecision{step: stallUnwatched}
	case !in.allRunning:
		return stallDecision{step: stallClockStopped}
	}
	from := in.runningSince
	if p := in.progress; p != nil && p.AdvanceTime != nil && p.AdvanceTime.After(from) {
		from = p.AdvanceTime.Time
	}
	if due := from.Add(time.Duration(*in.deadline) * time.Second); in.now.Before(due) {
		return stallDecision{step: stallProgressing, comeBack: due}
	}
	d := stallDecision{step: stallStalled, action: stallReport, message: stallMessage(*in.deadline, in.progress)}
	switch stallPolicyOf(in.policy) {
	case v1beta1.StallPolicyFail:
		d.action = stallFails
	case v1beta1.StallPolicyRestart:
		d.action = stallRestarts
		if in.backoffCount >= in.backoffLimit {
			d.action = stallOutOfRestarts
		}
	}
	return d
}

// stallPolicyOf is the policy a stalled job follows: None unless set.
func stallPolicyOf(p v1beta1.StallPolicy) v1beta1.StallPolicy {
	if p == "" {
		return v1beta1.StallPolicyNone
	}
	return p
}

// stallMessage says that the job stalled and what it last reported.
func stallMessage(deadline int64, p *v1beta1.ProgressStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "no progress report changed the step or epoch for %ds while every replica ran", deadline)
	switch {
	case p == nil || p.ReportTime == nil:
		b.WriteString("; the job never reported progress")
	default:
		b.WriteString("; the last report")
		if p.Step != nil {
			fmt.Fprintf(&b, " was at step %d", *p.Step)
		}
		if p.Epoch != nil {
			fmt.Fprintf(&b, " (epoch %d)", *p.Epoch)
		}
		if p.Reporter != "" {
			fmt.Fprintf(&b, ", from %s", p.Reporter)
		}
		fmt.Fprintf(&b, ", at %s", p.ReportTime.UTC().Format(time.RFC3339))
	}
	return b.String()
}
