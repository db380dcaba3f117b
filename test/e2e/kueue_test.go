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

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// needsKueue skips a test on a stack without Kueue.
func needsKueue(t *testing.T, f *framework.Framework) {
	t.Helper()
	if !f.KueueServed() {
		t.Skip("the stack runs no Kueue (LOCAL_KUEUE=0)")
	}
}

// fourGPUJob is a PyTorch job of four 1-GPU replicas in the test's queue.
func fourGPUJob(name, queue string) *framework.JobBuilder {
	return fourGPUJobOf(framework.NewPyTorchJob, name, queue)
}

// fourGPUJobOf is fourGPUJob of another kind: a master (an MPI job's
// launcher) and three workers.
func fourGPUJobOf(newJob func(string) *framework.JobBuilder, name, queue string) *framework.JobBuilder {
	job := newJob(name)
	return job.WithReplicas(job.Kind().LeadReplicaType(), 1).WithReplicas("worker", 3).GPUs(1).
		Label("kueue.x-k8s.io/queue-name", queue)
}

func queuedReason(job v1beta1.TrainingJob) string {
	c := framework.Condition(job, v1beta1.ConditionQueued)
	if c == nil || c.Status != metav1.ConditionTrue {
		return ""
	}
	return c.Reason
}

// TestKueueQuota: three 4-GPU jobs in a queue of 8 GPUs: two run, the third
// waits with no pod until one finishes; all three succeed. The pods land on
// the nodes of the ResourceFlavor Kueue assigned.
func TestKueueQuota(t *testing.T) {
	t.Parallel()
	for kind, newJob := range map[string]func(string) *framework.JobBuilder{
		"PyTorchTrainingJob": framework.NewPyTorchJob,
		"XGBoostTrainingJob": framework.NewXGBoostJob,
		"GenericJob":         framework.NewGenericJob,
		"MPIJob":             framework.NewMPIJob,
	} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			testKueueQuota(t, newJob)
		})
	}
}

func testKueueQuota(t *testing.T, newJob func(string) *framework.JobBuilder) {
	f := framework.New(t, "kueue-quota")
	needsKueue(t, f)
	pool := f.NewNodePool(1, 8)
	queue := f.NewKueueQueue(pool, 8, "lq")
	var refs []framework.JobRef
	for _, name := range []string{"a", "b", "c"} {
		refs = append(refs, f.Create(fourGPUJobOf(newJob, name, queue).ExitCode(0).RunFor("15s")))
	}
	var waiting framework.JobRef
	f.Eventually(framework.Timeout, "two jobs running and one queued", func(ctx context.Context) (bool, error) {
		running, queued := 0, 0
		for _, ref := range refs {
			job, err := f.GetJob(ctx, ref)
			if err != nil {
				return false, err
			}
			switch {
			case job.JobStatus().Phase == v1beta1.JobRunning:
				running++
			case queuedReason(job) == v1beta1.ReasonWaitingForAdmission:
				queued++
				waiting = ref
			}
		}
		return running == 2 && queued == 1, nil
	})
	if pods := f.Pods(waiting); len(pods) != 0 {
		t.Errorf("the queued job %s has pods %v", waiting.Name, podSummary(pods))
	}
	if out := f.MustKubectl("get", waiting.KubectlName(), "--no-headers"); !strings.Contains(out, "Pending (WaitingForAdmission)") {
		t.Errorf("kubectl get shows %q for the queued job, want the phase Pending (WaitingForAdmission)", out)
	}
	for _, ref := range refs {
		if ref == waiting {
			continue
		}
		for _, p := range f.Pods(ref) {
			if p.Spec.NodeSelector["e2e.tensorstack.dev/pool"] != pool.Name {
				t.Errorf("pod %s has nodeSelector %v, want the flavor's node labels", p.Name, p.Spec.NodeSelector)
			}
		}
	}
	for _, ref := range refs {
		checkSucceeded(t, f.WaitForPhase(ref, v1beta1.JobSucceeded))
	}
	// Finished jobs give their quota back: their Workloads are Finished.
	f.Eventually(framework.Timeout, "every Workload Finished", func(ctx context.Context) (bool, error) {
		for _, ref := range refs {
			wl, err := f.Workload(ctx, ref)
			if err != nil {
				return false, err
			}
			if !apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueuev1beta2.WorkloadFinished) {
				return false, nil
			}
		}
		return true, nil
	})
}

