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
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

// progressT0 is a whole second, so that truncation to the second shows.
var progressT0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// storedProgress is a stored status.progress of a report received at t.
func storedProgress(values batch.ProgressValues, t time.Time, coalesced int64) *batch.ProgressStatus {
	return &batch.ProgressStatus{
		ProgressValues:   values,
		Reporter:         "train-master-0",
		ReportTime:       &metav1.MicroTime{Time: t},
		CoalescedReports: coalesced,
	}
}

func steps(step, total int64) batch.ProgressValues {
	return batch.ProgressValues{Step: ptr.To(step), TotalSteps: ptr.To(total)}
}

func TestNextProgressPercent(t *testing.T) {
	cases := []struct {
		name   string
		values batch.ProgressValues
		want   *int32
	}{
		{"from steps, floored", steps(333, 1000), ptr.To[int32](33)},
		{"from steps, 999 of 1000 is not 100", steps(999, 1000), ptr.To[int32](99)},
		{"from steps, none done", steps(0, 1000), ptr.To[int32](0)},
		{"from steps, all done", steps(1000, 1000), ptr.To[int32](100)},
		{"from epochs", batch.ProgressValues{Epoch: ptr.To[int32](1), TotalEpochs: ptr.To[int32](3)}, ptr.To[int32](33)},
		{"from epochs, half", batch.ProgressValues{Epoch: ptr.To[int32](5), TotalEpochs: ptr.To[int32](10)}, ptr.To[int32](50)},
		{"steps win over epochs", batch.ProgressValues{
			Step: ptr.To[int64](250), TotalSteps: ptr.To[int64](1000),
			Epoch: ptr.To[int32](2), TotalEpochs: ptr.To[int32](3),
		}, ptr.To[int32](25)},
		{"a reported percent is kept over steps", batch.ProgressValues{
			Percent: ptr.To[int32](70), Step: ptr.To[int64](333), TotalSteps: ptr.To[int64](1000),
		}, ptr.To[int32](70)},
		{"a reported percent is kept over epochs", batch.ProgressValues{
			Percent: ptr.To[int32](10), Epoch: ptr.To[int32](2), TotalEpochs: ptr.To[int32](4),
		}, ptr.To[int32](10)},
		{"a step without total gives no percent", batch.ProgressValues{Step: ptr.To[int64](333)}, nil},
		{"an epoch without total gives no percent", batch.ProgressValues{Epoch: ptr.To[int32](3)}, nil},
		{"metrics alone give no percent", batch.ProgressValues{Metrics: []batch.ProgressMetric{{Name: "loss", Value: "0.5"}}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next := nextProgress(nil, pendingReport{values: tc.values, reporter: "r", received: progressT0}, 0)
			switch {
			case tc.want == nil && next.Percent != nil:
				t.Errorf("percent = %d, want none", *next.Percent)
			case tc.want != nil && next.Percent == nil:
				t.Errorf("percent = none, want %d", *tc.want)
			case tc.want != nil && *next.Percent != *tc.want:
				t.Errorf("percent = %d, want %d", *next.Percent, *tc.want)
			}
		})
	}
}

