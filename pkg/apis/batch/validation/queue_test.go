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

package validation

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch"
)

// TestQueueUpdate: a job's queue may change while it waits, never while
// its queue has admitted it.
func TestQueueUpdate(t *testing.T) {
	const labelPath = "metadata.labels[kueue.x-k8s.io/queue-name]"
	const schedulerPath = "spec.scheduler.t9kScheduler.queue"
	labelled := func(queue string) func(*batch.TensorFlowTrainingJob) {
		return func(j *batch.TensorFlowTrainingJob) { j.Labels = map[string]string{batch.QueueLabel: queue} }
	}
	inScheduler := func(queue string) func(*batch.TensorFlowTrainingJob) {
		return func(j *batch.TensorFlowTrainingJob) {
			j.Spec.Scheduler = &batch.SchedulePolicy{T9kScheduler: &batch.T9kScheduler{Queue: queue}}
		}
	}
	queued := func(status metav1.ConditionStatus, reason string) func(*batch.TensorFlowTrainingJob) {
		return func(j *batch.TensorFlowTrainingJob) {
			j.Status.Conditions = []metav1.Condition{{Type: batch.ConditionQueued, Status: status, Reason: reason}}
		}
	}
	admitted := queued(metav1.ConditionFalse, batch.ReasonAdmitted)
	waiting := queued(metav1.ConditionTrue, batch.ReasonWaitingForAdmission)
	finished := func(j *batch.TensorFlowTrainingJob) { j.Status.Phase = batch.JobSucceeded }

	cases := map[string]struct {
		old, job *batch.TensorFlowTrainingJob
		want     []wantErr
	}{
		"label removed while waiting":  {tfJob(labelled("a"), waiting), tfJob(), nil},
		"label moved while waiting":    {tfJob(labelled("a"), waiting), tfJob(labelled("b")), nil},
		"label added while admitted":   {tfJob(inScheduler("a"), admitted), tfJob(inScheduler("a"), labelled("a")), nil},
		"other labels while admitted":  {tfJob(labelled("a"), admitted), tfJob(labelled("a"), func(j *batch.TensorFlowTrainingJob) { j.Labels["team"] = "x" }), nil},
		"label removed while admitted": {tfJob(labelled("a"), admitted), tfJob(), []wantErr{forbidden(labelPath)}},
		"label moved while admitted":   {tfJob(labelled("a"), admitted), tfJob(labelled("b")), []wantErr{forbidden(labelPath)}},
		"label overrides the scheduler's queue while admitted": {tfJob(inScheduler("a"), admitted),
			tfJob(inScheduler("a"), labelled("b")), []wantErr{forbidden(labelPath)}},
		"scheduler queue removed while admitted": {tfJob(inScheduler("a"), admitted), tfJob(), []wantErr{forbidden(schedulerPath)}},
		"scheduler queue changed under the label while admitted": {tfJob(labelled("a"), inScheduler("x"), admitted),
			tfJob(labelled("a"), inScheduler("y")), nil},
		"unqueued job gets a queue":     {tfJob(queued(metav1.ConditionFalse, "Unqueued")), tfJob(labelled("a")), nil},
		"label removed once finished":   {tfJob(labelled("a"), admitted, finished), tfJob(finished), nil},
		"never reconciled, label moved": {tfJob(labelled("a")), tfJob(labelled("b")), nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// The new object carries the stored status, as an update does.
			tc.job.Status = tc.old.Status
			expectErrors(t, ValidateTensorFlowTrainingJobUpdate(tc.job, tc.old), tc.want...)
		})
	}
}

// TestQueueStatusUpdate: a status write cannot take an admitted job's
// queue label away either.
func TestQueueStatusUpdate(t *testing.T) {
	old := tfJob(func(j *batch.TensorFlowTrainingJob) {
		j.Labels = map[string]string{batch.QueueLabel: "a"}
		j.Status.Conditions = []metav1.Condition{{Type: batch.ConditionQueued, Status: metav1.ConditionFalse,
			Reason: batch.ReasonAdmitted, Message: "admitted", LastTransitionTime: metav1.Now()}}
	})
	job := old.DeepCopy()
	job.Labels = nil
	expectErrors(t, ValidateTrainingJobStatusUpdate(job, old), forbidden("metadata.labels[kueue.x-k8s.io/queue-name]"))
}
