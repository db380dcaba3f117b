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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// exitAt makes a pod fail with the code at the fake clock's time, after
// running since start.
func exitAt(f *fixture, code int32, start time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		failed(code)(p)
		started := metav1.NewTime(start)
		p.Status.StartTime = &started
		for i := range p.Status.ContainerStatuses {
			p.Status.ContainerStatuses[i].State.Terminated.FinishedAt = metav1.NewTime(f.clock.Now())
		}
	}
}

// TestRestartBackoff: each replacement of a replica that exits again waits
// twice as long, counted from the exit; the wait is in the replica's
// status and the job is requeued for exactly then; a replica that ran for
// the reset period starts from the base again.
func TestRestartBackoff(t *testing.T) {
	job := newTFJob("j").withReplicas("worker", 1).withRestartPolicy("worker", v1beta1.RestartPolicyOnFailure).
		withBackoffLimit(100).obj()
	f := newFixture(t, job)
	f.start(job)
	for i, delay := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second} {
		f.setPod("j-worker-0", exitAt(f, 1, f.clock.Now().Add(-time.Second)))
		requeue := f.step(job)
		if requeue != delay {
			t.Fatalf("restart %d: requeued after %v, want %v", i+1, requeue, delay)
		}
		rs := f.status(job).Tasks[0].ReplicaStatus[0]
		if rs.Phase != v1beta1.ReplicaDeleted || rs.Reason != ReasonBackOff || rs.RestartCount != int32(i+1) ||
			rs.RestartAt == nil || !rs.RestartAt.Time.Equal(f.clock.Now().Add(delay)) {
			t.Fatalf("restart %d: replica status %+v, want BackOff until %v", i+1, rs, f.clock.Now().Add(delay))
		}
		if !hasEvent(f.events(), corev1.EventTypeWarning, ReasonRestarting) {
			t.Errorf("restart %d: no Restarting event", i+1)
		}
		// Just before the time: nothing; at the time: the new pod.
		f.clock.Step(delay - time.Second)
		if d := f.step(job); d != time.Second {
			t.Errorf("restart %d: requeued after %v a second early, want 1s", i+1, d)
		}
		if got := f.createdPodNames(); len(got) != 0 {
			t.Fatalf("restart %d: created %v before the backoff passed", i+1, got)
		}
		f.clock.Step(time.Second)
		f.mustSync(job)
		if got := f.createdPodNames(); !equalStrings(got, []string{"j-worker-0"}) {
			t.Fatalf("restart %d: created %v once the backoff passed", i+1, got)
		}
		f.observe()
		f.setPod("j-worker-0", running)
		f.step(job)
	}
	// A pod that ran for the reset period: the next delay is the base.
	f.clock.Step(DefaultRestartBackoffReset)
	f.setPod("j-worker-0", exitAt(f, 1, f.clock.Now().Add(-DefaultRestartBackoffReset)))
	if d := f.step(job); d != DefaultRestartBackoffBase {
		t.Errorf("after a long run: requeued after %v, want %v", d, DefaultRestartBackoffBase)
	}
	if rs := f.status(job).Tasks[0].ReplicaStatus[0]; rs.RestartCount != 1 {
		t.Errorf("after a long run: restartCount %d, want 1", rs.RestartCount)
	}
	if st := f.status(job); st.BackoffCount != 5 {
		t.Errorf("backoffCount %d, want 5", st.BackoffCount)
	}
}

// TestDisruptionReplacedPromptly: a disrupted pod is replaced without a
// wait and without using a restart.
func TestDisruptionReplacedPromptly(t *testing.T) {
	job := newTFJob("j").withReplicas("worker", 1).obj()
	f := newFixture(t, job)
	f.start(job)
	f.setPod("j-worker-0", disruptedByPreemption)
	f.step(job)
	f.mustSync(job)
	if got := f.createdPodNames(); !equalStrings(got, []string{"j-worker-0"}) {
		t.Fatalf("created %v, want the replacement at once", got)
	}
	if st := f.status(job); st.BackoffCount != 0 || st.Tasks[0].ReplicaStatus[0].RestartAt != nil {
		t.Errorf("backoffCount %d restartAt %v, want 0 and none", st.BackoffCount, st.Tasks[0].ReplicaStatus[0].RestartAt)
	}
}

