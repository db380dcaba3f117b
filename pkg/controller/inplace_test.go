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
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// inPlaceJob is a master and a worker that restart the whole job, in
// place, on any failure.
func inPlaceJob(name string, backoffLimit int32) v1beta1.TrainingJob {
	job := newPyTorchJob(name).withReplicas("master", 1).withReplicas("worker", 1).withBackoffLimit(backoffLimit).obj()
	job.CommonSpec().RunPolicy.RestartStrategy = v1beta1.RestartStrategyInPlace
	job.CommonSpec().RunPolicy.FailurePolicy = &v1beta1.FailurePolicy{Rules: []v1beta1.FailurePolicyRule{{Action: v1beta1.FailurePolicyActionRestartJob}}}
	return job
}

// trainerFailed is a pod whose training container exited with code while
// its restart agent keeps the pod running.
func trainerFailed(code int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		running(p)
		for i := range p.Status.ContainerStatuses {
			if cs := &p.Status.ContainerStatuses[i]; !podbuilder.IsRestartAgent(cs.Name) {
				cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
			}
		}
	}
}

// trainerDone is a pod whose training container exited 0, its agent still
// running.
func trainerDone(p *corev1.Pod) { trainerFailed(0)(p) }

// parked is a pod restarted in place that waits at its attempt barrier.
func parked(p *corev1.Pod) {
	p.Status.Phase = corev1.PodPending
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{{
		Name: podbuilder.AttemptBarrierContainerName, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
	}}
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "RestartingAllContainers"}},
		})
	}
}

func annotation(f *fixture, pod, key string) string {
	f.t.Helper()
	p := f.pod(pod)
	if p == nil {
		f.t.Fatalf("no pod %s", pod)
	}
	return p.Annotations[key]
}

// TestRestartJobInPlace: a failed worker restarts the whole job in place:
// no pod is deleted or created, every pod is asked for the next attempt,
// and the attempt is released only once every pod waits at its barrier;
// the pods of a job that succeeds are then told to end.
func TestRestartJobInPlace(t *testing.T) {
	job := inPlaceJob("j", 2)
	f := newFixture(t, job)
	f.start(job)
	pods := []string{"j-master-0", "j-worker-0"}
	uids := map[string]string{}
	for _, n := range pods {
		p := f.pod(n)
		uids[n] = string(p.UID)
		if !podbuilder.CanRestartInPlace(p) || p.Spec.InitContainers[0].Name != podbuilder.AttemptBarrierContainerName {
			t.Fatalf("pod %s has no in-place restart: %+v", n, p.Spec)
		}
		if a, r := p.Annotations[podbuilder.AnnotationAttempt], p.Annotations[podbuilder.AnnotationAttemptReleased]; a != "1" || r != "1" {
			t.Fatalf("pod %s: attempt %q released %q, want 1 and 1", n, a, r)
		}
	}

	f.setPod("j-worker-0", trainerFailed(137))
	f.step(job)
	if got := f.deletedPodNames(); len(got) != 0 {
		t.Fatalf("deleted %v: an in-place restart deletes no pod", got)
	}
	st := f.status(job)
	if st.BackoffCount != 1 || st.AttemptCount != 2 {
		t.Fatalf("backoffCount %d attemptCount %d, want 1 and 2", st.BackoffCount, st.AttemptCount)
	}
	if a := st.Attempts[0]; a.EndTime == nil || a.Reason != StopRestartJob {
		t.Errorf("attempt 1 %+v, want it ended by the RestartJob", a)
	}
	if c := condition(st, v1beta1.ConditionRestartedInPlace); c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1beta1.ReasonRestartingInPlace {
		t.Errorf("RestartedInPlace condition %+v", c)
	}
	events := f.events()
	if !hasEvent(events, corev1.EventTypeWarning, ReasonRestartingJob) {
		t.Errorf("no RestartingJob event: %v", events)
	}
	for _, n := range pods {
		if a, r := annotation(f, n, podbuilder.AnnotationAttempt), annotation(f, n, podbuilder.AnnotationAttemptReleased); a != "2" || r != "1" {
			t.Errorf("pod %s: attempt %q released %q, want attempt 2 asked and not released", n, a, r)
		}
	}

	// The master's agent has not restarted it yet: nothing is released.
	f.setPod("j-worker-0", parked)
	f.step(job)
	if r := annotation(f, "j-worker-0", podbuilder.AnnotationAttemptReleased); r != "1" {
		t.Fatalf("attempt released %q while the master still runs attempt 1", r)
	}
	f.setPod("j-master-0", parked)
	f.step(job)
	for _, n := range pods {
		if r := annotation(f, n, podbuilder.AnnotationAttemptReleased); r != "2" {
			t.Errorf("pod %s: released %q, want 2 once every pod waits", n, r)
		}
	}
	if events := f.events(); !hasEvent(events, corev1.EventTypeNormal, ReasonAttemptReleased) {
		t.Errorf("no AttemptReleased event: %v", events)
	}
	if got := f.createdPodNames(); len(got) != 0 {
		t.Errorf("created %v during an in-place restart", got)
	}

	f.setAll(running)
	f.step(job)
	f.setAll(trainerDone)
	f.step(job)
	if st := f.status(job); st.Phase != v1beta1.JobSucceeded {
		t.Fatalf("phase %s, want Succeeded from the training containers", st.Phase)
	}
	f.step(job)
	for _, n := range pods {
		p := f.pod(n)
		if p == nil || string(p.UID) != uids[n] {
			t.Fatalf("pod %s was replaced", n)
		}
		if p.Annotations[podbuilder.AnnotationRestartAgent] != podbuilder.RestartAgentStop {
			t.Errorf("pod %s: the agent of a finished job was not stopped", n)
		}
	}
}

