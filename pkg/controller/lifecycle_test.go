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
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	core "k8s.io/client-go/testing"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

func TestActiveDeadline(t *testing.T) {
	job := newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 2).
		withDeadline(60).withCleanUp(v1beta1.CleanUpPolicyNone).obj()
	f := newFixture(t, job)
	f.start(job)
	if st := f.status(job); st.StartTime == nil || !st.StartTime.Time.Equal(testStart) {
		t.Fatalf("startTime %v, want %v", st.StartTime, testStart)
	}
	f.setPod("j-worker-1", succeeded)

	f.clock.Step(20 * time.Second)
	if d := f.step(job); d != 40*time.Second {
		t.Fatalf("requeue after %v, want the 40s left until the deadline", d)
	}
	assertPhase(t, f.status(job), v1beta1.JobRunning)

	f.clock.Step(40 * time.Second)
	f.mustSync(job)
	st := f.status(job)
	assertPhase(t, st, v1beta1.JobFailed)
	assertCondition(t, st, v1beta1.ConditionFailed, metav1.ConditionTrue, ReasonDeadlineExceeded)
	events := f.events()
	if !hasEvent(events, corev1.EventTypeWarning, ReasonDeadlineExceeded) {
		t.Errorf("no DeadlineExceeded event")
	}
	// The deletes say why the pods went although the policy keeps pods.
	for _, pod := range []string{"j-chief-0", "j-worker-0"} {
		want := fmt.Sprintf("Deleted pod %s: the job ran past activeDeadlineSeconds", pod)
		if !slices.ContainsFunc(events, func(e string) bool { return strings.Contains(e, want) }) {
			t.Errorf("events %q: none says %q", events, want)
		}
	}
	// Running pods are stopped even with clean-up policy None; the finished one stays.
	if got := f.deletedPodNames(); !equalStrings(got, []string{"j-chief-0", "j-worker-0"}) {
		t.Fatalf("deleted %v, want the running pods", got)
	}
	if !st.CompletionTime.Time.Equal(testStart.Add(60 * time.Second)) {
		t.Errorf("completionTime %v", st.CompletionTime)
	}
}

func TestCleanUpPolicy(t *testing.T) {
	cases := []struct {
		policy v1beta1.CleanUpPolicy
		want   []string
	}{
		{v1beta1.CleanUpPolicyAll, []string{"j-chief-0", "j-ps-0", "j-worker-0", "j-worker-1"}},
		{"all", []string{"j-chief-0", "j-ps-0", "j-worker-0", "j-worker-1"}},
		{v1beta1.CleanUpPolicyUnfinished, []string{"j-ps-0", "j-worker-1"}},
		{"", []string{"j-ps-0", "j-worker-1"}},
		{v1beta1.CleanUpPolicyNone, nil},
		{"none", nil},
	}
	for _, tc := range cases {
		t.Run("policy "+string(tc.policy), func(t *testing.T) {
			job := newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 2).withReplicas("ps", 1).
				withCleanUp(tc.policy).raw()
			f := newFixture(t, job)
			f.start(job)
			f.setPod("j-worker-0", succeeded)
			f.setPod("j-chief-0", succeeded)
			f.mustSync(job)
			assertPhase(t, f.status(job), v1beta1.JobSucceeded)
			if got := f.deletedPodNames(); !equalStrings(got, tc.want) {
				t.Fatalf("deleted %v, want %v", got, tc.want)
			}
			// The write that finishes the job records the replicas it stops.
			for name, phase := range replicaPhases(f.status(job)) {
				stopped := (name == "j-ps-0" || name == "j-worker-1") && len(tc.want) > 0
				if stopped != (phase == v1beta1.ReplicaDeleted) {
					t.Errorf("%s is %s right after the job finished", name, phase)
				}
			}
			f.observe()
			// Clean-up happens once: nothing more to delete, no status change.
			for range 2 {
				f.mustSync(job)
				if got := f.deletedPodNames(); len(got) != 0 {
					t.Errorf("deleted %v again", got)
				}
				if n := f.statusUpdates(); n != 0 {
					t.Errorf("%d status writes after the job finished", n)
				}
				f.observe()
			}
			st := f.status(job)
			// Only the replicas stopped unfinished are Deleted: those that
			// succeeded keep their outcome when their pods are removed.
			wantDeleted := int32(0)
			for _, name := range tc.want {
				if name == "j-ps-0" || name == "j-worker-1" {
					wantDeleted++
				}
			}
			if st.Aggregate.Deleted != wantDeleted || st.Aggregate.Succeeded != 2 {
				t.Errorf("aggregate deleted %d, succeeded %d; want %d and 2", st.Aggregate.Deleted, st.Aggregate.Succeeded, wantDeleted)
			}
			for name, phase := range replicaPhases(st) {
				if (name == "j-chief-0" || name == "j-worker-0") && phase != v1beta1.ReplicaSucceeded {
					t.Errorf("%s is %s after clean-up, want Succeeded", name, phase)
				}
			}
			// A replica whose pod was removed keeps its last report.
			for _, task := range st.Tasks {
				for _, rs := range task.ReplicaStatus {
					if rs.Phase == v1beta1.ReplicaDeleted && (rs.UID == "" || len(rs.Containers) == 0) {
						t.Errorf("deleted replica %s lost its last status: %+v", rs.Name, rs)
					}
				}
			}
		})
	}
}