// TestSucceededReplicaNotRerun: a worker whose success the status recorded
// is not run again when its pod disappears, and still counts for the
// outcome.
func TestSucceededReplicaNotRerun(t *testing.T) {
	job := newPyTorchJob("p").withReplicas("worker", 2).obj()
	f := newFixture(t, job)
	f.start(job)
	f.setPod("p-worker-0", succeeded)
	f.step(job)
	if p := f.pod("p-worker-0"); p == nil || hasOutcomeFinalizer(p) {
		t.Fatalf("the succeeded pod should have lost its finalizer once recorded: %+v", p)
	}
	// Garbage-collected, or deleted by hand.
	if err := f.kubeClient.Tracker().Delete(podsGVR, "ns", "p-worker-0"); err != nil {
		t.Fatal(err)
	}
	f.observe()
	f.clock.Step(time.Hour)
	f.mustSync(job)
	if got := f.createdPodNames(); len(got) != 0 {
		t.Fatalf("created %v: a succeeded replica was run again", got)
	}
	f.observe()
	if rs := f.status(job).Tasks[0].ReplicaStatus[0]; rs.Phase != v1beta1.ReplicaSucceeded || rs.UID == "" {
		t.Fatalf("worker-0 status %+v, want Succeeded with its pod's UID", rs)
	}
	f.setPod("p-worker-1", succeeded)
	f.step(job)
	assertPhase(t, f.status(job), v1beta1.JobSucceeded)
}

