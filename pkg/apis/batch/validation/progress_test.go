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

package validation

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

// metricsOf returns n valid metrics with distinct names.
func metricsOf(n int) []batch.ProgressMetric {
	metrics := make([]batch.ProgressMetric, n)
	for i := range metrics {
		metrics[i] = batch.ProgressMetric{Name: fmt.Sprintf("m%d", i), Value: "1"}
	}
	return metrics
}

func TestValidateProgressReport(t *testing.T) {
	metric := func(name, value string) []batch.ProgressMetric {
		return []batch.ProgressMetric{{Name: name, Value: value}}
	}
	cases := []struct {
		name   string
		values batch.ProgressValues
		want   []wantErr
	}{
		{"empty report", batch.ProgressValues{}, []wantErr{required("percent")}},
		{"empty report with only totals", batch.ProgressValues{TotalSteps: ptr.To[int64](10), TotalEpochs: ptr.To[int32](2)},
			[]wantErr{required("percent")}},

		// percent
		{"percent 0", batch.ProgressValues{Percent: ptr.To[int32](0)}, nil},
		{"percent 100", batch.ProgressValues{Percent: ptr.To[int32](100)}, nil},
		{"percent -1", batch.ProgressValues{Percent: ptr.To[int32](-1)}, []wantErr{invalid("percent")}},
		{"percent 101", batch.ProgressValues{Percent: ptr.To[int32](101)}, []wantErr{invalid("percent")}},

		// step and totalSteps
		{"step alone", batch.ProgressValues{Step: ptr.To[int64](5)}, nil},
		{"step 0 of 1", batch.ProgressValues{Step: ptr.To[int64](0), TotalSteps: ptr.To[int64](1)}, nil},
		{"step equal to total", batch.ProgressValues{Step: ptr.To[int64](1000), TotalSteps: ptr.To[int64](1000)}, nil},
		{"step beyond total", batch.ProgressValues{Step: ptr.To[int64](1001), TotalSteps: ptr.To[int64](1000)},
			[]wantErr{invalid("step")}},
		{"negative step", batch.ProgressValues{Step: ptr.To[int64](-1)}, []wantErr{invalid("step")}},
		{"totalSteps 0", batch.ProgressValues{Step: ptr.To[int64](0), TotalSteps: ptr.To[int64](0)},
			[]wantErr{invalid("totalSteps")}},
		{"negative totalSteps", batch.ProgressValues{Step: ptr.To[int64](0), TotalSteps: ptr.To[int64](-5)},
			[]wantErr{invalid("totalSteps")}},
		{"totalSteps without step", batch.ProgressValues{Percent: ptr.To[int32](5), TotalSteps: ptr.To[int64](10)},
			[]wantErr{required("step")}},

		// epoch and totalEpochs
		{"epoch alone", batch.ProgressValues{Epoch: ptr.To[int32](2)}, nil},
		{"epoch equal to total", batch.ProgressValues{Epoch: ptr.To[int32](3), TotalEpochs: ptr.To[int32](3)}, nil},
		{"epoch beyond total", batch.ProgressValues{Epoch: ptr.To[int32](4), TotalEpochs: ptr.To[int32](3)},
			[]wantErr{invalid("epoch")}},
		{"negative epoch", batch.ProgressValues{Epoch: ptr.To[int32](-1)}, []wantErr{invalid("epoch")}},
		{"totalEpochs 0", batch.ProgressValues{Epoch: ptr.To[int32](0), TotalEpochs: ptr.To[int32](0)},
			[]wantErr{invalid("totalEpochs")}},
		{"totalEpochs without epoch", batch.ProgressValues{Percent: ptr.To[int32](5), TotalEpochs: ptr.To[int32](3)},
			[]wantErr{required("epoch")}},

		// remainingSeconds
		{"remainingSeconds 0", batch.ProgressValues{RemainingSeconds: ptr.To[int64](0)}, nil},
		{"remainingSeconds ten years", batch.ProgressValues{RemainingSeconds: ptr.To[int64](batch.MaxProgressRemainingSeconds)}, nil},
		{"remainingSeconds negative", batch.ProgressValues{RemainingSeconds: ptr.To[int64](-1)},
			[]wantErr{invalid("remainingSeconds")}},
		{"remainingSeconds beyond ten years", batch.ProgressValues{RemainingSeconds: ptr.To[int64](batch.MaxProgressRemainingSeconds + 1)},
			[]wantErr{invalid("remainingSeconds")}},

		// message
		{"message of 256 bytes", batch.ProgressValues{Message: strings.Repeat("a", 256)}, nil},
		{"message of 257 bytes", batch.ProgressValues{Message: strings.Repeat("a", 257)}, []wantErr{tooLong("message")}},
		{"message of 129 two-byte runes", batch.ProgressValues{Message: strings.Repeat("é", 129)}, []wantErr{tooLong("message")}},

		// metrics: count and names
		{"8 metrics", batch.ProgressValues{Metrics: metricsOf(8)}, nil},
		{"9 metrics", batch.ProgressValues{Metrics: metricsOf(9)}, []wantErr{tooMany("metrics")}},
		{"metric names with every allowed character", batch.ProgressValues{Metrics: metric("val/loss_top-1.avg", "1")}, nil},
		{"metric name of 63 characters", batch.ProgressValues{Metrics: metric("a"+strings.Repeat("b", 62), "1")}, nil},
		{"metric name empty", batch.ProgressValues{Metrics: metric("", "1")}, []wantErr{required("metrics[0].name")}},
		{"metric name starting with a digit", batch.ProgressValues{Metrics: metric("1loss", "1")}, []wantErr{invalid("metrics[0].name")}},
		{"metric name starting with '_'", batch.ProgressValues{Metrics: metric("_loss", "1")}, []wantErr{invalid("metrics[0].name")}},
		{"metric name with a space", batch.ProgressValues{Metrics: metric("val loss", "1")}, []wantErr{invalid("metrics[0].name")}},
		{"metric name of 64 characters", batch.ProgressValues{Metrics: metric("a"+strings.Repeat("b", 63), "1")},
			[]wantErr{tooLong("metrics[0].name")}},
		{"second metric name empty", batch.ProgressValues{Metrics: []batch.ProgressMetric{{Name: "loss", Value: "1"}, {Name: "", Value: "2"}}},
			[]wantErr{required("metrics[1].name")}},
		{"duplicate metric name", batch.ProgressValues{Metrics: []batch.ProgressMetric{
			{Name: "loss", Value: "1"}, {Name: "acc", Value: "0.5"}, {Name: "loss", Value: "2"}}},
			[]wantErr{duplicate("metrics[2].name")}},

		// metrics: values
		{"metric value 0.25", batch.ProgressValues{Metrics: metric("loss", "0.25")}, nil},
		{"metric value -3", batch.ProgressValues{Metrics: metric("loss", "-3")}, nil},
		{"metric value 1.5e3", batch.ProgressValues{Metrics: metric("loss", "1.5e3")}, nil},
		{"metric value of 32 characters", batch.ProgressValues{Metrics: metric("loss", "0."+strings.Repeat("1", 30))}, nil},
		{"metric value abc", batch.ProgressValues{Metrics: metric("loss", "abc")}, []wantErr{invalid("metrics[0].value")}},
		{"metric value empty", batch.ProgressValues{Metrics: metric("loss", "")}, []wantErr{invalid("metrics[0].value")}},
		{"metric value NaN", batch.ProgressValues{Metrics: metric("loss", "NaN")}, []wantErr{invalid("metrics[0].value")}},
		{"metric value Inf", batch.ProgressValues{Metrics: metric("loss", "Inf")}, []wantErr{invalid("metrics[0].value")}},
		{"metric value -Inf", batch.ProgressValues{Metrics: metric("loss", "-Inf")}, []wantErr{invalid("metrics[0].value")}},
		{"metric value 1e400", batch.ProgressValues{Metrics: metric("loss", "1e400")}, []wantErr{invalid("metrics[0].value")}},
		{"metric value of 33 characters", batch.ProgressValues{Metrics: metric("loss", "0."+strings.Repeat("1", 31))},
			[]wantErr{tooLong("metrics[0].value")}},
		{"bad name and bad value", batch.ProgressValues{Metrics: metric("9", "x")},
			[]wantErr{invalid("metrics[0].name"), invalid("metrics[0].value")}},

		// several errors at once
		{"every bound broken", batch.ProgressValues{
			Percent:          ptr.To[int32](200),
			Step:             ptr.To[int64](11),
			TotalSteps:       ptr.To[int64](10),
			TotalEpochs:      ptr.To[int32](0),
			RemainingSeconds: ptr.To[int64](-3),
			Message:          strings.Repeat("x", 300),
		}, []wantErr{invalid("percent"), invalid("step"), invalid("totalEpochs"), invalid("remainingSeconds"), tooLong("message")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			report := &batch.ProgressReport{ProgressValues: tc.values}
			expectErrors(t, ValidateProgressReport(report), tc.want...)
		})
	}
}

