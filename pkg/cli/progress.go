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
