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
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// Kueue's waitForPodsReady, on by default from Kueue v0.19: the e2e stack
// runs it with a short timeout (E2E_KUEUE_PODS_READY_TIMEOUT) and Kueue's
// v1beta1 unserved, as Kueue v0.20 ships it.

// podsReadyTimeout is the stack's waitForPodsReady timeout; tests that wait
// it out skip on a stack where it is long.
func podsReadyTimeout(t *testing.T) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(os.Getenv("E2E_KUEUE_PODS_READY_TIMEOUT"))
	if err != nil || d > 5*time.Minute {
		t.Skipf("Kueue's waitForPodsReady timeout is %q; these tests need one of minutes (hack/test-e2e.sh sets 90s)",
			os.Getenv("E2E_KUEUE_PODS_READY_TIMEOUT"))
	}
	return d
}

// workloadHistory records what a job's Workload went through, from a
// watch: each PodsReady (status/reason) it showed and whether it was ever
// evicted.
type workloadHistory struct {
	mu        sync.Mutex
	podsReady []string
	evictions []string
}

func (h *workloadHistory) PodsReady() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.podsReady)
}

func (h *workloadHistory) Evictions() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.evictions)
}

// watchWorkload records the job's Workload until the test ends.
func watchWorkload(t *testing.T, f *framework.Framework, ref framework.JobRef) *workloadHistory {
	t.Helper()
	name := framework.WorkloadName(ref)
	ctx, cancel := context.WithCancel(context.Background())
	w, err := f.Kueue().KueueV1beta2().Workloads(f.Namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
	})
	if err != nil {
		cancel()
		t.Fatalf("watching Workload %s: %v", name, err)
	}
	h := &workloadHistory{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		evicted := false
		for ev := range w.ResultChan() {
			wl, ok := ev.Object.(*kueuev1beta2.Workload)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			h.mu.Lock()
			if c := apimeta.FindStatusCondition(wl.Status.Conditions, kueuev1beta2.WorkloadPodsReady); c != nil {
				seen := fmt.Sprintf("%s/%s", c.Status, c.Reason)
				if n := len(h.podsReady); n == 0 || h.podsReady[n-1] != seen {
					h.podsReady = append(h.podsReady, seen)
				}
			}
			c := apimeta.FindStatusCondition(wl.Status.Conditions, kueuev1beta2.WorkloadEvicted)
			now := c != nil && c.Status == metav1.ConditionTrue
			if now && !evicted {
				h.evictions = append(h.evictions, c.Reason)
			}
			evicted = now
			h.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		w.Stop()
		cancel()
		<-done
	})
	return h
}

// TestKueueV1beta1Unserved: the stack serves Kueue's v1beta2 and not its
// v1beta1, as Kueue v0.20 does; every Kueue test runs on it, so none of
// them needs the old version.
func TestKueueV1beta1Unserved(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "kueue-versions")
	needsKueue(t, f)
	if os.Getenv("E2E_KUEUE_V1BETA1") == "1" {
		t.Skip("the stack serves Kueue's v1beta1 (LOCAL_KUEUE_V1BETA1=1)")
	}
	if f.KueueV1beta1Served() {
		t.Fatalf("the stack serves kueue.x-k8s.io/v1beta1 workloads; hack/test-e2e.sh marks v1beta1 unserved, as Kueue v0.20 ships it")
	}
	res := f.Kubectl("get", "workloads.v1beta1.kueue.x-k8s.io", "-A")
	if res.Err == nil {
		t.Errorf("kubectl get workloads.v1beta1.kueue.x-k8s.io succeeded: %s", res.Stdout)
	}
}