// TestRestartInPlaceFallsBack: a pod whose node is lost cannot restart in
// place; the job recreates every pod and says why.
func TestRestartInPlaceFallsBack(t *testing.T) {
	for name, tc := range map[string]struct {
		master func(*corev1.Pod)
		why    string
	}{
		"node lost": {func(p *corev1.Pod) { p.Status.Phase = corev1.PodUnknown }, "is lost"},
		"evicted": {func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue})
		}, "is lost"},
		"rule dropped by the API server": {func(p *corev1.Pod) {
			for i := range p.Spec.Containers {
				p.Spec.Containers[i].RestartPolicyRules = nil
			}
		}, "no in-place restart rule"},
	} {
		t.Run(name, func(t *testing.T) {
			job := inPlaceJob("j", 2)
			f := newFixture(t, job)
			f.start(job)
			f.setPod("j-master-0", tc.master)
			f.setPod("j-worker-0", trainerFailed(1))
			f.mustSync(job)
			if got := f.deletedPodNames(); len(got) != 2 {
				t.Fatalf("deleted %v, want both pods recreated", got)
			}
			st := f.status(job)
			c := condition(st, v1beta1.ConditionRestartedInPlace)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1beta1.ReasonRecreatingInstead || !strings.Contains(c.Message, tc.why) {
				t.Fatalf("RestartedInPlace condition %+v, want False RecreatingInstead saying %q", c, tc.why)
			}
			if events := f.events(); !hasEvent(events, corev1.EventTypeWarning, v1beta1.ReasonRecreatingInstead) {
				t.Errorf("no RecreatingInstead event: %v", events)
			}
		})
	}
}

