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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

func TestStepMayFollow(t *testing.T) {
	reported := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	checkpoint := &batch.CheckpointStatus{Latest: &batch.CheckpointRecord{
		CheckpointValues: batch.CheckpointValues{Path: "/ckpt/step-20.pt", Step: ptr.To[int64](20)},
		ReportTime:       metav1.NewMicroTime(reported),
	}}
	before, after := reported.Add(-time.Minute), reported.Add(time.Minute)
	attempt := func(start time.Time, ended bool) []batch.Attempt {
		a := batch.Attempt{Number: 2, StartTime: metav1.NewTime(start)}
		if ended {
			a.EndTime = ptr.To(metav1.NewTime(start.Add(time.Second)))
		}
		return []batch.Attempt{{Number: 1, StartTime: metav1.NewTime(before.Add(-time.Hour))}, a}
	}
	cases := []struct {
		name       string
		status     batch.TrainingJobStatus
		step       *int64
		podCreated *time.Time
		ok         bool
	}{
		{"the first checkpoint", batch.TrainingJobStatus{}, ptr.To[int64](5), nil, true},
		{"a later step", batch.TrainingJobStatus{Checkpoint: checkpoint}, ptr.To[int64](30), &before, true},
		{"the same step again", batch.TrainingJobStatus{Checkpoint: checkpoint}, ptr.To[int64](20), &before, true},
		{"no step", batch.TrainingJobStatus{Checkpoint: checkpoint}, nil, &before, true},
		{"back, from a pod that predates the latest", batch.TrainingJobStatus{Checkpoint: checkpoint}, ptr.To[int64](10), &before, false},
		{"back, from a user", batch.TrainingJobStatus{Checkpoint: checkpoint}, ptr.To[int64](10), nil, false},
		{"back, from a pod of a restarted job", batch.TrainingJobStatus{Checkpoint: checkpoint}, ptr.To[int64](10), &after, true},
		{"back, from a pod restarted in place: an attempt begun since", batch.TrainingJobStatus{Checkpoint: checkpoint,
			Attempts: attempt(after, false)}, ptr.To[int64](10), &before, true},
		{"back, from a pod whose attempt began before the latest", batch.TrainingJobStatus{Checkpoint: checkpoint,
			Attempts: attempt(before, false)}, ptr.To[int64](10), &before, false},
		{"back, after an attempt that has ended", batch.TrainingJobStatus{Checkpoint: checkpoint,
			Attempts: attempt(after, true)}, ptr.To[int64](10), &before, false},
		{"back, from a user, after an attempt begun since", batch.TrainingJobStatus{Checkpoint: checkpoint,
			Attempts: attempt(after, false)}, ptr.To[int64](10), nil, false},
	}
	for _, tc := range cases {
		record := &batch.CheckpointRecord{CheckpointValues: batch.CheckpointValues{Path: "/ckpt/x", Step: tc.step}}
		err := stepMayFollow(&tc.status, record, tc.podCreated, "train")
		if (err == nil) != tc.ok || (err != nil && !apierrors.IsInvalid(err)) {
			t.Errorf("%s: %v, want ok=%v (or 422)", tc.name, err, tc.ok)
		}
	}
}

func TestRecordCheckpointKeepsBoundedHistory(t *testing.T) {
	var status batch.CheckpointStatus
	for step := int64(1); step <= batch.MaxCheckpointHistory+5; step++ {
		batch.RecordCheckpoint(&status, batch.CheckpointRecord{CheckpointValues: batch.CheckpointValues{Path: "p", Step: ptr.To(step)}})
	}
	if got := *status.Latest.Step; got != batch.MaxCheckpointHistory+5 {
		t.Errorf("latest step %d", got)
	}
	if len(status.History) != batch.MaxCheckpointHistory || *status.History[0].Step != 5 {
		t.Errorf("history of %d starting at %d, want %d starting at 5", len(status.History), *status.History[0].Step, batch.MaxCheckpointHistory)
	}
}