func TestTTLAfterFinished(t *testing.T) {
	t.Run("deleted at expiry", func(t *testing.T) {
		job := newTFJob("j").withReplicas("worker", 1).withTTL(100).obj()
		f := newFixture(t, job)
		f.start(job)
		f.setPod("j-worker-0", succeeded)
		if d := f.step(job); d != 100*time.Second {
			t.Fatalf("requeue after %v, want 100s", d)
		}
		f.clock.Step(30 * time.Second)
		if d := f.step(job); d != 70*time.Second {
			t.Fatalf("requeue after %v, want 70s", d)
		}
		if !f.jobExists(job) {
			t.Fatalf("deleted before its TTL")
		}
		f.clock.Step(70 * time.Second)
		f.mustSync(job)
		var del core.DeleteAction
		for _, a := range f.jobClient.Actions() {
			if d, ok := a.(core.DeleteAction); ok {
				del = d
			}
		}
		if del == nil {
			t.Fatalf("the job was not deleted; actions %v", f.jobClient.Actions())
		}
		opts := del.GetDeleteOptions()
		if opts.PropagationPolicy == nil || *opts.PropagationPolicy != metav1.DeletePropagationBackground {
			t.Errorf("propagation %v, want Background", opts.PropagationPolicy)
		}
		if opts.Preconditions == nil || *opts.Preconditions.UID != "uid-j" {
			t.Errorf("preconditions %+v, want the job's UID", opts.Preconditions)
		}
		if f.jobExists(job) {
			t.Errorf("job still exists")
		}
		if !hasEvent(f.events(), corev1.EventTypeNormal, ReasonTTLExpired) {
			t.Errorf("no TTLExpired event")
		}
	})
	t.Run("zero deletes at once", func(t *testing.T) {
		job := newPyTorchJob("j").withReplicas("master", 1).withTTL(0).obj()
		f := newFixture(t, job)
		f.start(job)
		f.setPod("j-master-0", failed(1))
		f.mustSync(job)
		if f.jobExists(job) {
			t.Fatalf("job with TTL 0 still exists after finishing")
		}
	})
}

func TestTerminalPhaseIsSticky(t *testing.T) {
	job := newTFJob("j").withReplicas("worker", 2).withCleanUp(v1beta1.CleanUpPolicyNone).obj()
	f := newFixture(t, job)
	f.start(job)
	f.setPod("j-worker-0", succeeded)
	f.step(job)
	assertPhase(t, f.status(job), v1beta1.JobSucceeded)
	f.setPod("j-worker-1", failed(1))
	f.removePod("j-worker-0")
	f.step(job)
	st := f.status(job)
	assertPhase(t, st, v1beta1.JobSucceeded)
	if condition(st, v1beta1.ConditionFailed) != nil {
		t.Errorf("a succeeded job became Failed")
	}
	f.mustSync(job)
	if got := f.createdPodNames(); len(got) != 0 {
		t.Fatalf("a finished job got new pods %v", got)
	}
}