// TestKueuePodsReady: an admitted job's Workload reports PodsReady as the
// pods start (False WaitForStart, then True Started), False
// WaitForRecovery when a running job loses a pod, and True Recovered once
// its replacement is ready; the job is never evicted for it.
func TestKueuePodsReady(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "kueue-podsready")
	needsKueue(t, f)
	pool := f.NewNodePool(1, 8)
	queue := f.NewKueueQueue(pool, 8, "lq")
	ref := f.Create(framework.NewPyTorchJob("steady").WithReplicas("master", 1).WithReplicas("worker", 2).GPUs(1).
		WithRestartPolicy("worker", v1beta1.RestartPolicyOnFailure).
		Label("kueue.x-k8s.io/queue-name", queue).ExitCode(0).RunFor("40s"))
	history := watchWorkload(t, f, ref)
	f.WaitForRunningPods(ref, 3)
	f.Eventually(framework.Timeout, "PodsReady True (Started)", func(context.Context) (bool, error) {
		return slices.Contains(history.PodsReady(), "True/"+kueuev1beta2.WorkloadStarted), nil
	})
	victim := ref.Name + "-worker-1"
	if err := f.Kube.CoreV1().Pods(f.Namespace).Delete(f.Context(), victim, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting pod %s: %v", victim, err)
	}
	f.Eventually(framework.Timeout, "PodsReady True (Recovered) after the lost pod", func(context.Context) (bool, error) {
		return slices.Contains(history.PodsReady(), "True/"+kueuev1beta2.WorkloadRecovered), nil
	})
	checkSucceeded(t, f.WaitForPhase(ref, v1beta1.JobSucceeded))
	want := []string{"True/" + kueuev1beta2.WorkloadStarted, "False/" + kueuev1beta2.WorkloadWaitForRecovery,
		"True/" + kueuev1beta2.WorkloadRecovered}
	got := history.PodsReady()
	// Whether the watch saw the False WaitForStart before the pods were
	// ready depends on timing; the rest must come in order.
	got = slices.DeleteFunc(got, func(s string) bool { return s == "False/"+kueuev1beta2.WorkloadWaitForStart })
	if !slices.Equal(got, want) {
		t.Errorf("PodsReady went %v, want %v", history.PodsReady(), want)
	}
	if ev := history.Evictions(); len(ev) != 0 {
		t.Errorf("the Workload was evicted: %v", ev)
	}
}