// TestInPlaceWithoutNodesThatCan: a pod of an InPlace job that may only
// run on nodes whose kubelets cannot restart containers in place would stay
// Pending. It is replaced, without counting, by a pod built as under
// Recreate; the job says why, and from then on builds and restarts its pods
// as under Recreate. A pod that may run on a node that can is left alone.
func TestInPlaceWithoutNodesThatCan(t *testing.T) {
	simulated := node("sim-0", map[string]string{"type": "kwok"}, nil)
	tainted := restartsInPlace("real-0", map[string]string{"type": "real"},
		corev1.Taint{Key: "real", Value: "true", Effect: corev1.TaintEffectNoSchedule})
	pods := []string{"j-master-0", "j-worker-0"}

	t.Run("no node it may run on can", func(t *testing.T) {
		job := inPlaceJob("j", 2)
		f := newFixture(t, job, simulated, tainted)
		f.step(job)
		first := map[string]string{}
		for _, n := range pods {
			first[n] = string(f.pod(n).UID)
		}
		f.events()
		// The pods wait for a node that cannot come.
		f.mustSync(job)
		if got := f.deletedPodNames(); len(got) != 2 {
			t.Fatalf("deleted %v, want both unschedulable pods replaced", got)
		}
		f.observe()
		c := condition(f.status(job), v1beta1.ConditionRestartedInPlace)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1beta1.ReasonNoNodeRestartsInPlace ||
			!strings.Contains(c.Message, "none of the 1 node(s)") || !strings.Contains(c.Message, featureRestartAllContainers) {
			t.Fatalf("RestartedInPlace condition %+v, want False %s naming the missing feature", c, v1beta1.ReasonNoNodeRestartsInPlace)
		}
		// Both pods are replaced; the job says so once.
		prefix := corev1.EventTypeWarning + " " + v1beta1.ReasonNoNodeRestartsInPlace + " "
		if events := f.events(); countPrefixed(events, prefix) != 1 {
			t.Errorf("want one %s event, got: %v", v1beta1.ReasonNoNodeRestartsInPlace, events)
		}
		f.step(job)
		f.setAll(running)
		f.step(job)
		st := f.status(job)
		if st.Phase != v1beta1.JobRunning || st.BackoffCount != 0 {
			t.Fatalf("phase %s backoffCount %d, want Running with nothing counted", st.Phase, st.BackoffCount)
		}
		for _, n := range pods {
			p := f.pod(n)
			if p == nil || string(p.UID) == first[n] {
				t.Fatalf("pod %s was not made again", n)
			}
			if podbuilder.CanRestartInPlace(p) || len(p.Spec.Containers) != 1 || p.Annotations[podbuilder.AnnotationAttempt] != "" {
				t.Errorf("pod %s carries in-place parts no node it may run on can use: %+v", n, p.Spec.Containers)
			}
			for _, c := range p.Spec.InitContainers {
				if c.Name == podbuilder.AttemptBarrierContainerName {
					t.Errorf("pod %s waits at an attempt barrier", n)
				}
			}
		}

		// A failure restarts the job by recreating its pods; the condition
		// keeps saying why.
		f.setPod("j-worker-0", failed(1))
		f.mustSync(job)
		if got := f.deletedPodNames(); len(got) != 2 {
			t.Fatalf("deleted %v, want both pods recreated by the restart", got)
		}
		st = f.status(job)
		if st.BackoffCount != 1 {
			t.Errorf("backoffCount %d, want the restart counted", st.BackoffCount)
		}
		if c := condition(st, v1beta1.ConditionRestartedInPlace); c == nil || c.Reason != v1beta1.ReasonNoNodeRestartsInPlace {
			t.Errorf("RestartedInPlace condition %+v, want it to go on saying %s", c, v1beta1.ReasonNoNodeRestartsInPlace)
		}
		if events := f.events(); !hasEvent(events, corev1.EventTypeWarning, v1beta1.ReasonRecreatingInstead) {
			t.Errorf("no %s event for the restart: %v", v1beta1.ReasonRecreatingInstead, events)
		}
	})

	t.Run("a node it may run on can", func(t *testing.T) {
		job := inPlaceJob("j", 2)
		for i := range job.CommonSpec().ReplicaSpecs {
			job.CommonSpec().ReplicaSpecs[i].Template.Spec.Tolerations = []corev1.Toleration{{Key: "real", Operator: corev1.TolerationOpExists}}
		}
		f := newFixture(t, job, simulated, tainted)
		f.step(job)
		f.mustSync(job)
		if got := f.deletedPodNames(); len(got) != 0 {
			t.Fatalf("deleted %v: node real-0 can restart them in place", got)
		}
		for _, n := range pods {
			if p := f.pod(n); p == nil || !podbuilder.CanRestartInPlace(p) {
				t.Errorf("pod %s has no in-place restart, though node real-0 can", n)
			}
		}
		if c := condition(f.status(job), v1beta1.ConditionRestartedInPlace); c != nil {
			t.Errorf("RestartedInPlace condition %+v before any restart", c)
		}
	})
}

