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
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
	"tensorstack.dev/training/test/e2e/framework"
)

// In-place restarts on the real nodes: the kubelet restarts every container
// of the job's pods where they are, and the pods (same UIDs) train again.

// jobPodUIDs are the UIDs of the job's pods, by name.
func jobPodUIDs(f *framework.Framework, ref framework.JobRef) map[string]string {
	uids := map[string]string{}
	for _, p := range f.Pods(ref) {
		uids[p.Name] = string(p.UID)
	}
	return uids
}

// waitTrainingAgain waits until every pod of the job runs attempt n and
// its rank has logged a step of it, and returns the pods.
func waitTrainingAgain(f *framework.Framework, ref framework.JobRef, n int, pods int) []corev1.Pod {
	f.T.Helper()
	want := fmt.Sprint(n)
	return f.WaitForPods(ref, "every pod training in attempt "+want, realNodeTimeout, func(ps []corev1.Pod) (bool, error) {
		if len(ps) != pods {
			return false, nil
		}
		for _, p := range ps {
			if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
				return false, framework.Stop("pod %s ended (%s)", p.Name, p.Status.Phase)
			}
			if p.Annotations[podbuilder.AnnotationAttemptReleased] != want || !trainingRuns(p) {
				return false, nil
			}
			if len(stepLine.FindAllString(podLog(f, p.Name), -1)) == 0 {
				return false, nil
			}
		}
		return true, nil
	})
}

func trainingRuns(p corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == "pytorch" {
			return cs.State.Running != nil
		}
	}
	return false
}

// checkSamePods fails unless the job's pods are the ones in uids.
func checkSamePods(t *testing.T, f *framework.Framework, ref framework.JobRef, uids map[string]string) {
	t.Helper()
	now := jobPodUIDs(f, ref)
	for name, uid := range uids {
		if now[name] != uid {
			t.Errorf("pod %s is %q now, was %q: it was recreated, not restarted in place", name, now[name], uid)
		}
	}
}

// TestRealNodeRestartInPlace: SIGKILL of rank 1 under a RestartJob rule
// restarts the job in place: the same two pods train again, in attempt 2,
// from the last checkpoint. A pod deleted by hand then cannot be restarted
// in place: the next restart recreates the pods, and says why.
func TestRealNodeRestartInPlace(t *testing.T) {
	f := onRealNode(t, "real-inplace")
	checkpointClaim(f)
	// A short grace period: torchrun, as its container's first process,
	// does not act on SIGTERM, so a pod it runs in takes the whole period
	// to go, and the fallback below deletes pods.
	applyJob(f, ddpCheckpointJob("inplace", 5).GracePeriod(5).Env("STEPS", "70").Env("STEP_SECONDS", "0.3").Env("CHECKPOINT_EVERY", "5").
		BackoffLimit(3).RestartStrategy(v1beta1.RestartStrategyInPlace).
		FailurePolicy(v1beta1.FailurePolicyRule{Action: v1beta1.FailurePolicyActionRestartJob}))
	ref := f.Ref(framework.KindPyTorch, "inplace")
	waitForStep(f, ref, 17)
	firstRun := stepLosses(rank0Log(f, ref), 0)
	uids := jobPodUIDs(f, ref)
	if len(uids) != 2 {
		t.Fatalf("pods %v, want 2", uids)
	}
	var worker *corev1.Pod
	for _, p := range f.Pods(ref) {
		if p.Name == ref.Name+"-node-1" {
			worker = p.DeepCopy()
		}
	}
	killed := time.Now()
	ctrKill(f, worker)

	pods := waitTrainingAgain(f, ref, 2, 2)
	t.Logf("both ranks trained again %s after the kill", time.Since(killed).Round(100*time.Millisecond))
	checkSamePods(t, f, ref, uids)
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "pytorch" && cs.RestartCount < 1 {
				t.Errorf("pod %s: the training container's restartCount is %d, want it restarted in place", p.Name, cs.RestartCount)
			}
		}
		if p.Annotations[podbuilder.AnnotationAttempt] != "2" {
			t.Errorf("pod %s asked for attempt %q, want 2", p.Name, p.Annotations[podbuilder.AnnotationAttempt])
		}
	}
	job := f.MustGetJob(ref)
	st := job.JobStatus()
	if st.BackoffCount != 1 || st.AttemptCount != 2 {
		t.Errorf("backoffCount %d attemptCount %d, want 1 and 2", st.BackoffCount, st.AttemptCount)
	}
	if c := meta.FindStatusCondition(st.Conditions, v1beta1.ConditionRestartedInPlace); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("RestartedInPlace condition %+v, want True", c)
	}
	if msg := eventMessage(f, ref, "RestartingJob"); !strings.Contains(msg, "in place") {
		t.Errorf("RestartingJob event %q does not say in place", msg)
	}
	a := st.Accounting
	if a == nil || a.Interruptions < 1 || a.Recent[0].ResumeStep == nil {
		t.Fatalf("status.accounting %+v: want an interruption with a checkpoint to resume from", a)
	}
	resume := *a.Recent[0].ResumeStep
	// The training goes on from the checkpoint, at the loss it had.
	waitForStep(f, ref, resume+3)
	checkResumedFrom(t, f, ref, resume, firstRun[1])

	// A pod deleted by hand: the restart it causes recreates every pod.
	if err := f.Kube.CoreV1().Pods(f.Namespace).Delete(f.Context(), ref.Name+"-node-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.WaitForJob(ref, "RestartedInPlace False", realNodeTimeout, func(job v1beta1.TrainingJob) (bool, error) {
		c := meta.FindStatusCondition(job.JobStatus().Conditions, v1beta1.ConditionRestartedInPlace)
		return c != nil && c.Status == metav1.ConditionFalse, nil
	})
	if msg := eventMessage(f, ref, "RecreatingInstead"); !strings.Contains(msg, "being deleted") && !strings.Contains(msg, "has no pod") {
		t.Errorf("RecreatingInstead event %q does not say why", msg)
	}
	waitSucceeded(f, ref)
	now := jobPodUIDs(f, ref)
	for name, uid := range uids {
		if now[name] == uid {
			t.Errorf("pod %s kept its UID after the fallback: it was not recreated", name)
		}
	}
}

