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
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

func TestWriteAccountingAndCheckpoint(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	status := &v1beta1.TrainingJobStatus{
		Checkpoint: &v1beta1.CheckpointStatus{
			Latest: &v1beta1.CheckpointRecord{CheckpointValues: v1beta1.CheckpointValues{Path: "/ckpt/step-20.pt", Step: ptr.To[int64](20)},
				ReportTime: metav1.NewMicroTime(now.Add(-time.Minute))},
			History: make([]v1beta1.CheckpointRecord, 3),
		},
		Accounting: &v1beta1.Accounting{
			QueuedSeconds: 30, StartingSeconds: 12, RunningSeconds: 600,
			State: v1beta1.AccountingRunning, StateSince: ptr.To(metav1.NewTime(now.Add(-90 * time.Second))),
			Interruptions: 1, LostReplicaSeconds: 4, LostSteps: 1,
			Recent: []v1beta1.Interruption{{Time: metav1.NewTime(now.Add(-5 * time.Minute)), Reason: "Pause", Replicas: 2,
				LostSeconds: 2, LostReplicaSeconds: 4, LostSteps: ptr.To[int64](1), ResumeStep: ptr.To[int64](20), CheckpointAnswered: ptr.To(true)}},
		},
	}
	var out bytes.Buffer
	w := newTabWriter(&out)
	writeCheckpoint(w, status, now)
	writeAccounting(w, status, now)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"step 20  /ckpt/step-20.pt (60s ago, 3 before it)",
		"queued 30s, starting 12s, running 11m",
		"Interruptions:", "1, lost 4s of replica time and 1 steps",
		"Pause  2 replicas lost 2s (1 steps), resumes at step 21, checkpoint written when asked",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
