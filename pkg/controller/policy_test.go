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
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

func TestOutcomeRules(t *testing.T) {
	cases := []struct {
		name    string
		job     *jobBuilder
		succeed []string // pods that succeed; the others keep running
		want    v1beta1.JobPhase
	}{
		{"tf: chief succeeds", newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 2).withReplicas("ps", 1),
			[]string{"j-chief-0"}, v1beta1.JobSucceeded},
		{"tf: worker 0 does not decide when there is a chief", newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 2),
			[]string{"j-worker-0", "j-worker-1"}, v1beta1.JobRunning},
		{"tf: without chief, worker 0 succeeds", newTFJob("j").withReplicas("worker", 3).withReplicas("ps", 1),
			[]string{"j-worker-0"}, v1beta1.JobSucceeded},
		{"tf: without chief, another worker does not decide", newTFJob("j").withReplicas("worker", 3),
			[]string{"j-worker-1", "j-worker-2"}, v1beta1.JobRunning},
		{"tf: ps and evaluator never decide", newTFJob("j").withReplicas("worker", 1).withReplicas("ps", 1).withReplicas("evaluator", 1),
			[]string{"j-ps-0", "j-evaluator-0"}, v1beta1.JobRunning},
		{"pytorch: master succeeds", newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 2),
			[]string{"j-master-0"}, v1beta1.JobSucceeded},
		{"pytorch: workers do not decide when there is a master", newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 2),
			[]string{"j-worker-0", "j-worker-1"}, v1beta1.JobRunning},
		{"pytorch: without master, every pod succeeded", newPyTorchJob("j").withReplicas("node", 2).withReplicas("ps", 1),
			[]string{"j-node-0", "j-node-1", "j-ps-0"}, v1beta1.JobSucceeded},
		{"pytorch: without master, one pod still running", newPyTorchJob("j").withReplicas("node", 2).withReplicas("ps", 1),
			[]string{"j-node-0", "j-node-1"}, v1beta1.JobRunning},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := tc.job.obj()
			f := newFixture(t, job)
			f.start(job)
			for _, p := range tc.succeed {
				f.setPod(p, succeeded)
			}
			f.step(job)
			st := f.status(job)
			assertPhase(t, st, tc.want)
			if tc.want == v1beta1.JobSucceeded {
				assertCondition(t, st, v1beta1.ConditionCompleted, metav1.ConditionTrue, ReasonSucceeded)
				assertCondition(t, st, v1beta1.ConditionRunning, metav1.ConditionFalse, "Succeeded")
				if condition(st, v1beta1.ConditionFailed) != nil {
					t.Errorf("a succeeded job has a Failed condition")
				}
				if st.CompletionTime == nil || !st.CompletionTime.Time.Equal(testStart) {
					t.Errorf("completionTime %v", st.CompletionTime)
				}
				if !hasEvent(f.events(), corev1.EventTypeNormal, ReasonSucceeded) {
					t.Errorf("no Succeeded event")
				}
			} else if st.CompletionTime != nil || condition(st, v1beta1.ConditionCompleted) != nil {
				t.Errorf("a running job has completionTime %v / Completed condition", st.CompletionTime)
			}
		})
	}
}

