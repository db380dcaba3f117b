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

package dashboard

import (
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

func TestSummarize(t *testing.T) {
	eta := metav1.NewTime(time.Date(2026, 11, 28, 16, 0, 0, 0, time.UTC))
	tests := map[string]struct {
		job  func(*v1beta1.PyTorchTrainingJob)
		want func(*jobSummary)
	}{
		"the reported percentage": {
			job: func(j *v1beta1.PyTorchTrainingJob) {
				j.Status.Progress = &v1beta1.ProgressStatus{ProgressValues: v1beta1.ProgressValues{Percent: ptr.To[int32](40), Step: ptr.To[int64](10), TotalSteps: ptr.To[int64](100)}}
			},
			want: func(s *jobSummary) {
				s.Percent, s.Step, s.TotalSteps = ptr.To[int32](40), ptr.To[int64](10), ptr.To[int64](100)
			},
		},
		"the percentage from steps when none is reported": {
			job: func(j *v1beta1.PyTorchTrainingJob) {
				j.Status.Progress = &v1beta1.ProgressStatus{ProgressValues: v1beta1.ProgressValues{Step: ptr.To[int64](250), TotalSteps: ptr.To[int64](1000)}}
			},
			want: func(s *jobSummary) {
				s.Percent, s.Step, s.TotalSteps = ptr.To[int32](25), ptr.To[int64](250), ptr.To[int64](1000)
			},
		},
		"an ETA while running": {
			job: func(j *v1beta1.PyTorchTrainingJob) {
				j.Status.Phase = v1beta1.JobRunning
				j.Status.Progress = &v1beta1.ProgressStatus{EstimatedFinishTime: &eta}
			},
			want: func(s *jobSummary) { s.Phase, s.EstimatedFinishTime = v1beta1.JobRunning, &eta },
		},
		"no ETA once finished": {
			job: func(j *v1beta1.PyTorchTrainingJob) {
				j.Status.Phase = v1beta1.JobSucceeded
				j.Status.Progress = &v1beta1.ProgressStatus{EstimatedFinishTime: &eta}
			},
			want: func(s *jobSummary) { s.Phase = v1beta1.JobSucceeded },
		},
		"Kueue's queue label over the scheduler's queue": {
			job: func(j *v1beta1.PyTorchTrainingJob) {
				j.Labels = map[string]string{batch.QueueLabel: "team-queue"}
				j.Spec.Scheduler = &v1beta1.SchedulePolicy{T9kScheduler: &v1beta1.T9kScheduler{Queue: "t9k-queue"}}
			},
			want: func(s *jobSummary) {
				s.Labels = map[string]string{batch.QueueLabel: "team-queue"}
				s.Queue = "team-queue"
			},
		},
		"pause asked for, restarts and lost work": {
			job: func(j *v1beta1.PyTorchTrainingJob) {
				j.Spec.RunMode = &v1beta1.RunMode{Pause: &v1beta1.PauseMode{Enabled: true}}
				j.Status.BackoffCount = 2
				j.Status.Accounting = &v1beta1.Accounting{Interruptions: 3, LostSteps: 120, LostReplicaSeconds: 600}
			},
			want: func(s *jobSummary) {
				s.Paused, s.Restarts = true, 2
				s.Interruptions, s.LostSteps, s.LostReplicaSeconds = 3, 120, 600
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			job := newPyTorchJob("team", "mnist")
			tc.job(job)
			want := jobSummary{Kind: "PyTorchTrainingJob", Resource: v1beta1.PyTorchTrainingJobResource, Namespace: "team", Name: "mnist"}
			tc.want(&want)
			kind, _ := kindByResource(v1beta1.PyTorchTrainingJobResource)
			if got := summarize(kind, job); !apiequality.Semantic.DeepEqual(got, want) {
				t.Errorf("summarize:\n got %+v\nwant %+v", got, want)
			}
			// What a stream of the list keeps of the job: the row, and the
			// job's key.
			kept := keepListed(kind, job).(*listedJob)
			if !apiequality.Semantic.DeepEqual(kept.row, want) || kept.Name != "mnist" || kept.Namespace != "team" {
				t.Errorf("kept %+v, want the row %+v of team/mnist", kept, want)
			}
		})
	}
}