func TestNextProgressRecordsTheReport(t *testing.T) {
	received := progressT0.Add(1234567 * time.Microsecond)
	values := batch.ProgressValues{
		Step: ptr.To[int64](10), TotalSteps: ptr.To[int64](100),
		Metrics: []batch.ProgressMetric{{Name: "loss", Value: "0.25"}},
		Message: "warming up",
	}
	report := pendingReport{values: values, reporter: "train-worker-1", received: received}
	prev := storedProgress(steps(5, 100), progressT0, 7)

	next := nextProgress(prev, report, 3)

	if next.Reporter != "train-worker-1" {
		t.Errorf("reporter = %q, want train-worker-1", next.Reporter)
	}
	if next.ReportTime == nil || !next.ReportTime.Time.Equal(received) {
		t.Errorf("reportTime = %v, want %v", next.ReportTime, received)
	}
	if next.CoalescedReports != 10 {
		t.Errorf("coalescedReports = %d, want 7 stored + 3 replaced = 10", next.CoalescedReports)
	}
	if *next.Step != 10 || *next.TotalSteps != 100 || next.Message != "warming up" ||
		len(next.Metrics) != 1 || next.Metrics[0] != (batch.ProgressMetric{Name: "loss", Value: "0.25"}) {
		t.Errorf("values not taken from the report: %+v", next.ProgressValues)
	}
	// The stored status is a copy: changing the report afterwards does not
	// change it.
	report.values.Metrics[0].Value = "9"
	*report.values.Step = 99
	if next.Metrics[0].Value != "0.25" || *next.Step != 10 {
		t.Errorf("status.progress shares memory with the report: %+v", next.ProgressValues)
	}
	// Nor is the previous status changed.
	if *prev.Step != 5 || prev.CoalescedReports != 7 || prev.Percent != nil {
		t.Errorf("previous progress changed: %+v", prev)
	}

	first := nextProgress(nil, pendingReport{values: values, reporter: "r", received: received}, 4)
	if first.CoalescedReports != 4 {
		t.Errorf("first report: coalescedReports = %d, want 4", first.CoalescedReports)
	}
}

func TestNextProgressEstimatedFinish(t *testing.T) {
	at := func(d time.Duration) *time.Time { t := progressT0.Add(d); return &t }
	metricsOnly := batch.ProgressValues{Metrics: []batch.ProgressMetric{{Name: "loss", Value: "0.5"}}}
	cases := []struct {
		name     string
		prev     *batch.ProgressStatus
		values   batch.ProgressValues
		received time.Time
		want     *time.Time
	}{
		{"reported remaining seconds", nil,
			batch.ProgressValues{Step: ptr.To[int64](1), RemainingSeconds: ptr.To[int64](3600)},
			progressT0, at(time.Hour)},
		{"reported remaining seconds, rounded to the second", nil,
			batch.ProgressValues{RemainingSeconds: ptr.To[int64](90)},
			progressT0.Add(1700 * time.Millisecond), at(92 * time.Second)},
		{"reported remaining seconds win over the rate", storedProgress(steps(100, 1000), progressT0, 0),
			batch.ProgressValues{Step: ptr.To[int64](200), TotalSteps: ptr.To[int64](1000), RemainingSeconds: ptr.To[int64](5)},
			progressT0.Add(10 * time.Second), at(15 * time.Second)},
		{"reported zero remaining seconds", nil,
			batch.ProgressValues{RemainingSeconds: ptr.To[int64](0)},
			progressT0, at(0)},
		{"from the rate since the previous report", storedProgress(steps(100, 1000), progressT0, 0),
			steps(200, 1000), progressT0.Add(10 * time.Second), at(10*time.Second + 80*time.Second)},
		{"from the rate, by percent", storedProgress(batch.ProgressValues{Percent: ptr.To[int32](20)}, progressT0, 0),
			batch.ProgressValues{Percent: ptr.To[int32](60)}, progressT0.Add(40 * time.Second), at(40*time.Second + 40*time.Second)},
		{"from the rate, by epochs", storedProgress(batch.ProgressValues{Epoch: ptr.To[int32](1), TotalEpochs: ptr.To[int32](4)}, progressT0, 0),
			batch.ProgressValues{Epoch: ptr.To[int32](2), TotalEpochs: ptr.To[int32](4)}, progressT0.Add(time.Hour), at(3 * time.Hour)},
		{"from the rate, rounded to the second", storedProgress(steps(100, 1000), progressT0.Add(500*time.Millisecond), 0),
			// 10.4 s for a tenth of the work: 83.2 s left after 10.9 s, 94.1 s.
			steps(200, 1000), progressT0.Add(10*time.Second + 900*time.Millisecond), at(94 * time.Second)},
		{"first report without remaining seconds", nil, steps(200, 1000), progressT0, nil},
		{"previous report without report time", &batch.ProgressStatus{ProgressValues: steps(100, 1000)},
			steps(200, 1000), progressT0, nil},
		{"previous report with no measure", storedProgress(metricsOnly, progressT0, 0),
			steps(200, 1000), progressT0.Add(10 * time.Second), nil},
		{"no advance", storedProgress(steps(200, 1000), progressT0, 0),
			steps(200, 1000), progressT0.Add(10 * time.Second), nil},
		{"went backwards (a restart from a checkpoint)", storedProgress(steps(500, 1000), progressT0, 0),
			steps(100, 1000), progressT0.Add(10 * time.Second), nil},
		{"report time not after the previous one", storedProgress(steps(100, 1000), progressT0, 0),
			steps(200, 1000), progressT0, nil},
		{"too slow: beyond ten years", storedProgress(steps(0, 1000000000), progressT0, 0),
			steps(1, 1000000000), progressT0.Add(time.Second), nil},
		{"done by steps", nil, steps(1000, 1000), progressT0.Add(1400 * time.Millisecond), at(time.Second)},
		{"done by steps after a previous report", storedProgress(steps(900, 1000), progressT0, 0),
			steps(1000, 1000), progressT0.Add(time.Minute), at(time.Minute)},
		{"done by percent", nil, batch.ProgressValues{Percent: ptr.To[int32](100)}, progressT0, at(0)},
		{"only metrics", storedProgress(steps(100, 1000), progressT0, 0),
			metricsOnly, progressT0.Add(10 * time.Second), nil},
		{"only a message", nil, batch.ProgressValues{Message: "loading data"}, progressT0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next := nextProgress(tc.prev, pendingReport{values: tc.values, reporter: "r", received: tc.received}, 0)
			got := next.EstimatedFinishTime
			switch {
			case tc.want == nil && got != nil:
				t.Errorf("estimatedFinishTime = %v, want none", got.Time)
			case tc.want != nil && got == nil:
				t.Errorf("estimatedFinishTime = none, want %v", *tc.want)
			case tc.want != nil && !got.Time.Equal(*tc.want):
				t.Errorf("estimatedFinishTime = %v, want %v", got.Time, *tc.want)
			}
		})
	}
}

