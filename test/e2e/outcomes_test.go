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
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// podHistory records every pod UID of a job seen while polling, with its
// creation time, per pod name.
type podHistory struct {
	created map[types.UID]time.Time
	byName  map[string][]types.UID
}

func newPodHistory() *podHistory {
	return &podHistory{created: map[types.UID]time.Time{}, byName: map[string][]types.UID{}}
}

func (h *podHistory) record(pods []corev1.Pod) {
	for _, p := range pods {
		if _, seen := h.created[p.UID]; seen {
			continue
		}
		h.created[p.UID] = p.CreationTimestamp.Time
		h.byName[p.Name] = append(h.byName[p.Name], p.UID)
	}
}

// waitRecording polls the job and its pods until cond holds, recording the
// pods it sees.
func waitRecording(f *framework.Framework, ref framework.JobRef, h *podHistory, desc string, timeout time.Duration,
	cond func(job v1beta1.TrainingJob) bool) v1beta1.TrainingJob {
	f.T.Helper()
	var last v1beta1.TrainingJob
	f.Eventually(timeout, desc, func(ctx context.Context) (bool, error) {
		h.record(f.Pods(ref))
		job, err := f.GetJob(ctx, ref)
		if err != nil {
			return false, err
		}
		last = job
		return cond(job), nil
	})
	return last
}

// TestRestartBackoffSpacing: a replica that fails on every run is started
// again after 10 s, then 20 s, counted from each exit; the status shows the
// wait; the job fails with BackoffLimitExceeded once its restarts are used.
func TestRestartBackoffSpacing(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "backoff")
	ref := f.Create(framework.NewTFJob("flaky").WithReplicas("worker", 1).
		WithRestartPolicy("worker", v1beta1.RestartPolicyOnFailure).ExitCode(1).RunFor("1s").BackoffLimit(2))
	h := newPodHistory()
	waitRecording(f, ref, h, "the replica waiting out its backoff", framework.Timeout, func(job v1beta1.TrainingJob) bool {
		st := job.JobStatus()
		return len(st.Tasks) == 1 && st.Tasks[0].ReplicaStatus[0].Reason == "BackOff" && st.Tasks[0].ReplicaStatus[0].RestartAt != nil
	})
	job := waitRecording(f, ref, h, "the job failing", framework.Timeout, func(job v1beta1.TrainingJob) bool {
		return job.JobStatus().Phase == v1beta1.JobFailed
	})
	checkFailed(t, job, "BackoffLimitExceeded")
	if n := job.JobStatus().BackoffCount; n != 2 {
		t.Errorf("backoffCount %d, want 2", n)
	}
	uids := h.byName["flaky-worker-0"]
	if len(uids) != 3 {
		t.Fatalf("saw %d pods of the worker, want 3 (two restarts)", len(uids))
	}
	var created []time.Time
	for _, uid := range uids {
		created = append(created, h.created[uid])
	}
	sort.Slice(created, func(i, j int) bool { return created[i].Before(created[j]) })
	first, second := created[1].Sub(created[0]), created[2].Sub(created[1])
	t.Logf("pods created %v apart, then %v (each pod runs 1 s)", first, second)
	// Creation times have a resolution of a second.
	if first < 10*time.Second || second < 20*time.Second {
		t.Errorf("restarts %v and %v apart, want at least 10 s and 20 s", first, second)
	}
}