// TestKueuePreemption: a high-priority job preempts a low-priority one: the
// low one is paused (pods gone, job kept, reason shown), resumes once the
// high one finished, and succeeds. The priorities come from
// spec.scheduler.t9kScheduler, which also gang-schedules both.
func TestKueuePreemption(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "kueue-preempt")
	needsKueue(t, f)
	pool := f.NewNodePool(1, 8)
	queue := f.NewKueueQueue(pool, 8, "lq")
	low := f.Create(framework.NewPyTorchJob("low").WithReplicas("master", 1).WithReplicas("worker", 7).GPUs(1).
		Gang(queue, 10).ExitCode(0).RunFor("20s"))
	f.WaitForRunningPods(low, 8)
	high := f.Create(framework.NewPyTorchJob("high").WithReplicas("master", 1).WithReplicas("worker", 7).GPUs(1).
		Gang(queue, 90).ExitCode(0).RunFor("5s"))
	job := f.WaitForJob(low, "the low-priority job preempted", framework.Timeout, func(job v1beta1.TrainingJob) (bool, error) {
		return job.JobStatus().Phase == v1beta1.JobPaused && queuedReason(job) == "Preempted", nil
	})
	if n := job.JobStatus().BackoffCount; n != 0 {
		t.Errorf("the preempted job's backoffCount is %d, want 0", n)
	}
	f.WaitForNoPods(low, framework.Timeout)
	if out := f.MustKubectl("get", low.KubectlName(), "--no-headers"); !strings.Contains(out, "Paused (Preempted)") {
		t.Errorf("kubectl get shows %q for the preempted job, want the phase Paused (Preempted)", out)
	}
	checkSucceeded(t, f.WaitForPhase(high, v1beta1.JobSucceeded))
	job = f.WaitForPhase(low, v1beta1.JobSucceeded)
	checkSucceeded(t, job)
	if n := job.JobStatus().BackoffCount; n != 0 {
		t.Errorf("backoffCount %d after a preemption, want 0", n)
	}
}

// TestKueueOverQuota: a job larger than the whole queue stays queued, with
// Kueue's reason, and has no pods.
func TestKueueOverQuota(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "kueue-over")
	needsKueue(t, f)
	pool := f.NewNodePool(1, 8)
	queue := f.NewKueueQueue(pool, 8, "lq")
	ref := f.Create(framework.NewPyTorchJob("huge").WithReplicas("master", 1).WithReplicas("worker", 11).GPUs(1).
		Label("kueue.x-k8s.io/queue-name", queue))
	job := f.WaitForJob(ref, "queued with Kueue's reason", framework.Timeout, func(job v1beta1.TrainingJob) (bool, error) {
		c := framework.Condition(job, v1beta1.ConditionQueued)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "insufficient"), nil
	})
	t.Logf("queued: %s", framework.Condition(job, v1beta1.ConditionQueued).Message)
	f.Consistently(5*time.Second, "no pods for a job over the quota", func(ctx context.Context) error {
		if pods := f.Pods(ref); len(pods) != 0 {
			return fmt.Errorf("pods %v", podSummary(pods))
		}
		return nil
	})
}

// TestKueuePauseQueued: pausing a queued job deactivates its Workload,
// resuming queues it again; once there is room it runs.
func TestKueuePauseQueued(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "kueue-pause")
	needsKueue(t, f)
	pool := f.NewNodePool(1, 8)
	queue := f.NewKueueQueue(pool, 4, "lq")
	first := f.Create(fourGPUJob("first", queue).ExitCode(0).RunFor("10s"))
	f.WaitForRunningPods(first, 4)
	second := f.Create(fourGPUJob("second", queue).ExitCode(0).RunFor("1s"))
	f.WaitForJob(second, "queued", framework.Timeout, func(job v1beta1.TrainingJob) (bool, error) {
		return queuedReason(job) == v1beta1.ReasonWaitingForAdmission, nil
	})
	f.MustAction(second, "pause", "")
	f.Eventually(framework.Timeout, "the paused job's Workload inactive", func(ctx context.Context) (bool, error) {
		wl, err := f.Workload(ctx, second)
		if err != nil {
			return false, err
		}
		return wl.Spec.Active != nil && !*wl.Spec.Active, nil
	})
	f.WaitForPhase(second, v1beta1.JobPaused)
	f.MustAction(second, "resume", "")
	f.Eventually(framework.Timeout, "the resumed job's Workload active", func(ctx context.Context) (bool, error) {
		wl, err := f.Workload(ctx, second)
		if err != nil {
			return false, err
		}
		return wl.Spec.Active == nil || *wl.Spec.Active, nil
	})
	checkSucceeded(t, f.WaitForPhase(first, v1beta1.JobSucceeded))
	checkSucceeded(t, f.WaitForPhase(second, v1beta1.JobSucceeded))
}

// TestKueueMissingQueue: a job naming a LocalQueue that does not exist
// waits with no pod, and its Queued condition carries Kueue's word on it.
func TestKueueMissingQueue(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "kueue-noqueue")
	needsKueue(t, f)
	ref := f.Create(fourGPUJob("lost", "no-such-queue"))
	job := f.WaitForJob(ref, "queued, naming the missing queue", framework.Timeout, func(job v1beta1.TrainingJob) (bool, error) {
		c := framework.Condition(job, v1beta1.ConditionQueued)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "no-such-queue") &&
			strings.Contains(c.Message, "exist"), nil
	})
	t.Logf("queued: %s", framework.Condition(job, v1beta1.ConditionQueued).Message)
	if pods := f.Pods(ref); len(pods) != 0 {
		t.Errorf("pods %v of a job whose queue does not exist", podSummary(pods))
	}
}