// TestVanishedRunningReplicaCountsAsFailed: a pod that disappears while it
// runs, its outcome never recorded, counts as a failure of its replica.
func TestVanishedRunningReplicaCountsAsFailed(t *testing.T) {
	t.Run("Never fails the job", func(t *testing.T) {
		job := newTFJob("j").withReplicas("worker", 2).obj()
		f := newFixture(t, job)
		f.start(job)
		if err := f.kubeClient.Tracker().Delete(podsGVR, "ns", "j-worker-1"); err != nil {
			t.Fatal(err)
		}
		f.observe()
		f.step(job)
		st := f.status(job)
		assertPhase(t, st, v1beta1.JobFailed)
		assertCondition(t, st, v1beta1.ConditionFailed, metav1.ConditionTrue, ReasonReplicaFailed)
	})
	t.Run("OnFailure restarts it, counted", func(t *testing.T) {
		job := newTFJob("j").withReplicas("worker", 2).withRestartPolicy("worker", v1beta1.RestartPolicyOnFailure).obj()
		f := newFixture(t, job)
		f.start(job)
		if err := f.kubeClient.Tracker().Delete(podsGVR, "ns", "j-worker-1"); err != nil {
			t.Fatal(err)
		}
		f.observe()
		f.step(job)
		if st := f.status(job); st.BackoffCount != 1 || st.Phase != v1beta1.JobRunning {
			t.Fatalf("backoff %d phase %s, want 1 and Running", st.BackoffCount, st.Phase)
		}
		f.clock.Step(DefaultRestartBackoffBase)
		f.mustSync(job)
		if got := f.createdPodNames(); !equalStrings(got, []string{"j-worker-1"}) {
			t.Fatalf("created %v, want the replacement", got)
		}
	})
	t.Run("deleted while it runs", func(t *testing.T) {
		job := newTFJob("j").withReplicas("worker", 2).withRestartPolicy("worker", v1beta1.RestartPolicyOnFailure).obj()
		f := newFixture(t, job)
		f.start(job)
		// kubectl delete pod: the finalizer keeps it until its fate is recorded.
		if err := f.kubeClient.CoreV1().Pods("ns").Delete(f.ctx, "j-worker-1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		f.observe()
		if p := f.pod("j-worker-1"); p == nil || p.DeletionTimestamp == nil {
			t.Fatalf("the finalizer should keep the deleted pod: %+v", p)
		}
		f.step(job)
		if st := f.status(job); st.BackoffCount != 1 || st.Tasks[0].ReplicaStatus[1].Phase != v1beta1.ReplicaDeleted {
			t.Fatalf("backoff %d replica %+v, want 1 and Deleted", st.BackoffCount, st.Tasks[0].ReplicaStatus[1])
		}
		if p := f.pod("j-worker-1"); p != nil {
			t.Fatalf("the pod should be gone once its outcome was recorded: %+v", p.Finalizers)
		}
	})
}

// TestOutcomeFinalizer: every replica pod is created with the finalizer,
// and it comes off on every path: outcome recorded, pause, clean-up, job
// deletion, and a job that is gone.
func TestOutcomeFinalizer(t *testing.T) {
	job := newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 2).withCleanUp(v1beta1.CleanUpPolicyNone).obj()
	t.Run("created with it", func(t *testing.T) {
		f := newFixture(t, job)
		f.mustSync(job)
		for _, p := range f.createdPods() {
			if !hasOutcomeFinalizer(p) {
				t.Errorf("pod %s has finalizers %v", p.Name, p.Finalizers)
			}
		}
	})
	t.Run("finished job with clean-up None", func(t *testing.T) {
		f := newFixture(t, job)
		f.start(job)
		f.setPod("j-chief-0", succeeded)
		f.step(job)
		assertPhase(t, f.status(job), v1beta1.JobSucceeded)
		for _, name := range []string{"j-chief-0", "j-worker-0", "j-worker-1"} {
			if p := f.pod(name); p == nil || hasOutcomeFinalizer(p) {
				t.Errorf("pod %s: %+v, want kept without the finalizer", name, p)
			}
		}
	})
	t.Run("pause", func(t *testing.T) {
		f := newFixture(t, job)
		f.start(job)
		paused := f.pause(job)
		f.step(paused)
		f.step(paused)
		if got := f.podNames(); len(got) != 0 {
			t.Fatalf("pods %v remain after the pause", got)
		}
		assertPhase(t, f.status(paused), v1beta1.JobPaused)
	})
	t.Run("job deleted", func(t *testing.T) {
		f := newFixture(t, job)
		f.start(job)
		// Foreground deletion: the job waits for its pods with a deletionTimestamp.
		deleting := f.job(job)
		now := metav1.NewTime(f.clock.Now())
		deleting.SetDeletionTimestamp(&now)
		f.updateJob(deleting)
		f.mustSync(deleting)
		for _, name := range []string{"j-chief-0", "j-worker-0", "j-worker-1"} {
			if p := f.pod(name); p == nil || hasOutcomeFinalizer(p) {
				t.Errorf("pod %s of a deleted job keeps the finalizer", name)
			}
		}
	})
	t.Run("job gone", func(t *testing.T) {
		f := newFixture(t, job)
		f.start(job)
		if err := f.jobClient.Tracker().Delete(v1beta1.SchemeGroupVersion.WithResource("tensorflowtrainingjobs"), "ns", "j"); err != nil {
			t.Fatal(err)
		}
		f.observe()
		// The garbage collector deletes the orphans; their events queue the job.
		for _, name := range []string{"j-chief-0", "j-worker-0", "j-worker-1"} {
			if err := f.kubeClient.CoreV1().Pods("ns").Delete(f.ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		f.observe()
		if n := f.c.queue.Len(); n != 1 {
			t.Errorf("queue holds %d keys, want the gone job's", n)
		}
		f.mustSync(job)
		f.observe()
		if got := f.podNames(); len(got) != 0 {
			t.Fatalf("pods %v stuck on the finalizer", got)
		}
	})
}

// The first status records the pods as soon as they are created; a
// reconcile whose pod cache has not shown them yet must not take them for
// vanished (seen in e2e as "vanished before its outcome was recorded").
func TestCreatedPodsNotYetCachedAreNotVanished(t *testing.T) {
	job := newTFJob("j").withReplicas("worker", 2).obj()
	f := newFixture(t, job)
	f.mustSync(job)
	// The job's cache has the first status; the pod cache has neither pod.
	tfs, _ := f.jobClient.BatchV1beta1().TensorFlowTrainingJobs("ns").List(f.ctx, metav1.ListOptions{})
	var objs []any
	for i := range tfs.Items {
		objs = append(objs, &tfs.Items[i])
	}
	f.replaceAll(f.jobInformers.Batch().V1beta1().TensorFlowTrainingJobs().Informer().GetIndexer(), objs)
	if f.c.expectations.SatisfiedExpectations(keyOf(job).String()) {
		t.Fatalf("expectations satisfied before the pods were seen")
	}
	f.kubeClient.ClearActions()
	f.jobClient.ClearActions()
	f.mustSync(job)
	if n := f.statusUpdates(); n != 0 {
		t.Errorf("%d status writes while the cache was behind, want none", n)
	}
	if got := f.createdPodNames(); len(got) != 0 {
		t.Errorf("created %v while the pods were on their way into the cache", got)
	}
	f.observe()
	f.setAll(running)
	f.step(job)
	assertPhase(t, f.status(job), v1beta1.JobRunning)
}

func withFailurePolicy(job v1beta1.TrainingJob, rules ...v1beta1.FailurePolicyRule) v1beta1.TrainingJob {
	job.CommonSpec().RunPolicy.FailurePolicy = &v1beta1.FailurePolicy{Rules: rules}
	return job
}

func oomKilled(p *corev1.Pod) {
	failed(137)(p)
	for i := range p.Status.ContainerStatuses {
		p.Status.ContainerStatuses[i].State.Terminated.Reason = "OOMKilled"
	}
}

// TestFailurePolicyActions: the first matching rule decides, before the
// restart policy; each action does what it says.
func TestFailurePolicyActions(t *testing.T) {
	in := func(codes ...int32) *v1beta1.FailurePolicyOnExitCodes {
		return &v1beta1.FailurePolicyOnExitCodes{Operator: v1beta1.FailurePolicyOnExitCodesOpIn, Values: codes}
	}
	cases := []struct {
		name        string
		rules       []v1beta1.FailurePolicyRule
		pod         func(*corev1.Pod)
		wantPhase   v1beta1.JobPhase
		wantReason  string // of the Failed condition
		wantBackoff int32
		wantDeleted []string
	}{{
		name:       "FailJob on an exit code beats OnFailure",
		rules:      []v1beta1.FailurePolicyRule{{Action: v1beta1.FailurePolicyActionFailJob, OnExitCodes: in(42)}},
		pod:        failed(42),
		wantPhase:  v1beta1.JobFailed,
		wantReason: ReasonPodFailurePolicy,
		// Clean-up policy Unfinished: the running pods go.
		wantDeleted: []string{"j-chief-0", "j-worker-0"},
	}, {
		name:        "no rule matches: the restart policy decides",
		rules:       []v1beta1.FailurePolicyRule{{Action: v1beta1.FailurePolicyActionFailJob, OnExitCodes: in(42)}},
		pod:         failed(1),
		wantPhase:   v1beta1.JobRunning,
		wantBackoff: 1,
		wantDeleted: []string{"j-worker-1"},
	}, {
		name:        "Ignore replaces without counting",
		rules:       []v1beta1.FailurePolicyRule{{Action: v1beta1.FailurePolicyActionIgnore, OnReasons: []string{"OOMKilled"}}},
		pod:         oomKilled,
		wantPhase:   v1beta1.JobRunning,
		wantDeleted: []string{"j-worker-1"},
	}, {
		name:        "RestartJob deletes every pod, counted once",
		rules:       []v1beta1.FailurePolicyRule{{Action: v1beta1.FailurePolicyActionRestartJob, ReplicaTypes: []v1beta1.ReplicaType{"worker"}}},
		pod:         failed(1),
		wantPhase:   v1beta1.JobRunning,
		wantBackoff: 1,
		wantDeleted: []string{"j-chief-0", "j-worker-0", "j-worker-1"},
	}, {
		name:        "a rule for other replica types does not match",
		rules:       []v1beta1.FailurePolicyRule{{Action: v1beta1.FailurePolicyActionFailJob, ReplicaTypes: []v1beta1.ReplicaType{"chief"}}},
		pod:         failed(1),
		wantPhase:   v1beta1.JobRunning,
		wantBackoff: 1,
		wantDeleted: []string{"j-worker-1"},
	}, {
		name: "pod condition: a disruption that fails the job",
		rules: []v1beta1.FailurePolicyRule{{Action: v1beta1.FailurePolicyActionFailJob,
			OnPodConditions: []v1beta1.FailurePolicyOnPodCondition{{Type: corev1.DisruptionTarget}}}},
		pod:         disruptedByPreemption,
		wantPhase:   v1beta1.JobFailed,
		wantReason:  ReasonPodFailurePolicy,
		wantDeleted: []string{"j-chief-0", "j-worker-0"},
	}, {
		name: "first match wins",
		rules: []v1beta1.FailurePolicyRule{
			{Action: v1beta1.FailurePolicyActionIgnore, OnExitCodes: &v1beta1.FailurePolicyOnExitCodes{
				Operator: v1beta1.FailurePolicyOnExitCodesOpNotIn, Values: []int32{1}}},
			{Action: v1beta1.FailurePolicyActionFailJob},
		},
		pod:         failed(3),
		wantPhase:   v1beta1.JobRunning,
		wantDeleted: []string{"j-worker-1"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := withFailurePolicy(newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 2).
				withRestartPolicy("worker", v1beta1.RestartPolicyOnFailure).obj(), tc.rules...)
			f := newFixture(t, job)
			f.start(job)
			f.setPod("j-worker-1", tc.pod)
			f.mustSync(job)
			deleted := f.deletedPodNames()
			st := f.status(job)
			events := f.events()
			assertPhase(t, st, tc.wantPhase)
			if tc.wantReason != "" {
				assertCondition(t, st, v1beta1.ConditionFailed, metav1.ConditionTrue, tc.wantReason)
				if !hasEvent(events, corev1.EventTypeWarning, tc.wantReason) {
					t.Errorf("no %s event: %v", tc.wantReason, events)
				}
			}
			if st.BackoffCount != tc.wantBackoff {
				t.Errorf("backoffCount %d, want %d", st.BackoffCount, tc.wantBackoff)
			}
			if !equalStrings(deleted, tc.wantDeleted) {
				t.Errorf("deleted %v, want %v", deleted, tc.wantDeleted)
			}
		})
	}
}

// TestRestartJob: after RestartJob every replica gets a new pod, all after
// the failed replica's backoff, and a second failure in the same restart
// is not counted again.
func TestRestartJob(t *testing.T) {
	job := withFailurePolicy(newPyTorchJob("p").withReplicas("master", 1).withReplicas("worker", 2).obj(),
		v1beta1.FailurePolicyRule{Action: v1beta1.FailurePolicyActionRestartJob})
	f := newFixture(t, job)
	f.start(job)
	old := map[string]string{}
	for _, n := range f.podNames() {
		old[n] = string(f.pod(n).UID)
	}
	f.setPod("p-worker-0", failed(1))
	f.setPod("p-worker-1", failed(1))
	f.step(job)
	st := f.status(job)
	if st.BackoffCount != 1 {
		t.Fatalf("backoffCount %d, want 1 for one job restart", st.BackoffCount)
	}
	if !hasEvent(f.events(), corev1.EventTypeWarning, ReasonRestartingJob) {
		t.Errorf("no RestartingJob event")
	}
	f.mustSync(job)
	if got := f.createdPodNames(); len(got) != 0 {
		t.Fatalf("created %v before the backoff passed", got)
	}
	f.clock.Step(DefaultRestartBackoffBase)
	f.mustSync(job)
	if got := f.createdPodNames(); !equalStrings(got, []string{"p-master-0", "p-worker-0", "p-worker-1"}) {
		t.Fatalf("created %v, want every replica", got)
	}
	f.observe()
	for n, uid := range old {
		if p := f.pod(n); p == nil || string(p.UID) == uid {
			t.Errorf("pod %s was not recreated", n)
		}
	}
}

func joinNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += "+"
		}
		out += n
	}
	return out
}