// TestRestartJobRecreatesEveryPod: with a RestartJob rule, one worker's
// failure replaces every pod of the job, counted once.
func TestRestartJobRecreatesEveryPod(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "restartjob")
	ref := f.Create(framework.NewPyTorchJob("nccl").WithReplicas("master", 1).WithReplicas("worker", 2).
		Forever("master").Forever("worker").BackoffLimit(3).
		FailurePolicy(v1beta1.FailurePolicyRule{Action: v1beta1.FailurePolicyActionRestartJob,
			ReplicaTypes: []v1beta1.ReplicaType{"worker"}}))
	before := f.WaitForRunningPods(ref, 3)
	old := map[string]types.UID{}
	var victim corev1.Pod
	for _, p := range before {
		old[p.Name] = p.UID
		if p.Name == "nccl-worker-1" {
			victim = p
		}
	}
	// Make one worker fail as a crashed rank would.
	victim.Status.Phase = corev1.PodFailed
	victim.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "pytorch", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", FinishedAt: metav1.Now()}}}}
	if _, err := f.Kube.CoreV1().Pods(f.Namespace).UpdateStatus(f.Context(), &victim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.WaitForPods(ref, "every pod replaced", framework.Timeout, func(pods []corev1.Pod) (bool, error) {
		if len(pods) != 3 {
			return false, nil
		}
		for _, p := range pods {
			if p.UID == old[p.Name] || p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
		}
		return true, nil
	})
	// The status follows the pods after the controller's batch period.
	job := f.WaitForPhase(ref, v1beta1.JobRunning)
	if n := job.JobStatus().BackoffCount; n != 1 {
		t.Errorf("backoffCount %d after one job restart, want 1", n)
	}
}

// TestDeletedSucceededWorkerNotRerun: deleting the pod of a worker that
// succeeded does not run the worker again.
func TestDeletedSucceededWorkerNotRerun(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "no-rerun")
	ref := f.Create(framework.NewTFJob("done").WithReplicas("chief", 1).WithReplicas("worker", 2).
		Forever("chief").ExitCode(0).RunFor("1s"))
	f.WaitForJob(ref, "worker-0 recorded as succeeded", framework.Timeout, func(job v1beta1.TrainingJob) (bool, error) {
		st := job.JobStatus()
		return len(st.Tasks) == 2 && st.Tasks[1].ReplicaStatus[0].Phase == v1beta1.ReplicaSucceeded, nil
	})
	// A running job keeps its topology: resizing it is refused until paused.
	r := f.KubectlNS("patch", ref.KubectlName(), "-p", `{"spec":{"replicaSpecs":[{"type":"worker","replicas":3}]}}`)
	if r.Err == nil || !strings.Contains(r.Stderr, "spec.replicaSpecs[1].replicas") || !strings.Contains(r.Stderr, "pause the job first") {
		t.Errorf("resizing a running job was not refused with the field and what to do: %s", r)
	}
	if err := f.Kube.CoreV1().Pods(f.Namespace).Delete(f.Context(), "done-worker-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Eventually(framework.Timeout, "the pod gone", func(ctx context.Context) (bool, error) {
		_, err := f.Kube.CoreV1().Pods(f.Namespace).Get(ctx, "done-worker-0", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	// Longer than the first restart delay.
	f.Consistently(15*time.Second, "worker-0 not run again", func(ctx context.Context) error {
		if _, err := f.Kube.CoreV1().Pods(f.Namespace).Get(ctx, "done-worker-0", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("pod done-worker-0 exists again (err %v)", err)
		}
		job, err := f.GetJob(ctx, ref)
		if err != nil {
			return err
		}
		if rs := job.JobStatus().Tasks[1].ReplicaStatus[0]; rs.Phase != v1beta1.ReplicaSucceeded {
			return fmt.Errorf("worker-0 is %s", rs.Phase)
		}
		return nil
	})
}

// TestDeletedJobLeavesNoPodOnFinalizer: the outcome finalizer never keeps a
// pod of a deleted job, deleted in the background or in the foreground.
func TestDeletedJobLeavesNoPodOnFinalizer(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "finalizer")
	for _, cascade := range []string{"background", "foreground"} {
		ref := f.Create(framework.NewTFJob("gone-"+cascade).WithReplicas("worker", 3).Forever("worker"))
		pods := f.WaitForRunningPods(ref, 3)
		for _, p := range pods {
			if !slices.Contains(p.Finalizers, v1beta1.ReplicaOutcomeFinalizer) {
				t.Errorf("pod %s has finalizers %v, want %s", p.Name, p.Finalizers, v1beta1.ReplicaOutcomeFinalizer)
			}
		}
		f.MustKubectl("delete", ref.KubectlName(), "--cascade="+cascade, "--wait=false")
		f.WaitForNoPods(ref, framework.GCTimeout)
		f.WaitForJobGone(ref, framework.GCTimeout)
	}
}