func TestProgressFraction(t *testing.T) {
	cases := []struct {
		name      string
		values    batch.ProgressValues
		want      float64
		wantKnown bool
	}{
		{"steps", steps(250, 1000), 0.25, true},
		{"percent", batch.ProgressValues{Percent: ptr.To[int32](40)}, 0.4, true},
		{"epochs", batch.ProgressValues{Epoch: ptr.To[int32](3), TotalEpochs: ptr.To[int32](4)}, 0.75, true},
		{"steps before percent", batch.ProgressValues{Percent: ptr.To[int32](90), Step: ptr.To[int64](1), TotalSteps: ptr.To[int64](2)}, 0.5, true},
		{"percent before epochs", batch.ProgressValues{Percent: ptr.To[int32](90), Epoch: ptr.To[int32](1), TotalEpochs: ptr.To[int32](2)}, 0.9, true},
		{"zero total steps falls through to percent", batch.ProgressValues{Percent: ptr.To[int32](10), Step: ptr.To[int64](0), TotalSteps: ptr.To[int64](0)}, 0.1, true},
		{"zero total epochs", batch.ProgressValues{Epoch: ptr.To[int32](0), TotalEpochs: ptr.To[int32](0)}, 0, false},
		{"step without total", batch.ProgressValues{Step: ptr.To[int64](5)}, 0, false},
		{"nothing", batch.ProgressValues{}, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, known := progressFraction(&tc.values)
			if got != tc.want || known != tc.wantKnown {
				t.Errorf("progressFraction = %v, %v; want %v, %v", got, known, tc.want, tc.wantKnown)
			}
		})
	}
}

// TestDerivedPercentIsExact: every count of every total up to 1000 gives
// the whole percent integer division gives, never one less from a float's
// rounding (29 of 100 is 29%).
func TestDerivedPercentIsExact(t *testing.T) {
	for total := int64(1); total <= 1000; total++ {
		for step := int64(0); step <= total; step++ {
			next := nextProgress(nil, pendingReport{values: steps(step, total), received: progressT0}, 0)
			if want := int32(step * 100 / total); ptr.Deref(next.Percent, -1) != want {
				t.Fatalf("step %d of %d: percent %d, want %d", step, total, ptr.Deref(next.Percent, -1), want)
			}
		}
	}
	epochs := nextProgress(nil, pendingReport{values: batch.ProgressValues{Epoch: ptr.To[int32](29), TotalEpochs: ptr.To[int32](100)}, received: progressT0}, 0)
	if ptr.Deref(epochs.Percent, -1) != 29 {
		t.Errorf("epoch 29 of 100: percent %d, want 29", ptr.Deref(epochs.Percent, -1))
	}
}