func TestPauseAndResume(t *testing.T) {
	job := newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 2).withDeadline(600).obj()
	f := newFixture(t, job)
	f.gracefulDeletes()
	f.start(job)

	f.clock.Step(time.Minute)
	paused := f.pause(job)
	f.mustSync(paused)
	if got := f.deletedPodNames(); !equalStrings(got, []string{"j-chief-0", "j-worker-0", "j-worker-1"}) {
		t.Fatalf("deleted %v, want every pod", got)
	}
	f.observe()
	st := f.status(paused)
	assertPhase(t, st, v1beta1.JobRunning) // until the pods are gone
	assertCondition(t, st, v1beta1.ConditionPaused, metav1.ConditionTrue, ReasonPausing)

	// Terminating pods are not deleted twice and keep the job from Paused.
	f.mustSync(paused)
	if got := f.deletedPodNames(); len(got) != 0 {
		t.Fatalf("deleted %v again", got)
	}
	f.observe()
	for _, p := range []string{"j-chief-0", "j-worker-0", "j-worker-1"} {
		f.removePod(p)
	}
	f.step(paused)
	st = f.status(paused)
	assertPhase(t, st, v1beta1.JobPaused)
	assertCondition(t, st, v1beta1.ConditionPaused, metav1.ConditionTrue, ReasonPaused)
	assertCondition(t, st, v1beta1.ConditionRunning, metav1.ConditionFalse, "Paused")
	if st.Aggregate.Deleted != 3 {
		t.Errorf("aggregate %+v, want 3 deleted", st.Aggregate)
	}
	if !hasEvent(f.events(), corev1.EventTypeNormal, ReasonPaused) {
		t.Errorf("no Paused event")
	}
	if _, err := f.kubeClient.CoreV1().Services("ns").Get(context.Background(), "j", metav1.GetOptions{}); err != nil {
		t.Errorf("the Service should stay while paused: %v", err)
	}
	// Paused for longer than the deadline: a paused job does not run out of time.
	f.clock.Step(20 * time.Minute)
	f.step(paused)
	assertPhase(t, f.status(paused), v1beta1.JobPaused)

	resumed := f.job(paused)
	resumed.CommonSpec().RunMode.Pause.Enabled = false
	f.updateJob(resumed)
	f.mustSync(resumed)
	if got := f.createdPodNames(); !equalStrings(got, []string{"j-chief-0", "j-worker-0", "j-worker-1"}) {
		t.Fatalf("created %v on resume", got)
	}
	f.observe()
	st = f.status(resumed)
	assertPhase(t, st, v1beta1.JobResuming)
	assertCondition(t, st, v1beta1.ConditionPaused, metav1.ConditionFalse, ReasonResumed)
	if want := testStart.Add(21 * time.Minute); !st.StartTime.Time.Equal(want) {
		t.Errorf("startTime %v, want the resume time %v", st.StartTime, want)
	}
	if !hasEvent(f.events(), corev1.EventTypeNormal, ReasonResumed) {
		t.Errorf("no Resumed event")
	}
	f.setAll(running)
	if d := f.step(resumed); d != 600*time.Second {
		t.Errorf("requeue after %v, want a fresh 600s deadline", d)
	}
	assertPhase(t, f.status(resumed), v1beta1.JobRunning)
}

func TestPausedFromTheStart(t *testing.T) {
	job := newPyTorchJob("j").withReplicas("master", 1).paused().obj()
	f := newFixture(t, job)
	f.mustSync(job)
	if got := f.createdPodNames(); len(got) != 0 {
		t.Fatalf("created %v", got)
	}
	f.observe()
	st := f.status(job)
	assertPhase(t, st, v1beta1.JobPaused)
	if st.StartTime != nil {
		t.Errorf("startTime %v for a job that never ran", st.StartTime)
	}
}