func TestRestartPolicies(t *testing.T) {
	type outcome int
	const (
		keeps   outcome = iota // the replica stays as it is
		restart                // replaced; backoff used
		replace                // replaced; backoff not used
		fails                  // the job fails
	)
	cases := []struct {
		policy v1beta1.RestartPolicy
		pod    func(*corev1.Pod)
		desc   string
		want   outcome
	}{
		{v1beta1.RestartPolicyNever, failed(1), "exit 1", fails},
		{v1beta1.RestartPolicyNever, succeeded, "exit 0", keeps},
		{v1beta1.RestartPolicyOnFailure, failed(1), "exit 1", restart},
		{v1beta1.RestartPolicyOnFailure, succeeded, "exit 0", keeps},
		{v1beta1.RestartPolicyAlways, failed(2), "exit 2", restart},
		{v1beta1.RestartPolicyAlways, succeeded, "exit 0", replace},
		{v1beta1.RestartPolicyExitCode, failed(130), "exit 130", restart},
		{v1beta1.RestartPolicyExitCode, failed(137), "exit 137", restart},
		{v1beta1.RestartPolicyExitCode, failed(138), "exit 138", restart},
		{v1beta1.RestartPolicyExitCode, failed(143), "exit 143", restart},
		{v1beta1.RestartPolicyExitCode, failed(1), "exit 1", fails},
		{v1beta1.RestartPolicyExitCode, failed(139), "exit 139", fails},
		{v1beta1.RestartPolicyExitCode, succeeded, "exit 0", keeps},
		{v1beta1.RestartPolicyExitCode, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed; p.Status.Reason = "UnexpectedAdmissionError" },
			"no exit code", restart},
		{"", failed(1), "exit 1 (policy unset)", fails},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%s", restartPolicyName(tc.policy), tc.desc), func(t *testing.T) {
			job := newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 2).
				withRestartPolicy("worker", tc.policy).raw()
			job.CommonSpec().RunPolicy.BackoffLimit = nil // defaults to 3 even when unset
			f := newFixture(t, job)
			f.start(job)
			f.setPod("j-worker-1", tc.pod)
			f.mustSync(job)
			deleted := f.deletedPodNames()
			st := f.status(job)
			events := f.events()
			f.observe()

			switch tc.want {
			case keeps:
				assertPhase(t, st, v1beta1.JobRunning)
				if len(deleted) != 0 || st.BackoffCount != 0 || st.Tasks[1].RestartCount != 0 {
					t.Fatalf("deleted %v, backoff %d, restarts %d; want nothing", deleted, st.BackoffCount, st.Tasks[1].RestartCount)
				}
			case restart, replace:
				assertPhase(t, st, v1beta1.JobRunning)
				if !equalStrings(deleted, []string{"j-worker-1"}) {
					t.Fatalf("deleted %v, want [j-worker-1]", deleted)
				}
				wantBackoff := int32(1)
				if tc.want == replace {
					wantBackoff = 0
				}
				if st.BackoffCount != wantBackoff || st.Tasks[1].RestartCount != 1 {
					t.Fatalf("backoff %d restarts %d, want %d and 1", st.BackoffCount, st.Tasks[1].RestartCount, wantBackoff)
				}
				if st.Tasks[1].ReplicaStatus[1].Phase != v1beta1.ReplicaDeleted {
					t.Errorf("replaced replica phase %q, want Deleted", st.Tasks[1].ReplicaStatus[1].Phase)
				}
				if !hasEvent(events, corev1.EventTypeWarning, ReasonRestarting) && !hasEvent(events, corev1.EventTypeNormal, ReasonRestarting) {
					t.Errorf("no Restarting event: %v", events)
				}
				// The pod is gone: the same name is created again, once
				// the backoff passed unless the exit was a disruption.
				{
					f.mustSync(job)
					if got := f.createdPodNames(); len(got) != 0 {
						t.Fatalf("recreated %v before the backoff passed", got)
					}
					f.clock.Step(DefaultRestartBackoffBase)
				}
				f.mustSync(job)
				if got := f.createdPodNames(); !equalStrings(got, []string{"j-worker-1"}) {
					t.Fatalf("recreated %v, want [j-worker-1]", got)
				}
				f.observe()
				if st := f.status(job); st.Tasks[1].ReplicaStatus[1].Phase != v1beta1.ReplicaCreating || st.BackoffCount != wantBackoff {
					t.Errorf("after recreation: phase %q backoff %d", st.Tasks[1].ReplicaStatus[1].Phase, st.BackoffCount)
				}
			case fails:
				assertPhase(t, st, v1beta1.JobFailed)
				assertCondition(t, st, v1beta1.ConditionFailed, metav1.ConditionTrue, ReasonReplicaFailed)
				assertCondition(t, st, v1beta1.ConditionCompleted, metav1.ConditionTrue, ReasonFailed)
				assertCondition(t, st, v1beta1.ConditionReplicaFailure, metav1.ConditionTrue, ReasonReplicaFailed)
				if st.BackoffCount != 0 {
					t.Errorf("backoff %d, want 0", st.BackoffCount)
				}
				// Clean-up policy Unfinished: the running pods go, the failed one stays.
				if !equalStrings(deleted, []string{"j-chief-0", "j-worker-0"}) {
					t.Errorf("deleted %v, want the unfinished pods", deleted)
				}
				if !hasEvent(events, corev1.EventTypeWarning, ReasonReplicaFailed) {
					t.Errorf("no ReplicaFailed event: %v", events)
				}
			}
		})
	}
}