// TestRestartJobWaitsForEveryOldPod: a whole-job restart creates no new pod
// while an old one still terminates, so that new ranks never meet old ones.
func TestRestartJobWaitsForEveryOldPod(t *testing.T) {
	job := newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 1).obj()
	job.CommonSpec().RunPolicy.FailurePolicy = &v1beta1.FailurePolicy{Rules: []v1beta1.FailurePolicyRule{{Action: v1beta1.FailurePolicyActionRestartJob}}}
	f := newFixture(t, job)
	f.gracefulDeletes()
	f.start(job)
	f.setPod("j-worker-0", failed(137))
	f.mustSync(job)
	if got := f.deletedPodNames(); len(got) != 2 {
		t.Fatalf("deleted %v, want both pods", got)
	}
	f.observe()
	f.removePod("j-worker-0")
	f.clock.Step(time.Minute) // past any backoff
	f.mustSync(job)
	if got := f.createdPodNames(); len(got) != 0 {
		t.Fatalf("created %v while the old master still terminates", got)
	}
	f.observe()
	if rs := f.status(job).Tasks[1].ReplicaStatus[0]; rs.Reason != ReasonRestartingJob {
		t.Errorf("waiting worker's reason %q, want %s", rs.Reason, ReasonRestartingJob)
	}
	f.removePod("j-master-0")
	f.mustSync(job)
	if got := f.createdPodNames(); !equalStrings(got, []string{"j-master-0", "j-worker-0"}) {
		t.Errorf("created %v, want both replicas once every old pod is gone", got)
	}
}