// TestProgressValuesPathPrefix checks that the errors of a status's progress
// are reported under the path they are given.
func TestProgressValuesPathPrefix(t *testing.T) {
	values := batch.ProgressValues{
		Percent: ptr.To[int32](101),
		Metrics: []batch.ProgressMetric{{Name: "loss", Value: "1"}, {Name: "loss", Value: "NaN"}},
	}
	got := validateProgressValues(&values, statusPath.Child("progress"))
	expectErrors(t, got,
		invalid("status.progress.percent"), duplicate("status.progress.metrics[1].name"), invalid("status.progress.metrics[1].value"))
}

func TestStatusUpdateProgress(t *testing.T) {
	withProgress := func(p *batch.ProgressStatus) *batch.PyTorchTrainingJob {
		job := ptJob()
		job.Status.Phase = batch.JobRunning
		job.Status.Progress = p
		return job
	}
	old := withProgress(nil)
	cases := []struct {
		name     string
		progress *batch.ProgressStatus
		want     []wantErr
	}{
		{"no progress", nil, nil},
		{"valid progress", &batch.ProgressStatus{
			ProgressValues: batch.ProgressValues{
				Percent: ptr.To[int32](33), Step: ptr.To[int64](333), TotalSteps: ptr.To[int64](1000),
				Metrics: []batch.ProgressMetric{{Name: "loss", Value: "0.25"}},
			},
			Reporter:         "train-master-0",
			CoalescedReports: 4,
		}, nil},
		// A status may hold an empty progress: only a report must carry something.
		{"empty progress", &batch.ProgressStatus{}, nil},
		{"percent out of range", &batch.ProgressStatus{ProgressValues: batch.ProgressValues{Percent: ptr.To[int32](101)}},
			[]wantErr{invalid("status.progress.percent")}},
		{"negative percent", &batch.ProgressStatus{ProgressValues: batch.ProgressValues{Percent: ptr.To[int32](-1)}},
			[]wantErr{invalid("status.progress.percent")}},
		{"step beyond total", &batch.ProgressStatus{ProgressValues: batch.ProgressValues{Step: ptr.To[int64](2), TotalSteps: ptr.To[int64](1)}},
			[]wantErr{invalid("status.progress.step")}},
		{"bad metric value", &batch.ProgressStatus{ProgressValues: batch.ProgressValues{Metrics: []batch.ProgressMetric{{Name: "loss", Value: "Inf"}}}},
			[]wantErr{invalid("status.progress.metrics[0].value")}},
		{"negative coalesced reports", &batch.ProgressStatus{CoalescedReports: -1},
			[]wantErr{invalid("status.progress.coalescedReports")}},
		{"a history of the limit", &batch.ProgressStatus{History: history(batch.MaxProgressHistory)}, nil},
		{"a history too long", &batch.ProgressStatus{History: history(batch.MaxProgressHistory + 1)},
			[]wantErr{tooMany("status.progress.history")}},
		{"a bad metric in the history", &batch.ProgressStatus{History: []batch.ProgressSample{
			{Metrics: []batch.ProgressMetric{{Name: "loss", Value: "0.5"}}},
			{Metrics: []batch.ProgressMetric{{Name: "loss", Value: "NaN"}}},
		}}, []wantErr{invalid("status.progress.history[1].metrics[0].value")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidateTrainingJobStatusUpdate(withProgress(tc.progress), old), tc.want...)
		})
	}
}

// history is n samples of a loss.
func history(n int) []batch.ProgressSample {
	out := make([]batch.ProgressSample, n)
	for i := range out {
		out[i].Metrics = []batch.ProgressMetric{{Name: "loss", Value: "0.5"}}
	}
	return out
}