// TestRestartInPlaceBackoffLimit: the restart beyond backoffLimit fails
// the job, as under Recreate, and the pods' agents are stopped so that the
// pods end.
func TestRestartInPlaceBackoffLimit(t *testing.T) {
	job := inPlaceJob("j", 1)
	f := newFixture(t, job)
	f.start(job)
	f.setPod("j-worker-0", trainerFailed(1))
	f.step(job)
	f.setAll(parked)
	f.step(job)
	f.setAll(running)
	f.step(job)
	if st := f.status(job); st.BackoffCount != 1 || st.Phase == v1beta1.JobFailed {
		t.Fatalf("after one restart: backoffCount %d phase %s", st.BackoffCount, st.Phase)
	}
	f.setPod("j-worker-0", trainerFailed(1))
	f.step(job)
	st := f.status(job)
	if st.Phase != v1beta1.JobFailed {
		t.Fatalf("phase %s, want Failed beyond backoffLimit", st.Phase)
	}
	if c := condition(st, v1beta1.ConditionFailed); c == nil || c.Reason != ReasonBackoffLimitExceeded {
		t.Errorf("Failed condition %+v", c)
	}
	f.step(job)
	// The failed worker is kept (clean-up policy Unfinished) and told to
	// end; the master, still training, is deleted.
	if a := annotation(f, "j-worker-0", podbuilder.AnnotationRestartAgent); a != podbuilder.RestartAgentStop {
		t.Errorf("the failed worker's agent was not stopped after the job failed")
	}
	if a := annotation(f, "j-worker-0", podbuilder.AnnotationAttempt); a != "2" {
		t.Errorf("the failed worker was asked for attempt %q after the job failed", a)
	}
	if f.pod("j-master-0") != nil {
		t.Errorf("the master, unfinished, was kept")
	}
}

// TestRestartInPlaceChasesASlowPod: a pod that does not reach its barrier
// is asked again after inPlaceAskAgain, and recreated, waiting at its
// barrier, after inPlaceGiveUp; the attempt is released once it waits
// there with the others.
func TestRestartInPlaceChasesASlowPod(t *testing.T) {
	job := inPlaceJob("j", 2)
	f := newFixture(t, job)
	f.start(job)
	f.setPod("j-worker-0", trainerFailed(137))
	f.step(job)
	f.setPod("j-worker-0", parked)
	// The master keeps running attempt 1; the cache sees it asked (the
	// fake API's patches leave the resourceVersion as it was).
	f.setPod("j-master-0", running)
	f.step(job)
	asked := annotation(f, "j-master-0", podbuilder.AnnotationAttemptAsked)
	if asked == "" {
		t.Fatal("the master was asked for attempt 2 without the time")
	}

	f.clock.Step(inPlaceAskAgain)
	f.step(job)
	f.setPod("j-master-0", running)
	if again := annotation(f, "j-master-0", podbuilder.AnnotationAttemptAsked); again == asked {
		t.Errorf("the master was not asked again after %s", inPlaceAskAgain)
	}
	masterUID := f.pod("j-master-0").UID
	f.clock.Step(inPlaceGiveUp)
	f.mustSync(job)
	if got := f.deletedPodNames(); len(got) != 1 || got[0] != "j-master-0" {
		t.Fatalf("deleted %v, want the master that did not restart in place", got)
	}
	if events := f.events(); !hasEvent(events, corev1.EventTypeWarning, v1beta1.ReasonRecreatingInstead) {
		t.Errorf("no RecreatingInstead event: %v", events)
	}
	f.observe()
	f.step(job)
	master := f.pod("j-master-0")
	if master == nil || master.UID == masterUID {
		t.Fatalf("the master was not recreated")
	}
	if a, r := master.Annotations[podbuilder.AnnotationAttempt], master.Annotations[podbuilder.AnnotationAttemptReleased]; a != "2" || r != "1" {
		t.Fatalf("new master: attempt %q released %q, want it to wait for attempt 2", a, r)
	}
	if st := f.status(job); st.BackoffCount != 1 || st.AttemptCount != 2 {
		t.Errorf("backoffCount %d attemptCount %d: recreating a slow pod is not another restart", st.BackoffCount, st.AttemptCount)
	}
	f.setPod("j-master-0", parked)
	f.step(job)
	for _, n := range []string{"j-master-0", "j-worker-0"} {
		if r := annotation(f, n, podbuilder.AnnotationAttemptReleased); r != "2" {
			t.Errorf("pod %s: released %q, want 2", n, r)
		}
	}
}

// countPrefixed counts the events that start with prefix.
func countPrefixed(events []string, prefix string) int {
	n := 0
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}