// TestRealNodeRestartInPlaceBackoffLimit: with backoffLimit 2, two kills
// restart the job in place, the same pods each time, and the third fails
// it, as it would under Recreate.
func TestRealNodeRestartInPlaceBackoffLimit(t *testing.T) {
	f := onRealNode(t, "real-inplace-limit")
	applyJob(f, framework.NewPyTorchJob("limit").WithReplicas("node", 2).WithRestartPolicy("node", v1beta1.RestartPolicyOnFailure).
		Torchrun(v1beta1.TorchrunConfig{ProcPerNode: "1"}).
		Image(framework.TrainingImage).Command("python3", "pytorch_ddp.py").GracePeriod(3).
		Requests("250m", "512Mi").CPULimit("1").MemoryLimit("2Gi").
		Env("STEPS", "100000").Env("STEP_SECONDS", "0.5").
		BackoffLimit(2).RestartStrategy(v1beta1.RestartStrategyInPlace))
	ref := f.Ref(framework.KindPyTorch, "limit")
	pods := waitTrainingAgain(f, ref, 1, 2)
	uids := jobPodUIDs(f, ref)
	for attempt := 2; attempt <= 3; attempt++ {
		victim := pods[attempt%2]
		ctrKill(f, &victim)
		pods = waitTrainingAgain(f, ref, attempt, 2)
		checkSamePods(t, f, ref, uids)
		if st := f.MustGetJob(ref).JobStatus(); st.BackoffCount != int32(attempt-1) {
			t.Errorf("after kill %d: backoffCount %d", attempt-1, st.BackoffCount)
		}
	}
	victim := pods[0]
	ctrKill(f, &victim)
	job := f.WaitForJob(ref, "Failed", realNodeTimeout, func(job v1beta1.TrainingJob) (bool, error) {
		return job.JobStatus().Phase == v1beta1.JobFailed, nil
	})
	if c := meta.FindStatusCondition(job.JobStatus().Conditions, v1beta1.ConditionFailed); c == nil || c.Reason != "BackoffLimitExceeded" {
		t.Errorf("Failed condition %+v, want BackoffLimitExceeded", c)
	}
	if st := job.JobStatus(); st.BackoffCount != 2 {
		t.Errorf("backoffCount %d, want 2", st.BackoffCount)
	}
	// The killed pod is kept (clean-up policy Unfinished) and, its agent
	// told to stop, ends Failed instead of training on; the other, still
	// training, is deleted.
	ended := f.WaitForPods(ref, "the killed pod ended, the other gone", realNodeTimeout, func(ps []corev1.Pod) (bool, error) {
		return len(ps) == 1 && ps[0].Name == victim.Name && ps[0].Status.Phase == corev1.PodFailed, nil
	})
	if string(ended[0].UID) != uids[victim.Name] {
		t.Errorf("pod %s was recreated", victim.Name)
	}
}