func TestDisruptionsDoNotUseBackoff(t *testing.T) {
	for name, disrupt := range map[string]func(*corev1.Pod){
		"evicted":    evicted,
		"preemption": disruptedByPreemption,
	} {
		t.Run(name, func(t *testing.T) {
			job := newTFJob("j").withReplicas("worker", 2).withBackoffLimit(0).obj() // restart policy Never
			f := newFixture(t, job)
			f.start(job)
			f.setPod("j-worker-1", disrupt)
			f.mustSync(job)
			if got := f.deletedPodNames(); !equalStrings(got, []string{"j-worker-1"}) {
				t.Fatalf("deleted %v", got)
			}
			f.observe()
			st := f.status(job)
			assertPhase(t, st, v1beta1.JobRunning)
			if st.BackoffCount != 0 || st.Tasks[0].RestartCount != 1 {
				t.Fatalf("backoff %d restarts %d, want 0 and 1", st.BackoffCount, st.Tasks[0].RestartCount)
			}
			f.mustSync(job)
			if got := f.createdPodNames(); !equalStrings(got, []string{"j-worker-1"}) {
				t.Fatalf("recreated %v", got)
			}
		})
	}
}

func TestBackoffLimit(t *testing.T) {
	t.Run("shared by every replica", func(t *testing.T) {
		job := newTFJob("j").withReplicas("worker", 2).withReplicas("ps", 1).
			withRestartPolicy("worker", v1beta1.RestartPolicyOnFailure).
			withRestartPolicy("ps", v1beta1.RestartPolicyOnFailure).
			withBackoffLimit(2).obj()
		f := newFixture(t, job)
		f.start(job)
		for i, pod := range []string{"j-worker-1", "j-ps-0"} {
			f.setPod(pod, failed(1))
			f.step(job) // delete
			f.clock.Step(DefaultRestartBackoffBase)
			f.step(job) // recreate
			f.setPod(pod, running)
			f.step(job)
			if st := f.status(job); st.BackoffCount != int32(i+1) || st.Phase != v1beta1.JobRunning {
				t.Fatalf("after failure %d: backoff %d phase %s", i+1, st.BackoffCount, st.Phase)
			}
		}
		f.events()
		// A third failure would need restart number 3 > backoffLimit 2. The
		// kernel's OOM killer ends it, and the job says so.
		f.setPod("j-worker-0", func(p *corev1.Pod) {
			failed(137)(p)
			p.Status.ContainerStatuses[0].State.Terminated.Reason = "OOMKilled"
			p.Status.ContainerStatuses[0].State.Terminated.Message = "allocating 2 GiB for the batch"
		})
		f.mustSync(job)
		st := f.status(job)
		assertPhase(t, st, v1beta1.JobFailed)
		assertCondition(t, st, v1beta1.ConditionFailed, metav1.ConditionTrue, ReasonBackoffLimitExceeded)
		const wantMessage = "the job has used all 2 of its restarts, and replica worker-0 OOMKilled (exit 137): allocating 2 GiB for the batch"
		if got := condition(st, v1beta1.ConditionFailed).Message; got != wantMessage {
			t.Errorf("Failed condition message %q, want %q", got, wantMessage)
		}
		if last := st.Tasks[0].ReplicaStatus[0].Containers[0].LastTermination; last == nil || last.Reason != "OOMKilled" || last.ExitCode != 137 {
			t.Errorf("worker-0's recorded last termination %+v, want OOMKilled with 137", last)
		}
		if st.BackoffCount != 2 {
			t.Errorf("backoff %d, want 2", st.BackoffCount)
		}
		if st.Tasks[0].RestartCount != 1 || st.Tasks[1].RestartCount != 1 {
			t.Errorf("restart counts %d/%d, want 1/1", st.Tasks[0].RestartCount, st.Tasks[1].RestartCount)
		}
		if !hasEvent(f.events(), corev1.EventTypeWarning, ReasonBackoffLimitExceeded) {
			t.Errorf("no BackoffLimitExceeded event")
		}
		if got := f.createdPodNames(); len(got) != 0 {
			t.Errorf("created %v after the job failed", got)
		}
	})
	t.Run("zero fails on the first failure", func(t *testing.T) {
		job := newTFJob("j").withReplicas("worker", 1).withRestartPolicy("worker", v1beta1.RestartPolicyAlways).withBackoffLimit(0).obj()
		f := newFixture(t, job)
		f.start(job)
		f.setPod("j-worker-0", failed(137))
		f.step(job)
		st := f.status(job)
		assertPhase(t, st, v1beta1.JobFailed)
		assertCondition(t, st, v1beta1.ConditionFailed, metav1.ConditionTrue, ReasonBackoffLimitExceeded)
	})
}

