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

package cli

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// progressBarWidth is the number of cells of the progress bar.
const progressBarWidth = 30

// writeProgress adds the job's last progress report to the job's header:
// a bar, the counts, the time left, the metrics and who reported when.
// Nothing is written for a job that never reported.
func writeProgress(w io.Writer, status *v1beta1.TrainingJobStatus, now time.Time) {
	p := status.Progress
	if p == nil {
		return
	}
	line := []string{}
	if p.Percent != nil {
		line = append(line, progressBar(*p.Percent), fmt.Sprintf("%d%%", *p.Percent))
	}
	if p.Step != nil {
		line = append(line, "step "+count(*p.Step, p.TotalSteps))
	}
	if p.Epoch != nil {
		var total *int64
		if p.TotalEpochs != nil {
			t := int64(*p.TotalEpochs)
			total = &t
		}
		line = append(line, "epoch "+count(int64(*p.Epoch), total))
	}
	if len(line) > 0 {
		fmt.Fprintf(w, "Progress:\t%s\n", strings.Join(line, "  "))
	}
	if eta := p.EstimatedFinishTime; eta != nil && !status.Phase.IsFinished() {
		left := max(eta.Sub(now), 0)
		fmt.Fprintf(w, "ETA:\t%s (%s)\n", duration.HumanDuration(left), eta.UTC().Format(time.RFC3339))
	}
	if len(p.Metrics) > 0 {
		metrics := make([]string, 0, len(p.Metrics))
		for _, m := range p.Metrics {
			metrics = append(metrics, m.Name+"="+m.Value)
		}
		fmt.Fprintf(w, "Metrics:\t%s\n", strings.Join(metrics, "  "))
	}
	if p.Message != "" {
		fmt.Fprintf(w, "Message:\t%s\n", p.Message)
	}
	reported := "Reported:\t"
	if p.ReportTime != nil {
		reported += age(p.ReportTime.Time, now) + " ago"
	}
	if p.Reporter != "" {
		reported += " by " + p.Reporter
	}
	if p.CoalescedReports > 0 {
		reported += fmt.Sprintf(" (%d earlier reports replaced before they were stored)", p.CoalescedReports)
	}
	fmt.Fprintln(w, reported)
	writeMetricChart(w, p.History)
}

// writeMetricChart draws the recent values of one metric of the history:
// the loss if the job reports one, else the first metric it reported last.
// It draws nothing with fewer than two numeric values.
func writeMetricChart(w io.Writer, history []v1beta1.ProgressSample) {
	name := chartMetric(history)
	if name == "" {
		return
	}
	var values []float64
	var firstStep, lastStep *int64
	for _, s := range history {
		for _, m := range s.Metrics {
			if m.Name != name {
				continue
			}
			v, err := strconv.ParseFloat(m.Value, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			values = append(values, v)
			if firstStep == nil {
				firstStep = s.Step
			}
			lastStep = s.Step
		}
	}
	rows := metricChart(values, chartHeight)
	if rows == nil {
		return
	}
	title := fmt.Sprintf("%s, last %d reports", name, len(values))
	if firstStep != nil && lastStep != nil {
		title += fmt.Sprintf(", steps %d to %d", *firstStep, *lastStep)
	}
	fmt.Fprintf(w, "Chart:\t%s\n", title)
	for _, row := range rows {
		fmt.Fprintln(w, "  "+row)
	}
}

// chartMetric is the metric to draw: one named loss, else one whose name
// has "loss" in it, else the first of the last sample.
func chartMetric(history []v1beta1.ProgressSample) string {
	if len(history) == 0 {
		return ""
	}
	last := history[len(history)-1].Metrics
	for _, m := range last {
		if strings.EqualFold(m.Name, "loss") {
			return m.Name
		}
	}
	for _, m := range last {
		if strings.Contains(strings.ToLower(m.Name), "loss") {
			return m.Name
		}
	}
	if len(last) > 0 {
		return last[0].Name
	}
	return ""
}

// progressBar draws percent as a bar of progressBarWidth cells.
func progressBar(percent int32) string {
	done := int(min(max(percent, 0), 100)) * progressBarWidth / 100
	return "[" + strings.Repeat("#", done) + strings.Repeat("-", progressBarWidth-done) + "]"
}

func count(done int64, total *int64) string {
	if total == nil {
		return fmt.Sprint(done)
	}
	return fmt.Sprintf("%d/%d", done, *total)
}
