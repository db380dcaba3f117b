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
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	jobfake "tensorstack.dev/training/pkg/generated/clientset/versioned/fake"
)

// TestJobInformersSelectUnfinishedJobs: the job informers ask the server
// for the jobs of every phase but Succeeded and Failed.
func TestJobInformersSelectUnfinishedJobs(t *testing.T) {
	client := jobfake.NewClientset()
	var mu sync.Mutex
	selectors := map[string]fields.Selector{}
	client.PrependReactor("list", "*", func(a core.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		selectors[a.GetResource().Resource] = a.(core.ListAction).GetListRestrictions().Fields
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory := NewJobInformerFactory(client, 0)
	synced := []cache.InformerSynced{
		factory.Batch().V1beta1().TensorFlowTrainingJobs().Informer().HasSynced,
		factory.Batch().V1beta1().PyTorchTrainingJobs().Informer().HasSynced,
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		t.Fatal("the informers did not sync")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, resource := range []string{v1beta1.TensorFlowTrainingJobResource, v1beta1.PyTorchTrainingJobResource} {
		selector := selectors[resource]
		if selector == nil {
			t.Fatalf("%s: not listed", resource)
		}
		for _, phase := range []v1beta1.JobPhase{"", v1beta1.JobPending, v1beta1.JobRunning, v1beta1.JobPaused,
			v1beta1.JobResuming, v1beta1.JobUnknown, v1beta1.JobSucceeded, v1beta1.JobFailed} {
			want := !phase.IsFinished()
			if got := selector.Matches(fields.Set{v1beta1.FieldStatusPhase: string(phase)}); got != want {
				t.Errorf("%s: field selector %q selects phase %q: %v, want %v", resource, selector, phase, got, want)
			}
		}
	}
}

// TestFinishedJobIsReconciledFromTheStore: a finished job is not cached, yet
// a change to one of its pods still reaches it, read from the server.
func TestFinishedJobIsReconciledFromTheStore(t *testing.T) {
	job := newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 1).
		withCleanUp(v1beta1.CleanUpPolicyNone).obj()
	f := newFixture(t, job)
	f.start(job)
	f.setPod("j-chief-0", succeeded)
	f.step(job)
	assertPhase(t, f.status(job), v1beta1.JobSucceeded)
	if _, err := f.c.kinds[keyOf(job).Kind].get("ns", "j"); err == nil {
		t.Fatal("the finished job is still in the cache")
	}
	if names := f.podNames(); len(names) != 2 {
		t.Fatalf("pods %v, want both kept (clean-up policy None)", names)
	}

	// The worker still runs; were the policy to delete it, the job read
	// from the server deletes it when one of its pods changes.
	stored, err := f.jobClient.BatchV1beta1().TensorFlowTrainingJobs("ns").Get(f.ctx, "j", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored.Spec.RunPolicy.CleanUpPolicy = v1beta1.CleanUpPolicyAll
	if _, err := f.jobClient.BatchV1beta1().TensorFlowTrainingJobs("ns").Update(f.ctx, stored, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.observe()
	pod, err := f.kubeClient.CoreV1().Pods("ns").Get(f.ctx, "j-worker-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if key, ok := f.c.ownerKey(pod); !ok || key != keyOf(job) {
		t.Fatalf("a pod of the uncached finished job resolves to %v, %v; want %v", key, ok, keyOf(job))
	}
	f.jobClient.ClearActions()
	f.mustSync(job)
	gets := 0
	for _, a := range f.jobClient.Actions() {
		if a.GetVerb() == "get" {
			gets++
		}
	}
	if gets != 1 {
		t.Errorf("%d reads of the job, want 1; actions %v", gets, f.jobClient.Actions())
	}
	f.observe()
	if names := f.podNames(); len(names) != 0 {
		t.Errorf("pods %v left, want the clean-up policy All applied", names)
	}
	assertPhase(t, f.status(job), v1beta1.JobSucceeded)
}

// TestUncachedRunningJobWaitsForTheCache: a job the server has but the cache
// has not yet is left to the cache's event, not reconciled from a read.
func TestUncachedRunningJobWaitsForTheCache(t *testing.T) {
	f := newFixture(t)
	job := newTFJob("j").withReplicas("worker", 1).obj()
	if _, err := f.jobClient.BatchV1beta1().TensorFlowTrainingJobs("ns").Create(f.ctx,
		job.(*v1beta1.TensorFlowTrainingJob), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.jobClient.ClearActions()
	if d := f.mustSync(job); d != 0 {
		t.Errorf("requeue after %v, want none", d)
	}
	if names := f.podNames(); len(names) != 0 {
		t.Errorf("pods %v created for a job not yet cached", names)
	}
	for _, a := range f.jobClient.Actions() {
		if a.GetVerb() != "get" {
			t.Errorf("unexpected %s of %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// TestQueueExpiringJobs: a controller starting anew queues every finished
// job with a TTL at its expiry, and no other job.
func TestQueueExpiringJobs(t *testing.T) {
	finished := func(phase v1beta1.JobPhase, ago time.Duration) v1beta1.TrainingJobStatus {
		done := metav1.NewTime(testStart.Add(-ago))
		return v1beta1.TrainingJobStatus{Phase: phase, CompletionTime: &done}
	}
	f := newFixture(t,
		newTFJob("expires-later").withReplicas("worker", 1).withTTL(100).withStatus(finished(v1beta1.JobSucceeded, 30*time.Second)).obj(),
		newPyTorchJob("expired").withReplicas("master", 1).withTTL(10).withStatus(finished(v1beta1.JobFailed, time.Minute)).obj(),
		newTFJob("kept").withReplicas("worker", 1).withStatus(finished(v1beta1.JobSucceeded, time.Hour)).obj(),
		newTFJob("running").withReplicas("worker", 1).withTTL(5).withStatus(v1beta1.TrainingJobStatus{Phase: v1beta1.JobRunning}).obj(),
	)
	if err := f.c.queueExpiringJobs(f.ctx); err != nil {
		t.Fatal(err)
	}
	next := func() string {
		t.Helper()
		err := wait.PollUntilContextTimeout(f.ctx, 5*time.Millisecond, 5*time.Second, true,
			func(context.Context) (bool, error) { return f.c.queue.Len() > 0, nil })
		if err != nil {
			t.Fatalf("nothing queued: %v", err)
		}
		key, _ := f.c.queue.Get()
		f.c.queue.Done(key)
		return key.Name
	}
	if got := next(); got != "expired" {
		t.Fatalf("queued first %q, want expired", got)
	}
	f.clock.Step(69 * time.Second)
	time.Sleep(50 * time.Millisecond)
	if n := f.c.queue.Len(); n != 0 {
		t.Fatalf("%d jobs queued a second before the next expiry", n)
	}
	f.clock.Step(time.Second)
	if got := next(); got != "expires-later" {
		t.Fatalf("queued %q at 70s, want expires-later", got)
	}
	f.clock.Step(24 * time.Hour)
	time.Sleep(50 * time.Millisecond)
	if n := f.c.queue.Len(); n != 0 {
		t.Fatalf("%d more jobs queued, want none (no TTL, or not finished)", n)
	}
}
