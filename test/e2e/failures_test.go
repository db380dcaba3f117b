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

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// checkFailed checks the conditions of a Failed job and the Failed
// condition's reason (any CamelCase reason when reason is empty).
func checkFailed(t *testing.T, job v1beta1.TrainingJob, reason string) {
	t.Helper()
	if !framework.HasCondition(job, v1beta1.ConditionCompleted, metav1.ConditionTrue, "Failed") {
		t.Errorf("%s: condition Completed %+v, want True with reason Failed", job.GetName(), framework.Condition(job, v1beta1.ConditionCompleted))
	}
	c := framework.Condition(job, v1beta1.ConditionFailed)
	switch {
	case c == nil || c.Status != metav1.ConditionTrue:
		t.Errorf("%s: condition Failed %+v, want True", job.GetName(), c)
	case reason != "" && c.Reason != reason:
		t.Errorf("%s: condition Failed has reason %q (%s), want %s", job.GetName(), c.Reason, c.Message, reason)
	case c.Reason == "" || c.Reason[0] < 'A' || c.Reason[0] > 'Z':
		t.Errorf("%s: condition Failed has reason %q, want a CamelCase reason", job.GetName(), c.Reason)
	}
	if job.JobStatus().CompletionTime == nil {
		t.Errorf("%s: a failed job has no completionTime", job.GetName())
	}
}

// firstPodUID waits for the job's only pod and returns its UID.
func firstPodUID(f *framework.Framework, ref framework.JobRef) types.UID {
	f.T.Helper()
	pods := f.WaitForPods(ref, "one pod", framework.Timeout, func(pods []corev1.Pod) (bool, error) {
		return len(pods) == 1, nil
	})
	return pods[0].UID
}

// terminatedExitCode returns the exit code of the pod's terminated training
// container, or -1.
func terminatedExitCode(k framework.Kind, p *corev1.Pod) int32 {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == k.ContainerName() && c.State.Terminated != nil {
			return c.State.Terminated.ExitCode
		}
	}
	return -1
}

// TestPermanentExitCodeFailsJob: restartPolicy Never, a pod exits 3: the job
// fails, nothing is restarted, and the failed pod is kept (clean-up policy
// Unfinished keeps terminated pods).
func TestPermanentExitCodeFailsJob(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "fail-never")
	ref := f.Create(framework.NewTFJob("exit3").WithReplicas("worker", 1).ExitCode(3).RunFor("1s"))
	uid := firstPodUID(f, ref)
	job := f.WaitForPhase(ref, v1beta1.JobFailed)
	checkFailed(t, job, "")
	if n := job.JobStatus().BackoffCount; n != 0 {
		t.Errorf("backoffCount %d, want 0: restartPolicy Never restarts nothing", n)
	}
	if !framework.HasCondition(job, v1beta1.ConditionReplicaFailure, metav1.ConditionTrue, "") {
		t.Errorf("condition ReplicaFailure %+v, want True", framework.Condition(job, v1beta1.ConditionReplicaFailure))
	}
	checkReplicaExitCode(t, job, "worker", 3)
	pods := f.Pods(ref)
	if len(pods) != 1 || pods[0].UID != uid || pods[0].Status.Phase != corev1.PodFailed || terminatedExitCode(ref.Kind, &pods[0]) != 3 {
		t.Errorf("pods after the failure: %v, want the original pod %s, Failed with exit code 3", podSummary(pods), uid)
	}
}

// checkReplicaExitCode checks status.tasks reports the exit code of the
// type's first replica.
func checkReplicaExitCode(t *testing.T, job v1beta1.TrainingJob, typ string, code int32) {
	t.Helper()
	for _, task := range job.JobStatus().Tasks {
		if string(task.Type) != typ {
			continue
		}
		for _, rs := range task.ReplicaStatus {
			for _, c := range rs.Containers {
				if c.ExitCode == code {
					return
				}
			}
		}
		t.Errorf("status.tasks[%s] = %+v: no container with exit code %d", typ, task, code)
		return
	}
	t.Errorf("status.tasks %+v has no task %s", job.JobStatus().Tasks, typ)
}

func podSummary(pods []corev1.Pod) []string {
	var s []string
	for _, p := range pods {
		s = append(s, fmt.Sprintf("%s(uid=%s phase=%s deleting=%v)", p.Name, p.UID, p.Status.Phase, p.DeletionTimestamp != nil))
	}
	return s
}

func restartCount(job v1beta1.TrainingJob, typ string) int32 {
	for _, task := range job.JobStatus().Tasks {
		if string(task.Type) == typ {
			return task.RestartCount
		}
	}
	return -1
}

