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
	"math"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

func TestTableRows(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	convertor := tableConvertor{now: func() time.Time { return now }}

	running := newJob("running", 3)
	running.CreationTimestamp = metav1.NewTime(now.Add(-2 * time.Hour))
	running.Status = batch.TrainingJobStatus{
		Phase:        batch.JobRunning,
		Aggregate:    batch.Aggregate{Running: 3, Pending: 1},
		BackoffCount: 2,
		StartTime:    &metav1.Time{Time: now.Add(-90 * time.Minute)},
		Progress: &batch.ProgressStatus{
			ProgressValues: batch.ProgressValues{Percent: ptr.To[int32](42), Metrics: []batch.ProgressMetric{
				{Name: "loss", Value: "0.25"}, {Name: "accuracy", Value: "0.9"},
			}},
			EstimatedFinishTime: &metav1.Time{Time: now.Add(2*time.Hour + 5*time.Minute)},
		},
	}
	finished := newJob("finished", 1)
	finished.CreationTimestamp = metav1.NewTime(now.Add(-3 * time.Hour))
	finished.Spec.RunMode = &batch.RunMode{Debug: &batch.DebugMode{Enabled: true}}
	finished.Status = batch.TrainingJobStatus{
		Phase:          batch.JobSucceeded,
		Aggregate:      batch.Aggregate{Succeeded: 2},
		StartTime:      &metav1.Time{Time: now.Add(-3 * time.Hour)},
		CompletionTime: &metav1.Time{Time: now.Add(-150 * time.Minute)},
		// A finished job keeps its last report, but has no time left.
		Progress: &batch.ProgressStatus{
			ProgressValues:      batch.ProgressValues{Percent: ptr.To[int32](100)},
			EstimatedFinishTime: &metav1.Time{Time: now.Add(time.Hour)},
		},
	}
	fresh := newJob("fresh", 1)
	fresh.Spec.RunMode = &batch.RunMode{Pause: &batch.PauseMode{Enabled: true}}
	fresh.CreationTimestamp = metav1.NewTime(now.Add(-5 * time.Second))
	waitingForGang := metav1.Condition{Type: batch.ConditionGangScheduled, Status: metav1.ConditionFalse,
		Reason: batch.ReasonWaitingForGang, Message: "waiting for room for the whole gang: 1 of 2 pods placed"}
	gang := newJob("gang", 1)
	gang.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	gang.Status = batch.TrainingJobStatus{
		Phase: batch.JobPending, Aggregate: batch.Aggregate{Pending: 2}, Conditions: []metav1.Condition{waitingForGang},
	}
	resuming := newJob("resuming", 1)
	resuming.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	resuming.Status = batch.TrainingJobStatus{Phase: batch.JobResuming, Conditions: []metav1.Condition{waitingForGang}}
	// A replacement waits for its gang too, but a job that ran once is shown Running.
	restarting := newJob("restarting", 1)
	restarting.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	restarting.Status = batch.TrainingJobStatus{Phase: batch.JobRunning, Conditions: []metav1.Condition{waitingForGang}}
	placed := newJob("placed", 1)
	placed.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	placed.Status = batch.TrainingJobStatus{Phase: batch.JobPending, Conditions: []metav1.Condition{{
		Type: batch.ConditionGangScheduled, Status: metav1.ConditionTrue, Reason: "GangPlaced",
	}}}
	pausing := gang.DeepCopy()
	pausing.Name = "pausing"
	pausing.Spec.RunMode = &batch.RunMode{Pause: &batch.PauseMode{Enabled: true}}
	queued := newJob("queued", 1)
	queued.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	queued.Status = batch.TrainingJobStatus{Phase: batch.JobPending, Conditions: []metav1.Condition{{
		Type: batch.ConditionQueued, Status: metav1.ConditionTrue, Reason: batch.ReasonWaitingForAdmission,
	}}}
	preempted := newJob("preempted", 1)
	preempted.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	preempted.Status = batch.TrainingJobStatus{Phase: batch.JobPaused, Conditions: []metav1.Condition{{
		Type: batch.ConditionQueued, Status: metav1.ConditionTrue, Reason: "Preempted",
	}}}
	admitted := newJob("admitted", 1)
	admitted.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	admitted.Status = batch.TrainingJobStatus{Phase: batch.JobPending, Conditions: []metav1.Condition{{
		Type: batch.ConditionQueued, Status: metav1.ConditionFalse, Reason: batch.ReasonAdmitted,
	}}}

	pulling := newJob("pulling", 1)
	pulling.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	pulling.Status = batch.TrainingJobStatus{Phase: batch.JobPending, Conditions: []metav1.Condition{{
		Type: batch.ConditionRunning, Status: metav1.ConditionFalse, Reason: "ImagePullBackOff",
		Message: "waiting for every replica to start: replica worker-0: container pytorch: ImagePullBackOff: ...",
	}}}
	starting := newJob("starting", 1)
	starting.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	starting.Status = batch.TrainingJobStatus{Phase: batch.JobPending, Conditions: []metav1.Condition{{
		Type: batch.ConditionRunning, Status: metav1.ConditionFalse, Reason: string(batch.JobPending),
	}}}

	// An elastic job scaled from 2 to 4: two of its workers have pods.
	elastic := newJob("elastic", 1)
	elastic.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	elastic.Spec.Elastic = &batch.ElasticConfig{Enabled: true, MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](5),
		ExpectedReplicas: ptr.To[int32](5)}
	elastic.Status = batch.TrainingJobStatus{Phase: batch.JobRunning, Aggregate: batch.Aggregate{Running: 3}, Tasks: []batch.TaskStatus{
		{Type: "master", ReplicaStatus: []batch.ReplicaStatus{{UID: "m0", Phase: batch.ReplicaRunning}}},
		{Type: "worker", ReplicaStatus: []batch.ReplicaStatus{{UID: "w0", Phase: batch.ReplicaRunning}, {UID: "w1", Phase: batch.ReplicaRunning},
			{Phase: batch.ReplicaCreating}, {Phase: batch.ReplicaCreating}}},
	}}

	list := &batch.PyTorchTrainingJobList{
		ListMeta: metav1.ListMeta{ResourceVersion: "42"},
		Items: []batch.PyTorchTrainingJob{*running, *finished, *fresh, *gang, *resuming, *restarting, *placed, *pausing,
			*queued, *preempted, *admitted, *pulling, *starting, *elastic},
	}
	table, err := convertor.ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(table.ColumnDefinitions) != 11 || table.ResourceVersion != "42" {
		t.Errorf("%d columns, resourceVersion %q; want 11 and 42", len(table.ColumnDefinitions), table.ResourceVersion)
	}
	want := [][]any{
		{"running", "Running", "3/4", int64(2), "42%", "120m", "Immediate", "master:1,worker:3", "90m", "125m", "loss=0.25"},
		{"finished", "Succeeded", "2/2", int64(0), "100%", "3h", "Debug", "master:1,worker:1", "30m", "", ""},
		{"fresh", "Pending", "0/2", int64(0), "", "5s", "Pause", "master:1,worker:1", "", "", ""},
		{"gang", "Pending (WaitingForGang)", "0/2", int64(0), "", "60s", "Immediate", "master:1,worker:1", "", "", ""},
		{"resuming", "Resuming (WaitingForGang)", "0/2", int64(0), "", "60s", "Immediate", "master:1,worker:1", "", "", ""},
		{"restarting", "Running", "0/2", int64(0), "", "60s", "Immediate", "master:1,worker:1", "", "", ""},
		{"placed", "Pending", "0/2", int64(0), "", "60s", "Immediate", "master:1,worker:1", "", "", ""},
		{"pausing", "Pending", "0/2", int64(0), "", "60s", "Pause", "master:1,worker:1", "", "", ""},
		{"queued", "Pending (WaitingForAdmission)", "0/2", int64(0), "", "60s", "Immediate", "master:1,worker:1", "", "", ""},
		{"preempted", "Paused (Preempted)", "0/2", int64(0), "", "60s", "Immediate", "master:1,worker:1", "", "", ""},
		{"admitted", "Pending", "0/2", int64(0), "", "60s", "Immediate", "master:1,worker:1", "", "", ""},
		{"pulling", "Pending (ImagePullBackOff)", "0/2", int64(0), "", "60s", "Immediate", "master:1,worker:1", "", "", ""},
		{"starting", "Pending", "0/2", int64(0), "", "60s", "Immediate", "master:1,worker:1", "", "", ""},
		{"elastic", "Running", "3/5", int64(0), "", "60s", "Immediate", "master:1,worker:2/4", "", "", ""},
	}
	if len(table.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(table.Rows), len(want))
	}
	for i, row := range table.Rows {
		for j, cell := range row.Cells {
			if cell != want[i][j] {
				t.Errorf("row %d column %s = %#v, want %#v", i, tableColumns[j].Name, cell, want[i][j])
			}
		}
	}

	noHeaders, err := convertor.ConvertToTable(context.Background(), running, &metav1.TableOptions{NoHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(noHeaders.ColumnDefinitions) != 0 || len(noHeaders.Rows) != 1 {
		t.Errorf("with NoHeaders: %d columns, %d rows; want 0 and 1", len(noHeaders.ColumnDefinitions), len(noHeaders.Rows))
	}
}

// TestTableReadyDoesNotOverflow renders a job stored before the replica cap,
// with two types of 2^31-1 replicas and a status counting as many: READY
// must show the true sums, not int32 wrap-around such as 0/-2.
func TestTableReadyDoesNotOverflow(t *testing.T) {
	job := newJob("huge", math.MaxInt32)
	job.Spec.ReplicaSpecs[0].Replicas = ptr.To[int32](math.MaxInt32)
	job.Status.Aggregate = batch.Aggregate{Running: math.MaxInt32, Succeeded: math.MaxInt32}
	table, err := tableConvertor{now: time.Now}.ConvertToTable(context.Background(), job, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "4294967294/4294967294"
	if got := table.Rows[0].Cells[2]; got != want {
		t.Errorf("READY = %v, want %s", got, want)
	}
	if got, want := table.Rows[0].Cells[7], "master:2147483647,worker:2147483647"; got != want {
		t.Errorf("REPLICAS = %v, want %s", got, want)
	}
}
