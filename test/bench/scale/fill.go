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

package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/bench/internal/benchkit"
)

// fillResult is how storing the history went.
type fillResult struct {
	jobs, finished int
	creates        time.Duration
	statuses       time.Duration
}

// jobName names the i-th job; the running ones come last.
func jobName(i int) string { return fmt.Sprintf("job-%06d", i) }

// fill stores o.jobs jobs of the benchmark shape (chief 1, ps 1, worker 3)
// straight to the training-apiserver, and marks all but the last o.running
// of them finished, with the status the controller would have left.
func (b *bench) fill(ctx context.Context) (*fillResult, error) {
	if err := benchkit.EnsureNamespace(ctx, b.kube, namespace); err != nil {
		return nil, err
	}
	r := &fillResult{jobs: b.o.jobs, finished: max(b.o.jobs-b.o.running, 0)}
	jobs := b.direct.BatchV1beta1().TensorFlowTrainingJobs(namespace)
	uids := make([]types.UID, r.finished)
	benchkit.Logf("storing %d jobs", r.jobs)
	var err error
	r.creates, _, err = benchkit.Parallel(ctx, r.jobs, 32, func(ctx context.Context, i int) error {
		created, err := jobs.Create(ctx, benchkit.OurJob(namespace, jobName(i), benchkit.JobOptions{}), metav1.CreateOptions{})
		if err == nil && i < r.finished {
			uids[i] = created.UID
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	benchkit.Logf("stored %d jobs in %s; finishing %d", r.jobs, r.creates.Round(time.Second), r.finished)
	started := metav1.NewTime(time.Now().Add(-2 * time.Hour).Truncate(time.Second))
	completed := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	r.statuses, _, err = benchkit.Parallel(ctx, r.finished, 32, func(ctx context.Context, i int) error {
		job := benchkit.OurJob(namespace, jobName(i), benchkit.JobOptions{})
		job.UID = uids[i]
		job.Status = succeededStatus(job, started, completed)
		// No resourceVersion: the status write is unconditional.
		_, err := jobs.UpdateStatus(ctx, job, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, err
	}
	benchkit.Logf("finished %d jobs in %s", r.finished, r.statuses.Round(time.Second))
	return r, nil
}

// succeededStatus is the status the controller leaves on a job whose every
// replica exited 0 and whose pods are gone.
func succeededStatus(job *v1beta1.TensorFlowTrainingJob, started, completed metav1.Time) v1beta1.TrainingJobStatus {
	st := v1beta1.TrainingJobStatus{
		ObservedGeneration: 1,
		Phase:              v1beta1.JobSucceeded,
		StartTime:          &started,
		CompletionTime:     &completed,
		Conditions: []metav1.Condition{
			{Type: v1beta1.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "ReplicasCreated", Message: "every replica has its pod", LastTransitionTime: started, ObservedGeneration: 1},
			{Type: v1beta1.ConditionRunning, Status: metav1.ConditionFalse, Reason: "Succeeded", Message: "the job finished", LastTransitionTime: completed, ObservedGeneration: 1},
			{Type: v1beta1.ConditionCompleted, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "the job succeeded", LastTransitionTime: completed, ObservedGeneration: 1},
		},
	}
	for _, spec := range job.Spec.ReplicaSpecs {
		task := v1beta1.TaskStatus{Type: spec.Type}
		for i := range *spec.Replicas {
			task.ReplicaStatus = append(task.ReplicaStatus, v1beta1.ReplicaStatus{
				Name:  v1beta1.PodName(job.Name, spec.Type, i),
				UID:   types.UID(fmt.Sprintf("%s-%s-%d", job.UID, spec.Type, i)),
				Phase: v1beta1.ReplicaDeleted,
				Containers: []v1beta1.ContainerStatus{{Name: v1beta1.TensorFlowContainerName, State: v1beta1.ContainerStateTerminated,
					Reason: "Completed", LastTermination: &v1beta1.ContainerTermination{ExitCode: 0, Reason: "Completed", FinishedAt: &completed}}},
			})
			st.Aggregate.Deleted++
		}
		st.Tasks = append(st.Tasks, task)
	}
	return st
}