// TestReportWithoutMeasureKeepsTheLastOne: metrics or a message alone do
// not make the job's progress, or its estimate, disappear.
func TestReportWithoutMeasureKeepsTheLastOne(t *testing.T) {
	prev := storedProgress(steps(300, 1000), progressT0, 2)
	prev.Percent = ptr.To[int32](30)
	finish := metav1.NewTime(progressT0.Add(time.Minute))
	prev.EstimatedFinishTime = &finish
	next := nextProgress(prev, pendingReport{values: batch.ProgressValues{
		Metrics: []batch.ProgressMetric{{Name: "loss", Value: "0.5"}}, Message: "evaluating",
	}, reporter: "pod-0", received: progressT0.Add(5 * time.Second)}, 1)
	if ptr.Deref(next.Step, 0) != 300 || ptr.Deref(next.TotalSteps, 0) != 1000 || ptr.Deref(next.Percent, 0) != 30 ||
		next.EstimatedFinishTime == nil || !next.EstimatedFinishTime.Equal(&finish) {
		t.Errorf("after a metrics-only report: %+v, want step 300/1000, 30%% and the estimate kept", next)
	}
	if len(next.Metrics) != 1 || next.Message != "evaluating" || next.CoalescedReports != 3 || next.Reporter != "pod-0" {
		t.Errorf("after a metrics-only report: %+v, want its metrics, message and reporter, 3 coalesced", next)
	}
}

// TestProgressHistory: every stored report with metrics adds a sample, with
// the step it was at (carried over for a report of metrics alone); reports
// without metrics add none; the oldest go beyond MaxProgressHistory.
func TestProgressHistory(t *testing.T) {
	loss := func(v string) []batch.ProgressMetric { return []batch.ProgressMetric{{Name: "loss", Value: v}} }
	at := func(i int) time.Time { return progressT0.Add(time.Duration(i) * time.Second) }
	var p *batch.ProgressStatus
	p = nextProgress(p, pendingReport{values: batch.ProgressValues{Step: ptr.To[int64](1), Metrics: loss("2.0")}, received: at(0)}, 0)
	p = nextProgress(p, pendingReport{values: batch.ProgressValues{Metrics: loss("1.5")}, received: at(1)}, 0)
	p = nextProgress(p, pendingReport{values: batch.ProgressValues{Step: ptr.To[int64](3), Message: "no metrics"}, received: at(2)}, 0)
	if len(p.History) != 2 {
		t.Fatalf("history of %d samples, want 2: %+v", len(p.History), p.History)
	}
	if s := p.History[1]; *s.Step != 1 || s.Metrics[0].Value != "1.5" || !s.ReportTime.Time.Equal(at(1)) {
		t.Errorf("second sample %+v, want step 1 (carried), loss 1.5 at %s", s, at(1))
	}
	first := p.History[0]
	for i := 3; i < 3+batch.MaxProgressHistory; i++ {
		p = nextProgress(p, pendingReport{values: batch.ProgressValues{Step: ptr.To(int64(i)), Metrics: loss("1.0")}, received: at(i)}, 0)
	}
	if len(p.History) != batch.MaxProgressHistory {
		t.Fatalf("history of %d samples, want %d", len(p.History), batch.MaxProgressHistory)
	}
	if last := p.History[len(p.History)-1]; *last.Step != int64(2+batch.MaxProgressHistory) {
		t.Errorf("last sample at step %d, want the last report's", *last.Step)
	}
	if *p.History[0].Step != 3 || *first.Step != 1 {
		t.Errorf("oldest sample at step %d after the limit, want 3, the first of the last 30 (and the first sample kept its step 1, not %d)", *p.History[0].Step, *first.Step)
	}
}
