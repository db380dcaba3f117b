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
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2/ktesting"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/owner"
	"tensorstack.dev/training/pkg/podbuilder"
)

// A healthy job gets every pod in one reconcile, in growing batches.
func TestCreateBatchesCreateEveryPod(t *testing.T) {
	job := newTFJob("j").withReplicas("worker", 40).obj()
	f := newFixture(t, job)
	f.mustSync(job)
	if n := len(f.createdPods()); n != 40 {
		t.Fatalf("%d pods created, want 40", n)
	}
	f.observe()
	if !f.c.expectations.SatisfiedExpectations(keyOf(job).String()) {
		c, d := f.c.expectations.Pending(keyOf(job).String())
		t.Errorf("expectations pending after the creates were observed: creations %d, deletions %d", c, d)
	}
}

// A refusal ends the reconcile after the batch it happened in: 1 pod, then
// 2 with the refused one among them, and the other 7 are not tried.
func TestCreateBatchesStopAtARefusal(t *testing.T) {
	job := newTFJob("j").withReplicas("worker", 10).obj()
	f := newFixture(t, job)
	attempts := 0
	// The fake runs reactors one at a time, so the count needs no lock.
	f.kubeClient.PrependReactor("create", "pods", func(a core.Action) (bool, runtime.Object, error) {
		attempts++
		if attempts == 3 {
			name := a.(core.CreateAction).GetObject().(*corev1.Pod).Name
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, name, fmt.Errorf("exceeded quota"))
		}
		return false, nil, nil
	})
	if _, err := f.sync(job); err == nil {
		t.Fatalf("a refused create must be retried")
	}
	if attempts != 3 {
		t.Errorf("%d creates attempted, want 3 (batches of 1 and 2)", attempts)
	}
	// Only the 2 pods created are still expected, until the cache has them.
	if c, d := f.c.expectations.Pending(keyOf(job).String()); c != 2 || d != 0 {
		t.Errorf("expectations pending: creations %d, deletions %d; want the 2 pods created", c, d)
	}
	f.observe()
	if n := len(f.podNames()); n != 2 {
		t.Errorf("%d pods exist, want the 2 created", n)
	}
	assertCondition(t, f.status(job), v1beta1.ConditionReplicaFailure, metav1.ConditionTrue, owner.ReasonFailedCreate)

	// The next reconcile creates the other 8.
	f.mustSync(job)
	f.observe()
	if n := len(f.podNames()); n != 10 {
		t.Fatalf("%d pods exist after the retry, want 10", n)
	}
}

// Changes to a job's pods are gathered for the batch period: a burst of
// them queues the job once, when the period has passed. The end of a pod
// queues it on the urgent queue at once.
func TestPodChangesAreBatched(t *testing.T) {
	job := newTFJob("j").withReplicas("worker", 2).obj()
	logger, ctx := ktesting.NewTestContext(t)
	f := newFixtureWithContext(t, ctx, logger, record.NewFakeRecorder(100), false, func(_ *fixture, o *Options) {
		o.PodEventBatchPeriod = 500 * time.Millisecond
	}, job)
	f.mustSync(job)
	f.observe()
	for f.c.queue.Len() > 0 { // what building the fixture queued
		key, _ := f.c.queue.Get()
		f.c.queue.Done(key)
	}

	pod := f.pod("j-worker-0")
	next := pod.DeepCopy()
	next.ResourceVersion += "1"
	running(next)
	f.c.addPod(logger, f.pod("j-worker-1"))
	f.c.updatePod(logger, pod, next)
	f.c.deletePod(logger, next)
	if n, u := f.c.queue.Len(), f.c.urgent.Len(); n != 0 || u != 1 {
		t.Fatalf("%d keys queued at once on the main queue and %d on the urgent one, want none and the ended pod's job", n, u)
	}
	f.clock.Step(499 * time.Millisecond)
	time.Sleep(50 * time.Millisecond) // room for the queue's goroutine, were it to act early
	if n := f.c.queue.Len(); n != 0 {
		t.Fatalf("%d keys queued on the main queue before the batch period passed", n)
	}
	f.clock.Step(time.Millisecond)
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return f.c.queue.Len() > 0, nil }); err != nil {
		t.Fatalf("the job was not queued once the batch period passed")
	}
	time.Sleep(50 * time.Millisecond)
	// Two changes of running pods make one reconcile; the pod that ended
	// queues the job on the urgent queue.
	if n, u := f.c.queue.Len(), f.c.urgent.Len(); n != 1 || u != 1 {
		t.Fatalf("queued %d times on the main queue and %d on the urgent one, want 1 and 1", n, u)
	}
	for _, q := range []workqueue.TypedRateLimitingInterface[jobKey]{f.c.queue, f.c.urgent} {
		if key, _ := q.Get(); key != keyOf(job) {
			t.Errorf("queued %v, want %v", key, keyOf(job))
		}
	}
}

// A job one of whose pods ended does not wait behind jobs queued for their
// pods' creation: the urgent queue has it, and its own workers.
func TestEndedPodsGoToTheUrgentQueue(t *testing.T) {
	job := newTFJob("done").withReplicas("worker", 1).obj()
	f := newFixture(t, job)
	f.mustSync(job)
	f.observe()
	for f.c.queue.Len() > 0 { // what building the fixture queued
		key, _ := f.c.queue.Get()
		f.c.queue.Done(key)
	}
	for i := range 100 {
		f.c.queue.Add(jobKey{Kind: podbuilder.TensorFlowKind, Namespace: "ns", Name: fmt.Sprintf("waiting-%d", i)})
	}
	pod := f.pod("done-worker-0")
	exited := pod.DeepCopy()
	exited.ResourceVersion += "1"
	succeeded(exited)
	f.c.updatePod(f.logger, pod, exited)
	if n := f.c.urgent.Len(); n != 1 {
		t.Fatalf("urgent queue holds %d jobs, want the one whose pod ended", n)
	}
	f.setPod("done-worker-0", succeeded)
	if !f.c.processNextItem(f.ctx, f.c.urgent) {
		t.Fatalf("the urgent queue shut down")
	}
	f.observe()
	if st := f.status(job); st.Phase != v1beta1.JobSucceeded {
		t.Errorf("phase %s after the urgent reconcile, want Succeeded", st.Phase)
	}
	if n := f.c.queue.Len(); n != 100 {
		t.Errorf("main queue holds %d jobs, want the 100 it had", n)
	}
	f.c.queue.ShutDown()
	f.c.urgent.ShutDown()
}

// keyLocks keeps two workers off one job and lets other jobs through.
func TestKeyLocks(t *testing.T) {
	l := newKeyLocks()
	a, b := jobKey{Name: "a"}, jobKey{Name: "b"}
	unlockA := l.lock(a)
	l.lock(b)() // another job is not held up
	got := make(chan struct{})
	go func() {
		defer l.lock(a)()
		close(got)
	}()
	select {
	case <-got:
		t.Fatalf("a second worker took the job while the first held it")
	case <-time.After(50 * time.Millisecond):
	}
	unlockA()
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatalf("the second worker never got the job")
	}
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			return len(l.held) == 0, nil
		}); err != nil {
		t.Errorf("%d locks kept after every worker let go", len(l.held))
	}
}
