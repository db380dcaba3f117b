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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	jobfake "tensorstack.dev/training/pkg/generated/clientset/versioned/fake"
)

// The whole loop: informers, handlers, queue and workers, on fake clients,
// and a clean stop when the context ends.
func TestRunReconcilesThroughInformers(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	kubeClient := kubefake.NewClientset()
	jobClient := jobfake.NewClientset()
	kubeInformers := NewKubeInformerFactory(kubeClient, 0)
	jobInformers := NewJobInformerFactory(jobClient, 0)
	c, err := New(ctx, kubeClient, jobClient, kubeInformers, jobInformers, Options{Recorder: record.NewFakeRecorder(100)})
	if err != nil {
		t.Fatal(err)
	}
	kubeInformers.Start(ctx.Done())
	jobInformers.Start(ctx.Done())
	stopped := make(chan struct{})
	go func() {
		c.Run(ctx, 2)
		close(stopped)
	}()

	tf := newTFJob("tf").withReplicas("worker", 2).obj().(*v1beta1.TensorFlowTrainingJob)
	pt := newPyTorchJob("pt").withReplicas("master", 1).obj().(*v1beta1.PyTorchTrainingJob)
	// Added through the tracker: the fake clientset's Create runs the jobs
	// through a structured-merge schema that does not know their model names.
	for _, job := range []v1beta1.TrainingJob{tf, pt} {
		if err := jobClient.Tracker().Add(job); err != nil {
			t.Fatal(err)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := kubeClient.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) != 3 {
			return false, nil
		}
		tfNow, err := jobClient.BatchV1beta1().TensorFlowTrainingJobs("ns").Get(ctx, "tf", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		ptNow, err := jobClient.BatchV1beta1().PyTorchTrainingJobs("ns").Get(ctx, "pt", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return tfNow.Status.Phase == v1beta1.JobPending && ptNow.Status.Phase == v1beta1.JobPending, nil
	})
	if err != nil {
		t.Fatalf("the jobs were not reconciled: %v", err)
	}
	if !c.HasSynced() {
		t.Errorf("HasSynced is false while running")
	}
	cancel()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatalf("Run did not return after the context ended")
	}
}

// A deadline is met by a delayed requeue on the work queue, driven here by
// the test's clock: the job is not looked at again before it is due.
func TestDeadlineRequeueThroughQueue(t *testing.T) {
	job := newTFJob("j").withReplicas("worker", 1).withDeadline(60).obj()
	f := newFixture(t, job)
	f.c.queue.Add(keyOf(job))
	if !f.c.processNextItem(f.ctx, f.c.queue) {
		t.Fatalf("the queue shut down")
	}
	if n := f.c.queue.Len(); n != 0 {
		t.Fatalf("queue length %d right after the sync, want 0", n)
	}
	f.clock.Step(59 * time.Second)
	time.Sleep(10 * time.Millisecond) // give the queue's timer goroutine a chance to misbehave
	if n := f.c.queue.Len(); n != 0 {
		t.Fatalf("the job came back %d times before its deadline", n)
	}
	f.clock.Step(time.Second)
	err := wait.PollUntilContextTimeout(f.ctx, 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return f.c.queue.Len() == 1, nil
	})
	if err != nil {
		t.Fatalf("the job was not requeued at its deadline")
	}
	f.observe()
	if !f.c.processNextItem(f.ctx, f.c.queue) {
		t.Fatalf("the queue shut down")
	}
	f.observe()
	assertCondition(t, f.status(job), v1beta1.ConditionFailed, metav1.ConditionTrue, ReasonDeadlineExceeded)
	f.c.queue.ShutDown()
}