// TestExitCodeRestartPolicy: retryable codes restart the pod until the
// backoff limit, permanent codes fail at once, and a job whose restarted pod
// succeeds succeeds.
func TestExitCodeRestartPolicy(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "exitcode")

	t.Run("retryable code until BackoffLimitExceeded", func(t *testing.T) {
		t.Parallel()
		f := f.For(t)
		ref := f.Create(framework.NewTFJob("killed").WithReplicas("worker", 1).WithRestartPolicy("worker", v1beta1.RestartPolicyExitCode).
			ExitCode(137).RunFor("500ms").BackoffLimit(2))
		uid := firstPodUID(f, ref)
		job := f.WaitForPhase(ref, v1beta1.JobFailed)
		checkFailed(t, job, "BackoffLimitExceeded")
		if n := job.JobStatus().BackoffCount; n != 2 {
			t.Errorf("backoffCount %d, want 2 (the backoffLimit)", n)
		}
		if n := restartCount(job, "worker"); n != 2 {
			t.Errorf("tasks[worker].restartCount %d, want 2", n)
		}
		for _, p := range f.Pods(ref) {
			if p.UID == uid {
				t.Errorf("pod %s is still the first pod: it was never replaced", p.Name)
			}
		}
	})

	t.Run("permanent code fails without restart", func(t *testing.T) {
		t.Parallel()
		f := f.For(t)
		ref := f.Create(framework.NewTFJob("broken").WithReplicas("worker", 1).WithRestartPolicy("worker", v1beta1.RestartPolicyExitCode).
			ExitCode(1).RunFor("1s").BackoffLimit(5))
		uid := firstPodUID(f, ref)
		job := f.WaitForPhase(ref, v1beta1.JobFailed)
		checkFailed(t, job, "")
		if n := job.JobStatus().BackoffCount; n != 0 {
			t.Errorf("backoffCount %d, want 0: exit code 1 is permanent", n)
		}
		pods := f.Pods(ref)
		if len(pods) != 1 || pods[0].UID != uid || terminatedExitCode(ref.Kind, &pods[0]) != 1 {
			t.Errorf("pods %v, want only the first pod %s, terminated with exit code 1", podSummary(pods), uid)
		}
	})

	t.Run("restarted pod succeeds", func(t *testing.T) {
		t.Parallel()
		f := f.For(t)
		ref := f.Create(framework.NewTFJob("recovers").WithReplicas("worker", 1).WithRestartPolicy("worker", v1beta1.RestartPolicyExitCode).
			ExitCode(137).RunFor("1s").BackoffLimit(20))
		f.WaitForJob(ref, "a first restart", framework.Timeout, func(job v1beta1.TrainingJob) (bool, error) {
			if job.JobStatus().Phase.IsFinished() {
				return false, framework.Stop("finished with phase %s", job.JobStatus().Phase)
			}
			return job.JobStatus().BackoffCount >= 1, nil
		})
		// The template of a job with pods changes only with a pause (in the
		// same update); after the resume, pods exit 0.
		f.UpdateJob(ref, func(job v1beta1.TrainingJob) {
			job.CommonSpec().ReplicaSpecs[0].Template.Annotations[framework.AnnotationExitCode] = "0"
			job.CommonSpec().RunMode = &v1beta1.RunMode{Pause: &v1beta1.PauseMode{Enabled: true}}
		})
		f.WaitForPhase(ref, v1beta1.JobPaused)
		f.MustAction(ref, "resume", "")
		job := f.WaitForPhase(ref, v1beta1.JobSucceeded)
		checkSucceeded(t, job)
		if n := job.JobStatus().BackoffCount; n < 1 || n >= 20 {
			t.Errorf("backoffCount %d, want at least the one restart before the fix and below the limit", n)
		}
		// kubectl shows the restarts.
		row := parseTable(t, f.MustKubectl("get", ref.KubectlName())).row(t, ref.Name)
		if row["RESTARTS"] != fmt.Sprint(job.JobStatus().BackoffCount) || row["PHASE"] != "Succeeded" {
			t.Errorf("kubectl get row %v, want phase Succeeded and %d restarts", row, job.JobStatus().BackoffCount)
		}
		pods := f.Pods(ref)
		if len(pods) != 1 || pods[0].Annotations[framework.AnnotationExitCode] != "0" || pods[0].Status.Phase != corev1.PodSucceeded {
			t.Errorf("pods %v, want one Succeeded pod from the updated template", podSummary(pods))
		}
	})
}