// A failure is counted once, even when the delete that should follow fails
// and the next reconcile sees the same failed pod again.
func TestFailureCountedOnce(t *testing.T) {
	job := newTFJob("j").withReplicas("worker", 2).withRestartPolicy("worker", v1beta1.RestartPolicyOnFailure).obj()
	f := newFixture(t, job)
	f.start(job)
	f.setPod("j-worker-0", failed(1))
	f.failNext("delete", "pods", 1, apierrors.NewInternalError(fmt.Errorf("etcd hiccup")))
	if _, err := f.sync(job); err == nil {
		t.Fatalf("a failed delete should be retried")
	}
	f.observe()
	if st := f.status(job); st.BackoffCount != 1 {
		t.Fatalf("backoff %d after the first reconcile, want 1", st.BackoffCount)
	}
	// The pod is still there, failed, without deletionTimestamp.
	f.mustSync(job)
	if got := f.deletedPodNames(); !equalStrings(got, []string{"j-worker-0"}) {
		t.Fatalf("deleted %v, want the delete to be repeated", got)
	}
	if f.statusUpdates() != 0 {
		t.Errorf("the repeated delete changed the status")
	}
	f.observe()
	if st := f.status(job); st.BackoffCount != 1 || st.Tasks[0].RestartCount != 1 {
		t.Fatalf("backoff %d restarts %d, want 1 and 1", st.BackoffCount, st.Tasks[0].RestartCount)
	}
}

// A replacement waits until the old pod is really gone: the name is taken
// until then.
func TestRestartWaitsForTheName(t *testing.T) {
	job := newTFJob("j").withReplicas("worker", 1).withRestartPolicy("worker", v1beta1.RestartPolicyOnFailure).obj()
	f := newFixture(t, job)
	f.gracefulDeletes()
	f.start(job)
	f.setPod("j-worker-0", failed(1))
	f.step(job)
	p := f.pod("j-worker-0")
	if p == nil || p.DeletionTimestamp == nil {
		t.Fatalf("the failed pod should be terminating: %+v", p)
	}
	for range 3 {
		f.step(job)
	}
	if st := f.status(job); st.BackoffCount != 1 || st.Tasks[0].ReplicaStatus[0].Phase != v1beta1.ReplicaDeleted {
		t.Fatalf("backoff %d, replica %+v while the pod terminates; want 1 and Deleted",
			st.BackoffCount, st.Tasks[0].ReplicaStatus[0])
	}
	f.mustSync(job)
	if got := f.createdPodNames(); len(got) != 0 {
		t.Fatalf("created %v while the old pod still holds the name", got)
	}
	f.observe()
	f.removePod("j-worker-0")
	f.clock.Step(DefaultRestartBackoffBase)
	f.mustSync(job)
	if got := f.createdPodNames(); !equalStrings(got, []string{"j-worker-0"}) {
		t.Fatalf("created %v once the name was free", got)
	}
}

func TestExitCode(t *testing.T) {
	a := podbuilder.TensorFlow
	pod := func(statuses ...corev1.ContainerStatus) *corev1.Pod {
		return &corev1.Pod{
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "sidecar"}, {Name: "tensorflow"}}},
			Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: statuses},
		}
	}
	term := func(name string, code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
	}
	cases := []struct {
		name  string
		pod   *corev1.Pod
		code  int32
		known bool
	}{
		{"training container decides", pod(term("sidecar", 1), term("tensorflow", 137)), 137, true},
		{"else the first non-zero", pod(term("sidecar", 2)), 2, true},
		{"none", pod(), 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, known := exitCode(a, tc.pod)
			if code != tc.code || known != tc.known {
				t.Fatalf("exitCode = %d, %v; want %d, %v", code, known, tc.code, tc.known)
			}
		})
	}
}