func TestDebugMode(t *testing.T) {
	job := newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 1).withBackoffLimit(0).debug().obj()
	f := newFixture(t, job)
	f.start(job)

	// Exit codes of debug pods decide nothing: the chief "succeeding" and a
	// worker failing with Never and no backoff left both just restart.
	f.setPod("j-chief-0", succeeded)
	f.setPod("j-worker-0", failed(1))
	f.mustSync(job)
	if got := f.deletedPodNames(); !equalStrings(got, []string{"j-chief-0", "j-worker-0"}) {
		t.Fatalf("deleted %v, want both exited debug pods", got)
	}
	f.observe()
	st := f.status(job)
	assertPhase(t, st, v1beta1.JobRunning)
	if st.BackoffCount != 0 {
		t.Errorf("backoff %d, want 0", st.BackoffCount)
	}
	// Exited debug pods are backed off like any other exit.
	f.mustSync(job)
	if created := f.createdPods(); len(created) != 0 {
		t.Fatalf("recreated %v before the restart backoff passed", names(created))
	}
	if rs := st.Tasks[0].ReplicaStatus[0]; rs.Reason != ReasonBackOff || rs.RestartAt == nil ||
		!rs.RestartAt.Time.Equal(testStart.Add(DefaultRestartBackoffBase)) {
		t.Errorf("chief status %+v, want BackOff until %v", rs, testStart.Add(DefaultRestartBackoffBase))
	}
	f.clock.Step(DefaultRestartBackoffBase)
	f.mustSync(job)
	created := f.createdPods()
	if len(created) != 2 || created[0].Annotations[podbuilder.AnnotationRunMode] != podbuilder.RunModeDebug {
		t.Fatalf("recreated %v", names(created))
	}
	f.observe()

	// Leaving debug mode replaces the debug pods with training pods.
	f.setAll(running)
	normal := f.job(job)
	normal.CommonSpec().RunMode = nil
	f.updateJob(normal)
	f.mustSync(normal)
	if got := f.deletedPodNames(); !equalStrings(got, []string{"j-chief-0", "j-worker-0"}) {
		t.Fatalf("deleted %v, want the debug pods", got)
	}
	f.observe()
	if st := f.status(normal); st.Tasks[0].RestartCount != 1 || st.BackoffCount != 0 {
		t.Errorf("a mode change counted as a restart: %+v", st.Tasks)
	}
	f.mustSync(normal)
	for _, p := range f.createdPods() {
		if p.Annotations[podbuilder.AnnotationRunMode] != podbuilder.RunModeImmediate || p.Spec.Containers[0].Command[0] != "python" {
			t.Errorf("pod %s after debug: mode %q command %v", p.Name, p.Annotations[podbuilder.AnnotationRunMode], p.Spec.Containers[0].Command)
		}
	}
}

func TestEnteringDebugModeReplacesPods(t *testing.T) {
	job := newTFJob("j").withReplicas("worker", 2).obj()
	f := newFixture(t, job)
	f.start(job)
	dbg := f.job(job)
	dbg.CommonSpec().RunMode = &v1beta1.RunMode{Debug: &v1beta1.DebugMode{Enabled: true}}
	f.updateJob(dbg)
	f.mustSync(dbg)
	if got := f.deletedPodNames(); !equalStrings(got, []string{"j-worker-0", "j-worker-1"}) {
		t.Fatalf("deleted %v", got)
	}
	f.observe()
	f.mustSync(dbg)
	for _, p := range f.createdPods() {
		if !equalStrings(p.Spec.Containers[0].Command, []string{"sleep", "inf"}) {
			t.Errorf("pod %s: command %v", p.Name, p.Spec.Containers[0].Command)
		}
	}
	if len(f.createdPods()) != 2 {
		t.Fatalf("created %v", f.createdPodNames())
	}
}

func TestScaleDownDeletesExtraPods(t *testing.T) {
	job := newTFJob("j").withReplicas("worker", 3).obj()
	f := newFixture(t, job)
	f.start(job)
	smaller := f.job(job)
	smaller.CommonSpec().ReplicaSpecs[0].Replicas = new(int32)
	*smaller.CommonSpec().ReplicaSpecs[0].Replicas = 1
	f.updateJob(smaller)
	f.mustSync(smaller)
	// The pods beyond the count go, and the one kept was told of three
	// workers: it is built again for one, at once and without a restart.
	if got := f.deletedPodNames(); !equalStrings(got, []string{"j-worker-0", "j-worker-1", "j-worker-2"}) {
		t.Fatalf("deleted %v", got)
	}
	f.observe()
	if st := f.status(smaller); st.BackoffCount != 0 {
		t.Errorf("backoff %d, want 0", st.BackoffCount)
	}
	f.mustSync(smaller)
	created := f.createdPods()
	if len(created) != 1 || created[0].Annotations[podbuilder.AnnotationTopology] != "worker:1" {
		t.Fatalf("created %v, want j-worker-0 for one worker", names(created))
	}
}

