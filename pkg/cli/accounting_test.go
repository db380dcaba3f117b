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

// TestWriteAttempts: the attempts table shows each attempt's end, steps and
// checkpoints, and the log tail of a replica that failed, whose pod is gone.
func TestWriteAttempts(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) metav1.Time { return metav1.NewTime(now.Add(-ago)) }
	status := &v1beta1.TrainingJobStatus{
		AttemptCount: 23,
		Attempts: []v1beta1.Attempt{
			{Number: 22, StartTime: at(10 * time.Minute), EndTime: ptr.To(at(7 * time.Minute)), Reason: "RestartJob", Steps: ptr.To[int64](12),
				LastCheckpoint: &v1beta1.AttemptCheckpoint{Path: "/ckpt/step-10.pt", Step: ptr.To[int64](10)}, FailedReplicaCount: 2,
				FailedReplicas: []v1beta1.FailedReplica{{Name: "j-worker-1", Node: "real-node2", ExitCode: ptr.To[int32](3), Reason: "Error",
					Logs: "step 11\nrank=1 exiting with 3\n"}}},
			{Number: 23, StartTime: at(6 * time.Minute), ResumedFrom: &v1beta1.AttemptCheckpoint{Path: "/ckpt/step-10.pt", Step: ptr.To[int64](10)}},
		},
	}
	var out bytes.Buffer
	w := newTabWriter(&out)
	writeAttempts(w, status, now)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"Attempts: 23 (the last 2)",
		"22   10m ago   3m    RestartJob   12      -              step 10           j-worker-1, 1 more",
		"23   6m ago    6m    (running)    -       step 10        -                 -",
		"Attempt 22, j-worker-1 on real-node2: Error (exit code 3)",
		"    | rank=1 exiting with 3",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
