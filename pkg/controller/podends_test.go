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
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// newBatchingFixture runs a started job of chief 1 and worker 2 with the
// shipped pod-event batch period, its queues empty.
func newBatchingFixture(t *testing.T) (*fixture, v1beta1.TrainingJob) {
	t.Helper()
	job := newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 2).obj()
	logger, ctx := ktesting.NewTestContext(t)
	f := newFixtureWithContext(t, ctx, logger, record.NewFakeRecorder(100), false, func(_ *fixture, o *Options) {
		o.PodEventBatchPeriod = 500 * time.Millisecond
	}, job)
	f.start(job)
	// Let what the start queued for later come due, then drop it.
	f.clock.Step(time.Second)
	time.Sleep(50 * time.Millisecond)
	for _, q := range []interface {
		Len() int
		Get() (jobKey, bool)
		Done(jobKey)
	}{f.c.queue, f.c.urgent} {
		for q.Len() > 0 {
			key, _ := q.Get()
			q.Done(key)
		}
	}
	return f, job
}

// The first pod of a job to succeed while the others run waits for them;
// the last one to end queues the job at once, so that the job finishes
// with every replica succeeded and nothing left for its clean-up to delete.
func TestSucceededPodWaitsForRunningSiblings(t *testing.T) {
	f, job := newBatchingFixture(t)

	f.setPod("j-chief-0", succeeded)
	f.setPod("j-worker-0", succeeded)
	if n := f.c.urgent.Len(); n != 0 {
		t.Fatalf("urgent queue holds %d jobs while a worker still runs, want none yet", n)
	}
	f.setPod("j-worker-1", succeeded)
	if n := f.c.urgent.Len(); n != 1 {
		t.Fatalf("urgent queue holds %d jobs once every pod ended, want the job", n)
	}
	if !f.c.processNextItem(f.ctx, f.c.urgent) {
		t.Fatalf("the urgent queue shut down")
	}
	f.observe()
	assertPhase(t, f.status(job), v1beta1.JobSucceeded)
	if got := f.deletedPodNames(); len(got) != 0 {
		t.Errorf("deleted %v, want no pod: every one succeeded", got)
	}
	for name, phase := range replicaPhases(f.status(job)) {
		if phase != v1beta1.ReplicaSucceeded {
			t.Errorf("%s is %s, want Succeeded", name, phase)
		}
	}
}

// A sibling that does not end within the batch period does not hold the
// job up longer: it is reconciled then, and its clean-up policy applies.
func TestSucceededPodWaitsNoLongerThanTheBatchPeriod(t *testing.T) {
	f, job := newBatchingFixture(t)

	f.setPod("j-chief-0", succeeded)
	f.clock.Step(499 * time.Millisecond)
	time.Sleep(50 * time.Millisecond) // room for the queue's goroutine, were it to act early
	if n := f.c.urgent.Len(); n != 0 {
		t.Fatalf("urgent queue holds %d jobs before the batch period passed", n)
	}
	f.clock.Step(time.Millisecond)
	if err := wait.PollUntilContextTimeout(f.ctx, 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return f.c.urgent.Len() > 0, nil }); err != nil {
		t.Fatalf("the job was not queued once the batch period passed")
	}
	if !f.c.processNextItem(f.ctx, f.c.urgent) {
		t.Fatalf("the urgent queue shut down")
	}
	assertPhase(t, f.status(job), v1beta1.JobSucceeded)
	if got := f.deletedPodNames(); !equalStrings(got, []string{"j-worker-0", "j-worker-1"}) {
		t.Errorf("deleted %v, want the workers still running (clean-up policy Unfinished)", got)
	}
}

// A pod that failed, or is deleted, queues its job at once whatever its
// siblings do: they are not about to end with it.
func TestFailedOrDeletedPodDoesNotWait(t *testing.T) {
	for name, change := range map[string]func(f *fixture){
		"failed": func(f *fixture) { f.setPod("j-worker-0", failed(1)) },
		"being deleted": func(f *fixture) {
			f.setPod("j-worker-0", func(p *corev1.Pod) {
				succeeded(p)
				now := metav1.NewTime(f.clock.Now())
				p.DeletionTimestamp = &now
			})
		},
		"gone": func(f *fixture) { f.c.deletePod(f.logger, f.pod("j-worker-0")) },
	} {
		t.Run(name, func(t *testing.T) {
			f, _ := newBatchingFixture(t)
			change(f)
			if n := f.c.urgent.Len(); n != 1 {
				t.Errorf("urgent queue holds %d jobs, want the job at once", n)
			}
		})
	}
}