// TestBackoffLimitExceeded: OnFailure restarts a failing pod backoffLimit
// times, then the job fails.
func TestBackoffLimitExceeded(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "backoff")
	ref := f.Create(framework.NewPyTorchJob("flaky").WithReplicas("master", 1).WithReplicas("worker", 1).
		WithRestartPolicy("worker", v1beta1.RestartPolicyOnFailure).
		Forever("master").ReplicaExitCode("worker", 1).ReplicaRunFor("worker", "500ms").BackoffLimit(1))
	job := f.WaitForPhase(ref, v1beta1.JobFailed)
	checkFailed(t, job, "BackoffLimitExceeded")
	if n := job.JobStatus().BackoffCount; n != 1 {
		t.Errorf("backoffCount %d, want 1", n)
	}
	if n := restartCount(job, "worker"); n != 1 {
		t.Errorf("tasks[worker].restartCount %d, want 1", n)
	}
	// Clean-up policy Unfinished: the running master is stopped.
	f.WaitForPods(ref, "the running master deleted", framework.Timeout, func(pods []corev1.Pod) (bool, error) {
		for _, p := range pods {
			if p.Labels[v1beta1.LabelReplicaType] == "master" {
				return false, nil
			}
		}
		return true, nil
	})
}

// TestActiveDeadline: a job active past activeDeadlineSeconds fails with
// DeadlineExceeded and its pods are deleted, whatever the clean-up policy.
// The clock runs from the job's start, whether or not its pods run by
// then: on a loaded machine they may not within the 3 s, so the test reads
// that they were there from the controller's events, not from a wait that
// could race the deadline.
func TestActiveDeadline(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "deadline")
	for _, policy := range []v1beta1.CleanUpPolicy{v1beta1.CleanUpPolicyUnfinished, v1beta1.CleanUpPolicyNone} {
		t.Run(string(policy), func(t *testing.T) {
			t.Parallel()
			f := f.For(t)
			ref := f.Create(framework.NewTFJob("deadline-"+strings.ToLower(string(policy))).WithReplicas("chief", 1).WithReplicas("worker", 2).
				ActiveDeadline(3).CleanUp(policy))
			job := f.WaitForPhase(ref, v1beta1.JobFailed)
			checkFailed(t, job, "DeadlineExceeded")
			st := job.JobStatus()
			if st.StartTime != nil && st.CompletionTime != nil && st.CompletionTime.Sub(st.StartTime.Time) < 2*time.Second {
				// Second precision: 3s can show as 2s, never less.
				t.Errorf("failed %s after start, before the 3s deadline", st.CompletionTime.Sub(st.StartTime.Time))
			}
			f.WaitForNoPods(ref, framework.Timeout)
			f.Eventually(framework.Timeout, "events of 3 pods created and deleted for the deadline", func(ctx context.Context) (bool, error) {
				events, err := f.JobEvents(ctx, ref)
				if err != nil {
					return false, err
				}
				created, gone := 0, 0
				for _, e := range events {
					switch {
					case e.Reason == "SuccessfulCreate" && strings.HasPrefix(e.Message, "Created pod "):
						created++
					case e.Reason == "SuccessfulDelete" && strings.HasPrefix(e.Message, "Deleted pod "):
						gone++
					}
				}
				return created == 3 && gone == 3, nil
			})
		})
	}
}

// TestStartTimeoutUnschedulable: a job whose replicas no node can take says
// so (Pending (Unschedulable) in kubectl get), and with startTimeoutSeconds
// fails with the scheduler's reason once the limit has passed.
func TestStartTimeoutUnschedulable(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "start-timeout")
	ref := f.Create(framework.NewPyTorchJob("too-big").WithReplicas("master", 1).WithReplicas("worker", 1).
		GPUs(100000).StartTimeout(5))
	f.WaitForCondition(ref, v1beta1.ConditionRunning, metav1.ConditionFalse, "Unschedulable")
	if out := f.MustKubectl("get", "pj", "too-big"); !strings.Contains(out, "Pending (Unschedulable)") {
		t.Errorf("kubectl get: %q, want Pending (Unschedulable)", out)
	}
	job := f.WaitForPhase(ref, v1beta1.JobFailed)
	checkFailed(t, job, "Unschedulable")
	if c := framework.Condition(job, v1beta1.ConditionFailed); !strings.Contains(c.Message, "did not start within startTimeoutSeconds (5s)") ||
		!strings.Contains(c.Message, "nvidia.com/gpu") {
		t.Errorf("Failed condition message %q, want the limit and the scheduler's message", c.Message)
	}
	f.WaitForNoPods(ref, framework.Timeout)
}