// TestKueuePodsReadyTimeout: a job whose pods cannot start within Kueue's
// timeout (they need a node label no node has yet) is evicted by Kueue; its
// status and an event say so, its pods go, and it is requeued. Once a node
// carries the label, Kueue admits it again after its backoff and it runs
// to success.
func TestKueuePodsReadyTimeout(t *testing.T) {
	t.Parallel()
	timeout := podsReadyTimeout(t)
	f := framework.New(t, "kueue-podstimeout")
	needsKueue(t, f)
	pool := f.NewNodePool(1, 8)
	queue := f.NewKueueQueue(pool, 8, "lq")
	const lateLabel = "e2e.tensorstack.dev/late"
	ref := f.Create(framework.NewPyTorchJob("late").WithReplicas("master", 1).WithReplicas("worker", 1).GPUs(1).
		Label("kueue.x-k8s.io/queue-name", queue).NodeSelector(lateLabel, "yes").ExitCode(0).RunFor("5s"))
	history := watchWorkload(t, f, ref)
	admitted := time.Now()
	f.WaitForPods(ref, "two pods, unschedulable", framework.Timeout, func(pods []corev1.Pod) (bool, error) {
		return len(pods) == 2, nil
	})
	job := f.WaitForJob(ref, "evicted for the PodsReady timeout", timeout+framework.Timeout, func(job v1beta1.TrainingJob) (bool, error) {
		return queuedReason(job) == kueuev1beta2.WorkloadEvictedByPodsReadyTimeout, nil
	})
	evictedAfter := time.Since(admitted)
	t.Logf("evicted %.0fs after the pods were created (timeout %s): %s", evictedAfter.Seconds(), timeout,
		framework.Condition(job, v1beta1.ConditionQueued).Message)
	if evictedAfter < timeout-5*time.Second {
		t.Errorf("evicted after %s, before Kueue's timeout %s", evictedAfter, timeout)
	}
	f.WaitForNoPods(ref, framework.Timeout)
	f.Eventually(framework.Timeout, "a Warning event for the eviction", func(ctx context.Context) (bool, error) {
		events, err := f.JobEvents(ctx, ref)
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(events, func(e corev1.Event) bool {
			return e.Type == corev1.EventTypeWarning && e.Reason == kueuev1beta2.WorkloadEvictedByPodsReadyTimeout
		}), nil
	})
	wl, err := f.Workload(f.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if wl.Status.RequeueState == nil || wl.Status.RequeueState.Count == nil || *wl.Status.RequeueState.Count != 1 {
		t.Errorf("requeueState %+v, want a count of 1", wl.Status.RequeueState)
	}

	// The label arrives: after Kueue's backoff the job is admitted again,
	// starts and succeeds.
	node, err := f.Kube.CoreV1().Nodes().Get(f.Context(), pool.Nodes[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Labels[lateLabel] = "yes"
	if _, err := f.Kube.CoreV1().Nodes().Update(f.Context(), node, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("labelling node %s: %v", node.Name, err)
	}
	requeued := time.Now()
	f.WaitForJob(ref, "admitted again and running", 3*time.Minute, func(job v1beta1.TrainingJob) (bool, error) {
		c := framework.Condition(job, v1beta1.ConditionQueued)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1beta1.ReasonAdmitted &&
			job.JobStatus().Phase == v1beta1.JobRunning, nil
	})
	t.Logf("running again %.0fs after the label (Kueue's requeue backoff)", time.Since(requeued).Seconds())
	checkSucceeded(t, f.WaitForPhase(ref, v1beta1.JobSucceeded))
	if ev := history.Evictions(); !slices.Equal(ev, []string{kueuev1beta2.WorkloadEvictedByPodsReadyTimeout}) {
		t.Errorf("evictions %v, want one for the PodsReady timeout", ev)
	}
}

// TestKueueRunsLongerThanTimeout: a job that runs for 2.5 times Kueue's
// PodsReady timeout (225s against 90s on the e2e stack) is never evicted:
// its Workload says its pods are ready once they are. Before the controller
// reported PodsReady, Kueue v0.19 evicted every such job.
func TestKueueRunsLongerThanTimeout(t *testing.T) {
	t.Parallel()
	timeout := podsReadyTimeout(t)
	f := framework.New(t, "kueue-longrun")
	needsKueue(t, f)
	pool := f.NewNodePool(1, 8)
	queue := f.NewKueueQueue(pool, 8, "lq")
	runFor := timeout * 5 / 2
	ref := f.Create(fourGPUJob("long", queue).ExitCode(0).RunFor(runFor.String()))
	history := watchWorkload(t, f, ref)
	pods := f.WaitForRunningPods(ref, 4)
	uids := map[string]string{}
	for _, p := range pods {
		uids[p.Name] = string(p.UID)
	}
	job := f.WaitForJob(ref, "succeeded", runFor+framework.Timeout, func(job v1beta1.TrainingJob) (bool, error) {
		return job.JobStatus().Phase.IsFinished(), nil
	})
	checkSucceeded(t, job)
	if ev := history.Evictions(); len(ev) != 0 {
		t.Errorf("the Workload was evicted %v while its pods ran", ev)
	}
	if got := history.PodsReady(); !slices.Contains(got, "True/"+kueuev1beta2.WorkloadStarted) {
		t.Errorf("PodsReady went %v, never True", got)
	}
	for _, r := range job.JobStatus().Tasks {
		for _, rs := range r.ReplicaStatus {
			if uid := uids[rs.Name]; uid != string(rs.UID) {
				t.Errorf("replica %s ended in pod %s, started in %s: a pod was replaced", rs.Name, rs.UID, uid)
			}
		}
	}
}
