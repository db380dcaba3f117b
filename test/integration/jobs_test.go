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

package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/integration/framework"
)

func TestJobLifecycle(t *testing.T) {
	s := framework.StartTestServer(t, "")
	everyKind(t, s, testJobLifecycle, testJobLifecycle, testJobLifecycle, testJobLifecycle, testJobLifecycle)
}

// testJobLifecycle creates, reads, lists, watches, updates and deletes a job.
func testJobLifecycle[J jobPointer, L any](t *testing.T, k kind[J, L]) {
	ctx := context.Background()
	client := k.client("lifecycle")

	w, err := client.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()

	job := k.newJob("train")
	job.SetLabels(map[string]string{"team": "vision"})
	// A client may not set status on create.
	job.JobStatus().Phase = v1beta1.JobSucceeded
	created, err := client.Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.GetGeneration() != 1 {
		t.Errorf("generation after create = %d, want 1", created.GetGeneration())
	}
	if phase := created.JobStatus().Phase; phase != "" {
		t.Errorf("status.phase after create = %q, want it cleared", phase)
	}
	first := created.CommonSpec().ReplicaSpecs[0]
	if first.Replicas == nil || *first.Replicas != 1 || first.RestartPolicy != v1beta1.RestartPolicyNever {
		t.Errorf("replica defaults = replicas %v, restartPolicy %q; want 1, Never", first.Replicas, first.RestartPolicy)
	}
	policy := created.CommonSpec().RunPolicy
	if policy.BackoffLimit == nil || *policy.BackoffLimit != 3 || policy.CleanUpPolicy != v1beta1.CleanUpPolicyUnfinished {
		t.Errorf("runPolicy defaults = %+v; want backoffLimit 3, cleanUpPolicy Unfinished", policy)
	}

	got, err := client.Get(ctx, "train", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.GetUID() != created.GetUID() {
		t.Errorf("get returned uid %s, want %s", got.GetUID(), created.GetUID())
	}

	if _, err := client.Create(ctx, k.newJob("other"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create other: %v", err)
	}
	list, err := client.List(ctx, metav1.ListOptions{LabelSelector: "team=vision"})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if items := k.items(list); len(items) != 1 || items[0].GetName() != "train" {
		t.Errorf("list team=vision returned %d jobs, want only train", len(items))
	}

	// A spec change bumps the generation; a metadata-only change does not.
	lastReplicaSpec(got).Replicas = ptr.To[int32](4)
	updated, err := client.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update spec: %v", err)
	}
	if updated.GetGeneration() != 2 {
		t.Errorf("generation after spec update = %d, want 2", updated.GetGeneration())
	}
	updated.SetLabels(map[string]string{"team": "vision", "stage": "two"})
	relabelled, err := client.Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update labels: %v", err)
	}
	if relabelled.GetGeneration() != 2 {
		t.Errorf("generation after label update = %d, want 2", relabelled.GetGeneration())
	}

	if err := client.Delete(ctx, "train", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := client.Get(ctx, "train", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v, want NotFound", err)
	}

	want := []watch.EventType{watch.Added, watch.Added, watch.Modified, watch.Modified, watch.Deleted}
	for i, wantType := range want {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != wantType {
				t.Fatalf("watch event %d = %s, want %s", i, ev.Type, wantType)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("watch event %d (%s) did not arrive", i, wantType)
		}
	}
}

func TestStatusSubresource(t *testing.T) {
	s := framework.StartTestServer(t, "")
	everyKind(t, s, testStatusSubresource, testStatusSubresource, testStatusSubresource, testStatusSubresource, testStatusSubresource)
}

// testStatusSubresource checks that status writes keep the spec and spec
// writes keep the status.
func testStatusSubresource[J jobPointer, L any](t *testing.T, k kind[J, L]) {
	ctx := context.Background()
	client := k.client("status")
	job, err := client.Create(ctx, k.newJob("train"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}

	job.JobStatus().Phase = v1beta1.JobRunning
	job.JobStatus().BackoffCount = 2
	lastReplicaSpec(job).Replicas = ptr.To[int32](9)
	afterStatus, err := client.UpdateStatus(ctx, job, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update status: %v", err)
	}
	if afterStatus.JobStatus().Phase != v1beta1.JobRunning || afterStatus.JobStatus().BackoffCount != 2 {
		t.Errorf("status after status update = %+v, want phase Running, backoffCount 2", afterStatus.JobStatus())
	}
	if n := *lastReplicaSpec(afterStatus).Replicas; n != 1 {
		t.Errorf("replicas after status update = %d, want the spec kept at 1", n)
	}
	if afterStatus.GetGeneration() != 1 {
		t.Errorf("generation after status update = %d, want 1", afterStatus.GetGeneration())
	}

	// The job is Running now, so the spec change is one a running job
	// accepts (its replica counts and templates are fixed until it is paused).
	afterStatus.JobStatus().Phase = v1beta1.JobFailed
	afterStatus.CommonSpec().RunPolicy.BackoffLimit = ptr.To[int32](7)
	afterSpec, err := client.Update(ctx, afterStatus, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if afterSpec.JobStatus().Phase != v1beta1.JobRunning {
		t.Errorf("phase after spec update = %q, want the status kept at Running", afterSpec.JobStatus().Phase)
	}
	if n := *afterSpec.CommonSpec().RunPolicy.BackoffLimit; n != 7 || afterSpec.GetGeneration() != 2 {
		t.Errorf("backoffLimit after spec update = %d, generation %d; want 7 and 2", n, afterSpec.GetGeneration())
	}
}

func TestStatusOfDispatchedJob(t *testing.T) {
	s := framework.StartTestServer(t, "")
	everyKind(t, s, testStatusOfDispatchedJob, testStatusOfDispatchedJob, testStatusOfDispatchedJob, testStatusOfDispatchedJob, testStatusOfDispatchedJob)
}

// testStatusOfDispatchedJob: a status write carries status.progress only for a
// job MultiKueue runs elsewhere (whose whole status it copies back); for one
// of ours progress is its pods' to report, and a status write keeps it.
func testStatusOfDispatchedJob[J jobPointer, L any](t *testing.T, k kind[J, L]) {
	ctx := context.Background()
	client := k.client("dispatched")
	for _, managedBy := range []*string{ptr.To(batch.ManagedByMultiKueue), nil} {
		job := k.newJob(fmt.Sprintf("train-%t", managedBy != nil))
		job.CommonSpec().ManagedBy = managedBy
		job, err := client.Create(ctx, job, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		job.JobStatus().Phase = v1beta1.JobRunning
		job.JobStatus().Progress = &v1beta1.ProgressStatus{ProgressValues: v1beta1.ProgressValues{Step: ptr.To[int64](40)}}
		got, err := client.UpdateStatus(ctx, job, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("update status: %v", err)
		}
		kept := got.JobStatus().Progress != nil
		if want := managedBy != nil; kept != want || got.JobStatus().Phase != v1beta1.JobRunning {
			t.Errorf("managedBy %v: phase %q, progress kept %t; want Running, progress kept %t",
				ptr.Deref(managedBy, "ours"), got.JobStatus().Phase, kept, want)
		}
	}
}

func TestActions(t *testing.T) {
	s := framework.StartTestServer(t, "")
	everyKind(t, s, testActions, testActions, testActions, testActions, testActions)
}

// testActions drives pause, resume and debug, with dry-run, idempotency and
// the refusal on a finished job.
func testActions[J jobPointer, L any](t *testing.T, k kind[J, L]) {
	ctx := context.Background()
	client := k.client("actions")
	job, err := client.Create(ctx, k.newJob("train"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	firstType := job.CommonSpec().ReplicaSpecs[0].Type

	paused, err := client.Pause(ctx, "train", &v1beta1.PauseRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("pause: %v", err)
	}
	if !pauseEnabled(paused) || paused.GetGeneration() != 2 {
		t.Errorf("after pause: pause enabled %v, generation %d; want true, 2", pauseEnabled(paused), paused.GetGeneration())
	}
	again, err := client.Pause(ctx, "train", &v1beta1.PauseRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("second pause: %v", err)
	}
	if again.GetResourceVersion() != paused.GetResourceVersion() || again.GetGeneration() != 2 {
		t.Errorf("second pause wrote the job: resourceVersion %s -> %s, generation %d",
			paused.GetResourceVersion(), again.GetResourceVersion(), again.GetGeneration())
	}

	dryRun, err := client.Resume(ctx, "train", &v1beta1.ResumeRequest{}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatalf("dry-run resume: %v", err)
	}
	if pauseEnabled(dryRun) {
		t.Errorf("dry-run resume returned a job that is still paused")
	}
	stored, err := client.Get(ctx, "train", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if !pauseEnabled(stored) || stored.GetResourceVersion() != paused.GetResourceVersion() {
		t.Errorf("dry-run resume changed the stored job")
	}

	debugging, err := client.Debug(ctx, "train", &v1beta1.DebugRequest{
		ReplicaSpecs: []v1beta1.ReplicaDebugSpec{{Type: firstType, SkipInitContainer: true}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("debug: %v", err)
	}
	debug := debugging.CommonSpec().RunMode.Debug
	if pauseEnabled(debugging) || debug == nil || !debug.Enabled {
		t.Fatalf("after debug: pause enabled %v, debug %+v; want pause off, debug on", pauseEnabled(debugging), debug)
	}
	if got := debug.ReplicaSpecs; len(got) != 1 || got[0].Type != firstType || strings.Join(got[0].Command, " ") != "sleep inf" {
		t.Errorf("debug replicaSpecs = %+v, want %s with the default command sleep inf", got, firstType)
	}

	resumed, err := client.Resume(ctx, "train", &v1beta1.ResumeRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if pauseEnabled(resumed) || resumed.CommonSpec().RunMode.Debug.Enabled {
		t.Errorf("after resume the job is still paused or debugging: %+v", resumed.CommonSpec().RunMode)
	}

	if _, err := client.Pause(ctx, "missing", &v1beta1.PauseRequest{}, metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("pause of a missing job: %v, want NotFound", err)
	}

	resumed.JobStatus().Phase = v1beta1.JobSucceeded
	if _, err := client.UpdateStatus(ctx, resumed, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update status: %v", err)
	}
	_, err = client.Pause(ctx, "train", &v1beta1.PauseRequest{}, metav1.CreateOptions{})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "Succeeded") {
		t.Errorf("pause of a succeeded job: %v, want a 409 Conflict naming the phase", err)
	}
}

// lastReplicaSpec is a replica type whose count may change (not a PyTorch master).
func lastReplicaSpec(job v1beta1.TrainingJob) *v1beta1.ReplicaSpec {
	specs := job.CommonSpec().ReplicaSpecs
	return &specs[len(specs)-1]
}

func pauseEnabled(job v1beta1.TrainingJob) bool {
	mode := job.CommonSpec().RunMode
	return mode != nil && mode.Pause != nil && mode.Pause.Enabled
}

func TestConcurrentUpdateConflict(t *testing.T) {
	s := framework.StartTestServer(t, "")
	everyKind(t, s, testConcurrentUpdateConflict, testConcurrentUpdateConflict, testConcurrentUpdateConflict, testConcurrentUpdateConflict, testConcurrentUpdateConflict)
}

// testConcurrentUpdateConflict checks optimistic concurrency: of two writers
// starting from the same resourceVersion, the second gets 409.
func testConcurrentUpdateConflict[J jobPointer, L any](t *testing.T, k kind[J, L]) {
	ctx := context.Background()
	client := k.client("conflict")
	job, err := client.Create(ctx, k.newJob("train"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	first, second := job.DeepCopyObject().(J), job.DeepCopyObject().(J)
	first.SetLabels(map[string]string{"writer": "first"})
	second.SetLabels(map[string]string{"writer": "second"})
	if _, err := client.Update(ctx, first, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("first update: %v", err)
	}
	if _, err := client.Update(ctx, second, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("update from a stale resourceVersion: %v, want 409 Conflict", err)
	}
	stored, err := client.Get(ctx, "train", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if stored.GetLabels()["writer"] != "first" {
		t.Errorf("stored writer label = %q, want first", stored.GetLabels()["writer"])
	}
}

// TestInvalidDebugRequest checks that a bad action body gets 422 naming the field.
func TestInvalidDebugRequest(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	client := s.Client.BatchV1beta1().TensorFlowTrainingJobs("debug")
	if _, err := client.Create(ctx, tensorflowKind(s).newJob("train"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	cases := map[string]struct {
		specs     []v1beta1.ReplicaDebugSpec
		wantField string
	}{
		"type missing":               {[]v1beta1.ReplicaDebugSpec{{}}, "replicaSpecs[0].type"},
		"type the job does not have": {[]v1beta1.ReplicaDebugSpec{{Type: "ps"}}, "spec.runMode.debug.replicaSpecs[0].type"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := client.Debug(ctx, "train", &v1beta1.DebugRequest{ReplicaSpecs: tc.specs}, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("debug: %v, want 422", err)
			}
			var fields []string
			for _, cause := range err.(apierrors.APIStatus).Status().Details.Causes {
				fields = append(fields, cause.Field)
			}
			if !contains(fields, tc.wantField) {
				t.Errorf("error names %v, want %s", fields, tc.wantField)
			}
		})
	}
	job, err := client.Get(ctx, "train", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if job.Generation != 1 {
		t.Errorf("rejected debug requests changed the job: generation %d", job.Generation)
	}
}

// TestActionsKeepConcurrentWrites pauses and debugs a job while other
// clients keep changing it: every action starts from the latest stored job,
// so no write of the others is lost and no action is lost either.
func TestActionsKeepConcurrentWrites(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	client := s.Client.BatchV1beta1().PyTorchTrainingJobs("concurrent")
	if _, err := client.Create(ctx, pytorchKind(s).newJob("train"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}

	const writers = 8
	// Enough attempts that every writer eventually wins a round against the others.
	backoff := wait.Backoff{Steps: 100, Duration: 5 * time.Millisecond, Factor: 1.1, Jitter: 1, Cap: 100 * time.Millisecond}
	errs := make(chan error, writers+1)
	for i := 0; i < writers; i++ {
		go func() {
			errs <- retry.RetryOnConflict(backoff, func() error {
				job, err := client.Get(ctx, "train", metav1.GetOptions{})
				if err != nil {
					return err
				}
				if job.Labels == nil {
					job.Labels = map[string]string{}
				}
				job.Labels[fmt.Sprintf("writer-%d", i)] = "done"
				_, err = client.Update(ctx, job, metav1.UpdateOptions{})
				return err
			})
		}()
	}
	go func() {
		_, err := client.Pause(ctx, "train", &v1beta1.PauseRequest{}, metav1.CreateOptions{})
		errs <- err
	}()
	for i := 0; i < writers+1; i++ {
		if err := <-errs; err != nil {
			t.Errorf("concurrent write: %v", err)
		}
	}

	job, err := client.Get(ctx, "train", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !pauseEnabled(job) {
		t.Errorf("the pause was lost among concurrent updates")
	}
	for i := 0; i < writers; i++ {
		if job.Labels[fmt.Sprintf("writer-%d", i)] != "done" {
			t.Errorf("label of writer %d was lost: %v", i, job.Labels)
		}
	}
}
