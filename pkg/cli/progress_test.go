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
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

func TestStatusShowsProgress(t *testing.T) {
	job := runningPyTorchJob()
	job.Status.Progress = &v1beta1.ProgressStatus{
		ProgressValues: v1beta1.ProgressValues{
			Percent: ptr.To[int32](42), Step: ptr.To[int64](420), TotalSteps: ptr.To[int64](1000),
			Epoch: ptr.To[int32](2), TotalEpochs: ptr.To[int32](5),
			Metrics: []v1beta1.ProgressMetric{{Name: "loss", Value: "0.25"}, {Name: "accuracy", Value: "0.91"}},
			Message: "warming up",
		},
		EstimatedFinishTime: ptr.To(ago(-200 * time.Second)),
		Reporter:            "resnet-master-0",
		ReportTime:          &metav1.MicroTime{Time: testNow.Add(-5 * time.Second)},
		CoalescedReports:    7,
	}
	out := newFixture(t, job).mustRun("status", "resnet")
	eta := testNow.Add(200 * time.Second).UTC().Format(time.RFC3339)
	want := `Backoff:     2/5
Progress:    [############------------------]  42%  step 420/1000  epoch 2/5
ETA:         3m20s (` + eta + `)
Metrics:     loss=0.25  accuracy=0.91
Message:     warming up
Reported:    5s ago by resnet-master-0 (7 earlier reports replaced before they were stored)
Conditions:
`
	if !strings.Contains(out, want) {
		t.Errorf("output:\n%s\nwant it to contain:\n%s", out, want)
	}

	// A finished job keeps its last report but has nothing left to wait for.
	job.Status.Phase = v1beta1.JobSucceeded
	job.Status.CompletionTime = ptr.To(ago(time.Second))
	out = newFixture(t, job).mustRun("status", "resnet")
	if strings.Contains(out, "ETA:") || !strings.Contains(out, "Progress:    [") {
		t.Errorf("finished job: want the progress without an ETA:\n%s", out)
	}
}

// TestStatusDrawsTheLoss: a history of reports with a loss and an
// accuracy draws the loss; non-numeric values are left out.
func TestStatusDrawsTheLoss(t *testing.T) {
	job := runningPyTorchJob()
	var history []v1beta1.ProgressSample
	for i, loss := range []string{"2.0", "1.6", "not-a-number", "1.2", "0.9", "0.8", "0.5"} {
		history = append(history, v1beta1.ProgressSample{
			ReportTime: metav1.MicroTime{Time: testNow.Add(time.Duration(i-10) * time.Second)},
			Step:       ptr.To(int64(100 * (i + 1))),
			Metrics:    []v1beta1.ProgressMetric{{Name: "accuracy", Value: "0.5"}, {Name: "train_loss", Value: loss}},
		})
	}
	job.Status.Progress = &v1beta1.ProgressStatus{
		ProgressValues: v1beta1.ProgressValues{Step: ptr.To[int64](700), Metrics: history[len(history)-1].Metrics},
		ReportTime:     &metav1.MicroTime{Time: testNow.Add(-4 * time.Second)},
		History:        history,
	}
	out := newFixture(t, job).mustRun("status", "resnet")
	want := `Chart:       train_loss, last 6 reports, steps 100 to 700
    2 |*
      | *
      |
      |  *
      |   **
  0.5 |     *
`
	if !strings.Contains(out, want) {
		t.Errorf("output:\n%s\nwant it to contain:\n%s", out, want)
	}
	// One value is no trend.
	job.Status.Progress.History = history[:1]
	if out := newFixture(t, job).mustRun("status", "resnet"); strings.Contains(out, "Chart:") {
		t.Errorf("a chart of one value:\n%s", out)
	}
}

func TestStatusWithoutProgress(t *testing.T) {
	out := newFixture(t, runningPyTorchJob()).mustRun("status", "resnet")
	for _, line := range []string{"Progress:", "ETA:", "Metrics:", "Reported:"} {
		if strings.Contains(out, line) {
			t.Errorf("a job that never reported shows %q:\n%s", line, out)
		}
	}
}

func TestProgressBar(t *testing.T) {
	for percent, want := range map[int32]string{
		0:   "[" + strings.Repeat("-", 30) + "]",
		50:  "[" + strings.Repeat("#", 15) + strings.Repeat("-", 15) + "]",
		100: "[" + strings.Repeat("#", 30) + "]",
		-5:  "[" + strings.Repeat("-", 30) + "]",
		120: "[" + strings.Repeat("#", 30) + "]",
	} {
		if got := progressBar(percent); got != want {
			t.Errorf("progressBar(%d) = %s, want %s", percent, got, want)
		}
	}
}
