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

package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// progressJob is a running PyTorch job as the informer holds it, with a
// progress report of the given step.
func progressJob(step int64) *v1beta1.PyTorchTrainingJob {
	reported := metav1.NewMicroTime(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(step) * time.Second))
	return &v1beta1.PyTorchTrainingJob{
		ObjectMeta: metav1.ObjectMeta{
			Name: "train", Namespace: "ns", UID: "uid", Generation: 1, ResourceVersion: "10",
			Labels: map[string]string{"team": "a"},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "training-controller", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"},
			},
		},
		Spec: v1beta1.PyTorchTrainingJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{
			ReplicaSpecs: []v1beta1.ReplicaSpec{{Type: "master", Replicas: ptr.To[int32](1)}},
		}},
		Status: v1beta1.TrainingJobStatus{
			ObservedGeneration: 1,
			Phase:              v1beta1.JobRunning,
			Progress: &v1beta1.ProgressStatus{
				ProgressValues: v1beta1.ProgressValues{Step: ptr.To(step), TotalSteps: ptr.To[int64](1000)},
				Reporter:       "train-master-0",
				ReportTime:     &reported,
			},
		},
	}
}

func TestOnlyProgressChanged(t *testing.T) {
	// reported is what a progress write makes of a job: a new report, a new
	// resourceVersion and the progress writer's managed fields.
	reported := func(j *v1beta1.PyTorchTrainingJob) {
		*j.Status.Progress.Step = 200
		j.ResourceVersion = "11"
		j.ManagedFields = append(j.ManagedFields, metav1.ManagedFieldsEntry{
			Manager: "python", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "progress",
		})
	}
	cases := []struct {
		name   string
		old    any
		change func(*v1beta1.PyTorchTrainingJob)
		cur    any // when set, used instead of a changed copy of old
		want   bool
	}{
		{name: "progress alone", old: progressJob(100), change: reported, want: true},
		{name: "the first progress", old: func() any { j := progressJob(100); j.Status.Progress = nil; return j }(),
			change: func(j *v1beta1.PyTorchTrainingJob) {
				j.Status.Progress = progressJob(1).Status.Progress
				j.ResourceVersion = "11"
			}, want: true},
		{name: "progress of a TensorFlow job", old: &v1beta1.TensorFlowTrainingJob{
			ObjectMeta: metav1.ObjectMeta{Name: "tf", ResourceVersion: "1"},
			Status:     v1beta1.TrainingJobStatus{Progress: &v1beta1.ProgressStatus{Reporter: "a"}},
		}, cur: &v1beta1.TensorFlowTrainingJob{
			ObjectMeta: metav1.ObjectMeta{Name: "tf", ResourceVersion: "2"},
			Status:     v1beta1.TrainingJobStatus{Progress: &v1beta1.ProgressStatus{Reporter: "b"}},
		}, want: true},
		{name: "progress and phase", old: progressJob(100), change: func(j *v1beta1.PyTorchTrainingJob) {
			reported(j)
			j.Status.Phase = v1beta1.JobSucceeded
		}},
		{name: "progress and spec", old: progressJob(100), change: func(j *v1beta1.PyTorchTrainingJob) {
			reported(j)
			j.Spec.ReplicaSpecs[0].Replicas = ptr.To[int32](2)
			j.Generation = 2
		}},
		{name: "progress and a label", old: progressJob(100), change: func(j *v1beta1.PyTorchTrainingJob) {
			reported(j)
			j.Labels["team"] = "b"
		}},
		{name: "progress and deletion", old: progressJob(100), change: func(j *v1beta1.PyTorchTrainingJob) {
			reported(j)
			j.DeletionTimestamp = ptr.To(metav1.Now())
		}},
		{name: "progress removed with the rest of the status", old: progressJob(100), change: func(j *v1beta1.PyTorchTrainingJob) {
			j.Status = v1beta1.TrainingJobStatus{}
		}},
		{name: "a phase change alone", old: progressJob(100), change: func(j *v1beta1.PyTorchTrainingJob) {
			j.Status.Phase = v1beta1.JobPaused
			j.ResourceVersion = "11"
		}},
		{name: "nothing (a resync)", old: progressJob(100), change: func(*v1beta1.PyTorchTrainingJob) {}},
		{name: "only the resourceVersion", old: progressJob(100), change: func(j *v1beta1.PyTorchTrainingJob) { j.ResourceVersion = "11" }},
		{name: "not a job", old: &corev1.Pod{}, cur: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "2"}}},
		{name: "a job and not a job", old: progressJob(100), cur: &corev1.Pod{}},
		{name: "not a job and a job", old: &corev1.Pod{}, cur: progressJob(200)},
		{name: "nil", old: nil, cur: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cur := tc.cur
			if cur == nil && tc.change != nil {
				job := tc.old.(*v1beta1.PyTorchTrainingJob).DeepCopy()
				tc.change(job)
				cur = job
			}
			if got := onlyProgressChanged(tc.old, cur); got != tc.want {
				t.Errorf("onlyProgressChanged = %v, want %v", got, tc.want)
			}
		})
	}

	t.Run("the same object", func(t *testing.T) {
		job := progressJob(100)
		if onlyProgressChanged(job, job) {
			t.Errorf("onlyProgressChanged(job, job) = true, want false")
		}
	})
	t.Run("the objects are left as they were", func(t *testing.T) {
		old, cur := progressJob(100), progressJob(200)
		cur.ResourceVersion = "11"
		if !onlyProgressChanged(old, cur) {
			t.Fatalf("onlyProgressChanged = false, want true")
		}
		if old.Status.Progress == nil || cur.Status.Progress == nil || cur.ResourceVersion != "11" || len(old.ManagedFields) != 1 {
			t.Errorf("onlyProgressChanged changed the informer's objects: %+v, %+v", old.ObjectMeta, cur.ObjectMeta)
		}
	})
}