// TestFinishedJobKeepsOutcomesOfRemovedPods: pods removed after the job
// finished (by hand, by their namespace's deletion) leave its record as it
// was, and cost no status write.
func TestFinishedJobKeepsOutcomesOfRemovedPods(t *testing.T) {
	job := newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 1).
		withCleanUp(v1beta1.CleanUpPolicyNone).obj()
	f := newFixture(t, job)
	f.start(job)
	f.setPod("j-worker-0", succeeded)
	f.step(job)
	f.setPod("j-chief-0", failed(1))
	f.step(job)
	assertPhase(t, f.status(job), v1beta1.JobFailed)

	for _, name := range []string{"j-chief-0", "j-worker-0"} {
		if err := f.kubeClient.CoreV1().Pods("ns").Delete(f.ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f.observe()
	if names := f.podNames(); len(names) != 0 {
		t.Fatalf("pods %v left", names)
	}
	if _, writes := f.syncCountingWrites(job); writes != 0 {
		t.Errorf("%d status writes after the pods were removed, want none", writes)
	}
	want := map[string]v1beta1.ReplicaPhase{"j-chief-0": v1beta1.ReplicaFailed, "j-worker-0": v1beta1.ReplicaSucceeded}
	if got := replicaPhases(f.status(job)); !equalReplicaPhases(got, want) {
		t.Errorf("replicas %v, want %v", got, want)
	}
}

// TestStoppedReplicaStaysDeleted: a pod the clean-up stopped as unfinished
// that exits on its own while it terminates leaves the record as it was.
func TestStoppedReplicaStaysDeleted(t *testing.T) {
	job := newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 1).obj()
	f := newFixture(t, job)
	f.gracefulDeletes()
	f.start(job)
	f.setPod("j-chief-0", succeeded)
	f.step(job)
	st := f.status(job)
	assertPhase(t, st, v1beta1.JobSucceeded)
	if got := replicaPhases(st)["j-worker-0"]; got != v1beta1.ReplicaDeleted {
		t.Fatalf("j-worker-0 is %s once the job finished, want Deleted", got)
	}
	if p := f.pod("j-worker-0"); p == nil || p.DeletionTimestamp == nil {
		t.Fatalf("j-worker-0 is not terminating: %v", p)
	}

	f.setPod("j-worker-0", succeeded)
	if _, writes := f.syncCountingWrites(job); writes != 0 {
		t.Errorf("%d status writes after the stopped pod exited, want none", writes)
	}
	if got := replicaPhases(f.status(job))["j-worker-0"]; got != v1beta1.ReplicaDeleted {
		t.Errorf("j-worker-0 is %s, want it to stay Deleted", got)
	}
}

// TestFinishKeepsOutcomeOfReplicaWhosePodIsGone: a replica that succeeded
// and whose pod was removed while the job ran is still Succeeded in the
// write that finishes the job.
func TestFinishKeepsOutcomeOfReplicaWhosePodIsGone(t *testing.T) {
	job := newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 1).
		withCleanUp(v1beta1.CleanUpPolicyNone).obj()
	f := newFixture(t, job)
	f.start(job)
	f.setPod("j-worker-0", succeeded)
	f.step(job)
	if err := f.kubeClient.CoreV1().Pods("ns").Delete(f.ctx, "j-worker-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.observe()
	if p := f.pod("j-worker-0"); p != nil {
		t.Fatalf("j-worker-0 still there: %v", p.Finalizers)
	}
	f.step(job)

	f.setPod("j-chief-0", succeeded)
	f.step(job)
	st := f.status(job)
	assertPhase(t, st, v1beta1.JobSucceeded)
	want := map[string]v1beta1.ReplicaPhase{"j-chief-0": v1beta1.ReplicaSucceeded, "j-worker-0": v1beta1.ReplicaSucceeded}
	if got := replicaPhases(st); !equalReplicaPhases(got, want) {
		t.Errorf("replicas %v, want %v", got, want)
	}
}
