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
	"context"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

// runningJob is a stored running job with a progress report.
func runningJob() *batch.PyTorchTrainingJob {
	job := newJob("train", 2)
	job.Generation = 2
	now := metav1.NewTime(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	job.Status = batch.TrainingJobStatus{
		ObservedGeneration: 2,
		Phase:              batch.JobRunning,
		Conditions:         []metav1.Condition{{Type: batch.ConditionRunning, Status: metav1.ConditionTrue, Reason: "AllPodsRunning", LastTransitionTime: now}},
		StartTime:          &now,
		Progress: &batch.ProgressStatus{
			ProgressValues: batch.ProgressValues{Percent: ptr.To[int32](10), Step: ptr.To[int64](100), TotalSteps: ptr.To[int64](1000)},
			Reporter:       "train-master-0",
			ReportTime:     &metav1.MicroTime{Time: now.Time},
		},
	}
	return job
}

func TestStatusStrategyKeepsProgress(t *testing.T) {
	strategy := statusStrategy[*batch.PyTorchTrainingJob, batch.PyTorchTrainingJobSpec]{newJobStrategy(nil, testKind)}
	cases := []struct {
		name   string
		change func(*batch.PyTorchTrainingJob)
	}{
		{"a status write without progress", func(j *batch.PyTorchTrainingJob) { j.Status.Progress = nil }},
		{"a status write with another progress", func(j *batch.PyTorchTrainingJob) {
			j.Status.Progress = &batch.ProgressStatus{ProgressValues: batch.ProgressValues{Percent: ptr.To[int32](99)}, Reporter: "controller"}
		}},
		{"a status write with a changed progress", func(j *batch.PyTorchTrainingJob) { *j.Status.Progress.Percent = 0 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := runningJob()
			job := old.DeepCopy()
			job.Status.Phase = batch.JobPaused
			job.Status.BackoffCount = 1
			job.Spec.ReplicaSpecs[1].Replicas = ptr.To[int32](4)
			tc.change(job)
			wantProgress := old.Status.Progress.DeepCopy()

			strategy.PrepareForUpdate(context.Background(), job, old)

			if !apiequality.Semantic.DeepEqual(job.Status.Progress, wantProgress) {
				t.Errorf("status.progress = %+v, want the stored %+v", job.Status.Progress, wantProgress)
			}
			if job.Status.Phase != batch.JobPaused || job.Status.BackoffCount != 1 {
				t.Errorf("phase %q backoffCount %d, want the written Paused and 1", job.Status.Phase, job.Status.BackoffCount)
			}
			if *job.Spec.ReplicaSpecs[1].Replicas != 2 {
				t.Errorf("spec changed through status: %d workers", *job.Spec.ReplicaSpecs[1].Replicas)
			}
		})
	}

	t.Run("a job without progress keeps none", func(t *testing.T) {
		old := runningJob()
		old.Status.Progress = nil
		job := old.DeepCopy()
		job.Status.Progress = &batch.ProgressStatus{ProgressValues: batch.ProgressValues{Percent: ptr.To[int32](50)}}
		strategy.PrepareForUpdate(context.Background(), job, old)
		if job.Status.Progress != nil {
			t.Errorf("status.progress = %+v written through status, want none", job.Status.Progress)
		}
	})
}

func TestProgressStrategyTakesOnlyProgress(t *testing.T) {
	strategy := progressStrategy[*batch.PyTorchTrainingJob, batch.PyTorchTrainingJobSpec]{newJobStrategy(nil, testKind)}
	old := runningJob()
	job := old.DeepCopy()
	job.Spec.ReplicaSpecs[1].Replicas = ptr.To[int32](8)
	job.Spec.Elastic = &batch.ElasticConfig{Enabled: true}
	job.Status.Phase = batch.JobSucceeded
	job.Status.Conditions = nil
	job.Status.BackoffCount = 3
	job.Status.ObservedGeneration = 9
	newProgress := &batch.ProgressStatus{
		ProgressValues:   batch.ProgressValues{Percent: ptr.To[int32](20), Step: ptr.To[int64](200), TotalSteps: ptr.To[int64](1000)},
		Reporter:         "train-worker-1",
		CoalescedReports: 4,
	}
	job.Status.Progress = newProgress.DeepCopy()

	strategy.PrepareForUpdate(context.Background(), job, old)

	if !apiequality.Semantic.DeepEqual(job.Spec, old.Spec) {
		t.Errorf("spec changed through progress: %+v", job.Spec)
	}
	wantStatus := *old.Status.DeepCopy()
	wantStatus.Progress = newProgress
	if !apiequality.Semantic.DeepEqual(job.Status, wantStatus) {
		t.Errorf("status = %+v\nwant the stored status with the new progress: %+v", job.Status, wantStatus)
	}
	if job.Generation != 2 {
		t.Errorf("generation = %d, want 2", job.Generation)
	}
	// The stored job is left as it was.
	if *old.Status.Progress.Percent != 10 || old.Status.Phase != batch.JobRunning {
		t.Errorf("the stored job changed: %+v", old.Status)
	}
	if errs := strategy.ValidateUpdate(context.Background(), job, old); len(errs) != 0 {
		t.Errorf("valid progress update rejected: %v", errs)
	}

	// A progress out of bounds is refused at status.progress.
	bad := job.DeepCopy()
	*bad.Status.Progress.Percent = 101
	errs := strategy.ValidateUpdate(context.Background(), bad, old)
	if len(errs) != 1 || errs[0].Field != "status.progress.percent" {
		t.Errorf("errors = %v, want one at status.progress.percent", errs)
	}
}