// TestCleanUpPolicies: what is left of a succeeded job whose ps replica
// never exits.
func TestCleanUpPolicies(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "cleanup")
	build := func(policy v1beta1.CleanUpPolicy) *framework.JobBuilder {
		return framework.NewTFJob("cleanup-"+strings.ToLower(string(policy))).WithReplicas("ps", 1).WithReplicas("worker", 1).
			ExitCode(0).RunFor("2s").Forever("ps").CleanUp(policy)
	}

	t.Run("All", func(t *testing.T) {
		t.Parallel()
		f := f.For(t)
		ref := f.Create(build(v1beta1.CleanUpPolicyAll))
		f.WaitForRunningPods(ref, 2)
		checkSucceeded(t, f.WaitForPhase(ref, v1beta1.JobSucceeded))
		f.WaitForNoPods(ref, framework.Timeout)
	})

	t.Run("Unfinished", func(t *testing.T) {
		t.Parallel()
		f := f.For(t)
		ref := f.Create(build(v1beta1.CleanUpPolicyUnfinished))
		f.WaitForRunningPods(ref, 2)
		checkSucceeded(t, f.WaitForPhase(ref, v1beta1.JobSucceeded))
		name := ref.Name + "-worker-0"
		f.WaitForPods(ref, "only the succeeded worker left", framework.Timeout, func(pods []corev1.Pod) (bool, error) {
			return len(pods) == 1 && pods[0].Name == name, nil
		})
		keptWorker(f, ref, name, 3*time.Second, nil)
	})

	t.Run("None", func(t *testing.T) {
		t.Parallel()
		f := f.For(t)
		ref := f.Create(build(v1beta1.CleanUpPolicyNone))
		f.WaitForRunningPods(ref, 2)
		checkSucceeded(t, f.WaitForPhase(ref, v1beta1.JobSucceeded))
		// The controller cleans up in the reconcile that finishes the job;
		// for a few seconds after, both pods must still be there.
		ps := ref.Name + "-ps-0"
		keptWorker(f, ref, ref.Name+"-worker-0", 5*time.Second, func(pods []corev1.Pod) error {
			for _, p := range pods {
				if p.Name == ps && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
					return nil
				}
			}
			return fmt.Errorf("the running ps pod is gone: %v", podSummary(pods))
		})
	})
}

// keptWorker checks for a while that the succeeded worker pod stays, plus
// whatever more says.
func keptWorker(f *framework.Framework, ref framework.JobRef, name string, d time.Duration, more func([]corev1.Pod) error) {
	f.T.Helper()
	f.Consistently(d, "the succeeded worker pod is kept", func(ctx context.Context) error {
		pods, err := f.ListPods(ctx, ref)
		if err != nil {
			return err
		}
		found := false
		for _, p := range pods {
			if p.Name == name && p.Status.Phase == corev1.PodSucceeded && p.DeletionTimestamp == nil {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("no succeeded pod %s: %v", name, podSummary(pods))
		}
		if more != nil {
			return more(pods)
		}
		return nil
	})
}

// TestTTLAfterFinished: the job is deleted ttlSecondsAfterFinished after it
// finished, and its pods go with it.
func TestTTLAfterFinished(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "ttl")
	ref := f.Create(framework.NewTFJob("short-lived").WithReplicas("worker", 2).ExitCode(0).RunFor("1s").TTL(2).CleanUp(v1beta1.CleanUpPolicyNone))
	job := f.WaitForPhase(ref, v1beta1.JobSucceeded)
	done := job.JobStatus().CompletionTime
	f.WaitForJobGone(ref, framework.Timeout)
	// completionTime has second precision and is never later than the real
	// completion, so the TTL must have run out by now.
	if done == nil {
		t.Fatal("the job succeeded without a completionTime")
	}
	if gone := time.Since(done.Time); gone < 2*time.Second {
		t.Errorf("the job was deleted %s after it finished, before its TTL of 2s", gone)
	}
	f.WaitForNoPods(ref, framework.GCTimeout)
}

// TestEvictedPodReplaced: a pod evicted through the Eviction API is replaced
// even under restartPolicy Never and backoffLimit 0, and the replacement is
// not counted against the backoff limit.
func TestEvictedPodReplaced(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "evict")
	ref := f.Create(framework.NewTFJob("evicted").WithReplicas("worker", 2).BackoffLimit(0))
	pods := f.WaitForRunningPods(ref, 2)
	f.WaitForPhase(ref, v1beta1.JobRunning)
	before := podUIDs(pods)
	victim := ref.Name + "-worker-1"
	err := f.Kube.PolicyV1().Evictions(f.Namespace).Evict(f.Context(), &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Name: victim, Namespace: f.Namespace},
	})
	if err != nil {
		t.Fatalf("evicting %s: %v", victim, err)
	}
	pods = f.WaitForPods(ref, "a replacement for the evicted pod", framework.Timeout, func(pods []corev1.Pod) (bool, error) {
		if len(pods) != 2 {
			return false, nil
		}
		for _, p := range pods {
			if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
				return false, nil
			}
			if p.Name == victim && p.UID == before[victim] {
				return false, nil
			}
		}
		return true, nil
	})
	if pods[0].UID != before[ref.Name+"-worker-0"] {
		t.Errorf("worker-0 was replaced too: %v", podSummary(pods))
	}
	job := f.WaitForPhase(ref, v1beta1.JobRunning)
	if n := job.JobStatus().BackoffCount; n != 0 {
		t.Errorf("backoffCount %d after an eviction, want 0", n)
	}
}
