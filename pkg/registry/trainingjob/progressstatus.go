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

package trainingjob

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch"
)

// pendingReport is a checked report on its way to storage.
type pendingReport struct {
	values   batch.ProgressValues
	reporter string
	received time.Time
}

// final says whether the report says the job is done: its step or epoch
// reached the total, or its percent 100.
func (r *pendingReport) final() bool {
	v := &r.values
	return (v.Step != nil && v.TotalSteps != nil && *v.Step >= *v.TotalSteps) ||
		(v.Epoch != nil && v.TotalEpochs != nil && *v.Epoch >= *v.TotalEpochs) ||
		(v.Percent != nil && *v.Percent >= 100)
}

// nextProgress is the status.progress a report leads to, after the stored
// one: the report's values with the percent filled in where the report
// allows, and the estimated finish time.
func nextProgress(prev *batch.ProgressStatus, report pendingReport, replaced int64) *batch.ProgressStatus {
	next := &batch.ProgressStatus{
		Reporter:         report.reporter,
		ReportTime:       &metav1.MicroTime{Time: report.received},
		CoalescedReports: replaced,
	}
	report.values.DeepCopyInto(&next.ProgressValues)
	if prev != nil {
		next.CoalescedReports += prev.CoalescedReports
	}
	if !hasMeasure(&next.ProgressValues) && prev != nil {
		// A report of metrics or a message alone says nothing of how far
		// the job is: the last measure and its estimate stand.
		carryMeasure(prev, next)
	} else {
		done, known := progressFraction(&next.ProgressValues)
		if next.Percent == nil && known {
			percent := derivedPercent(&next.ProgressValues)
			next.Percent = &percent
		}
		if finish, ok := estimateFinish(prev, next, done, known); ok {
			next.EstimatedFinishTime = &metav1.Time{Time: finish.Round(time.Second)}
		}
	}
	next.History = nextHistory(prev, next)
	next.AdvanceTime = advanceTime(prev, next)
	return next
}

// advanceTime is when the step or epoch last moved: the new report's time
// when it changed either (a restart from a checkpoint moves them back,
// which is movement too), else the time carried from before.
func advanceTime(prev, next *batch.ProgressStatus) *metav1.MicroTime {
	var before batch.ProgressValues
	var at *metav1.MicroTime
	if prev != nil {
		before, at = prev.ProgressValues, prev.AdvanceTime
	}
	if next.Step == nil && next.Epoch == nil {
		return at
	}
	if at == nil || !equalPtr(before.Step, next.Step) || !equalPtr(before.Epoch, next.Epoch) {
		return next.ReportTime
	}
	return at
}

func equalPtr[T comparable](a, b *T) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// nextHistory is the history after a stored report: the earlier one, and
// the report's metrics if it has any, the oldest dropped beyond
// MaxProgressHistory.
func nextHistory(prev, next *batch.ProgressStatus) []batch.ProgressSample {
	var history []batch.ProgressSample
	if prev != nil {
		history = prev.History
	}
	if len(next.Metrics) == 0 {
		return history
	}
	sample := batch.ProgressSample{
		ReportTime: *next.ReportTime,
		Step:       next.Step,
		Epoch:      next.Epoch,
		Metrics:    next.Metrics,
	}
	keep := history[max(len(history)+1-batch.MaxProgressHistory, 0):]
	return append(append(make([]batch.ProgressSample, 0, len(keep)+1), keep...), sample)
}

// hasMeasure says whether a report tells how far the job is.
func hasMeasure(v *batch.ProgressValues) bool {
	return v.Percent != nil || v.Step != nil || v.Epoch != nil || v.RemainingSeconds != nil
}

func carryMeasure(prev, next *batch.ProgressStatus) {
	next.Percent, next.Step, next.TotalSteps = prev.Percent, prev.Step, prev.TotalSteps
	next.Epoch, next.TotalEpochs = prev.Epoch, prev.TotalEpochs
	next.EstimatedFinishTime = prev.EstimatedFinishTime
}

// derivedPercent is the whole percent a report's counts make, in integers
// so that 29 of 100 is 29%, not the 28.999...% of a float; the caller
// knows progressRatio found a measure.
func derivedPercent(v *batch.ProgressValues) int32 {
	done, total, _ := progressRatio(v)
	return int32(done * 100 / total)
}

// progressFraction is how much of the work is done, from 0 to 1.
func progressFraction(v *batch.ProgressValues) (float64, bool) {
	done, total, ok := progressRatio(v)
	if !ok {
		return 0, false
	}
	return float64(done) / float64(total), true
}

// progressRatio is the work done and the whole, by the finest measure a
// report has: steps, then percent, then epochs.
func progressRatio(v *batch.ProgressValues) (done, total int64, ok bool) {
	switch {
	case v.Step != nil && v.TotalSteps != nil && *v.TotalSteps > 0:
		return *v.Step, *v.TotalSteps, true
	case v.Percent != nil:
		return int64(*v.Percent), 100, true
	case v.Epoch != nil && v.TotalEpochs != nil && *v.TotalEpochs > 0:
		return int64(*v.Epoch), int64(*v.TotalEpochs), true
	}
	return 0, 0, false
}

// estimateFinish: the reporter's own estimate wins; otherwise the rate of
// progress since the previous stored report is carried forward. Without a
// previous report, or when progress did not advance (a restart from a
// checkpoint, a stalled job), there is no estimate.
func estimateFinish(prev, next *batch.ProgressStatus, done float64, known bool) (time.Time, bool) {
	at := next.ReportTime.Time
	if s := next.RemainingSeconds; s != nil {
		return at.Add(time.Duration(*s) * time.Second), true
	}
	if !known {
		return time.Time{}, false
	}
	if done >= 1 {
		return at, true
	}
	if prev == nil || prev.ReportTime == nil {
		return time.Time{}, false
	}
	before, ok := progressFraction(&prev.ProgressValues)
	elapsed := at.Sub(prev.ReportTime.Time)
	if !ok || done <= before || elapsed <= 0 {
		return time.Time{}, false
	}
	remaining := time.Duration(float64(elapsed) * (1 - done) / (done - before))
	if remaining > batch.MaxProgressRemainingSeconds*time.Second {
		return time.Time{}, false
	}
	return at.Add(remaining), true
}
