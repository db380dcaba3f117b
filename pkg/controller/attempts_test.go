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
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// TestAttemptsOfRestartedJob: a job restarted twice by a RestartJob rule,
// then failed, has three attempts, each ended with its reason, each naming
// the replica that failed in it with its node, exit code and log tail.
func TestAttemptsOfRestartedJob(t *testing.T) {
	job := withFailurePolicy(newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 1).withBackoffLimit(2).obj(),
		v1beta1.FailurePolicyRule{Action: v1beta1.FailurePolicyActionRestartJob})
	f := newFixture(t, job)
	f.start(job)
	if st := f.status(job); len(st.Attempts) != 1 || st.AttemptCount != 1 || st.Attempts[0].EndTime != nil {
		t.Fatalf("attempts %+v (count %d) after the start, want one open attempt", st.Attempts, st.AttemptCount)
	}
	for restart := 1; restart <= 3; restart++ {
		f.setPod("j-worker-0", func(p *corev1.Pod) {
			failed(int32(10 + restart))(p)
			p.Status.ContainerStatuses[0].State.Terminated.Reason = "Error"
			p.Spec.NodeName = fmt.Sprintf("node-%d", restart)
		})
		f.step(job)
		f.clock.Step(time.Minute)
		f.step(job)
		f.setAll(running)
		f.step(job)
	}
	st := f.status(job)
	assertPhase(t, st, v1beta1.JobFailed)
	if len(st.Attempts) != 3 || st.AttemptCount != 3 {
		t.Fatalf("%d attempts (count %d), want 3: %+v", len(st.Attempts), st.AttemptCount, st.Attempts)
	}
	wantReasons := []string{StopRestartJob, StopRestartJob, ReasonBackoffLimitExceeded}
	for i, a := range st.Attempts {
		if a.Number != int32(i+1) || a.EndTime == nil || a.Reason != wantReasons[i] || a.Message == "" {
			t.Errorf("attempt %d: number %d, end %v, reason %q, message %q; want number %d ended with %s and a message",
				i, a.Number, a.EndTime, a.Reason, a.Message, i+1, wantReasons[i])
		}
		if i > 0 && a.StartTime.Before(st.Attempts[i-1].EndTime) {
			t.Errorf("attempt %d started at %s, before the one before it ended (%s)", a.Number, a.StartTime, st.Attempts[i-1].EndTime)
		}
		if len(a.FailedReplicas) != 1 || a.FailedReplicaCount != 1 {
			t.Errorf("attempt %d: failed replicas %+v (count %d), want the worker once", a.Number, a.FailedReplicas, a.FailedReplicaCount)
			continue
		}
		fr := a.FailedReplicas[0]
		if fr.Name != "j-worker-0" || fr.Node != fmt.Sprintf("node-%d", i+1) || ptr.Deref(fr.ExitCode, -1) != int32(11+i) ||
			fr.Reason != "Error" || fr.Logs == "" || fr.UID == "" {
			t.Errorf("attempt %d: failed replica %+v, want j-worker-0 on node-%d, exit %d, reason Error, with its log tail and UID",
				a.Number, fr, i+1, 11+i)
		}
	}
}

// TestAttemptsAcrossPause: a pause ends the attempt with the steps it made
// and the checkpoint it wrote; the resume starts the next one from that
// checkpoint.
func TestAttemptsAcrossPause(t *testing.T) {
	job := newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 1).obj()
	f := newFixture(t, job)
	f.start(job)
	f.clock.Step(time.Second)
	f.reportCheckpoint(job, 40)
	f.reportProgress(job, 45, true)
	f.pause(job)
	f.step(job)
	f.step(job)
	st := f.status(job)
	assertPhase(t, st, v1beta1.JobPaused)
	if len(st.Attempts) != 1 {
		t.Fatalf("attempts %+v, want the first, ended", st.Attempts)
	}
	first := st.Attempts[0]
	if first.Reason != StopPause || first.EndTime == nil || ptr.Deref(first.Steps, -1) != 45 ||
		first.LastCheckpoint == nil || ptr.Deref(first.LastCheckpoint.Step, -1) != 40 || first.ResumedFrom != nil {
		t.Errorf("first attempt %+v: want ended by Pause after 45 steps, its last checkpoint at step 40, resumed from none", first)
	}

	f.clock.Step(time.Minute)
	j := f.job(job)
	j.CommonSpec().RunMode.Pause.Enabled = false
	f.updateJob(j)
	f.step(job)
	f.setAll(running)
	f.step(job)
	f.clock.Step(time.Second)
	f.reportProgress(job, 50, true)
	f.setAll(succeeded)
	f.step(job)
	st = f.status(job)
	assertPhase(t, st, v1beta1.JobSucceeded)
	if len(st.Attempts) != 2 {
		t.Fatalf("attempts %+v, want two", st.Attempts)
	}
	second := st.Attempts[1]
	if second.ResumedFrom == nil || ptr.Deref(second.ResumedFrom.Step, -1) != 40 || second.Reason != ReasonSucceeded ||
		ptr.Deref(second.Steps, -1) != 10 || second.LastCheckpoint != nil {
		t.Errorf("second attempt %+v: want resumed from step 40, Succeeded after 10 steps, no checkpoint of its own", second)
	}
}

// TestAttemptHistoryIsBounded: the history keeps the newest MaxAttempts
// attempts, counts every one, and lists failed replicas only in the newest
// MaxAttemptsWithFailedReplicas.
func TestAttemptHistoryIsBounded(t *testing.T) {
	st := &v1beta1.TrainingJobStatus{}
	r := &reconciler{status: st, now: time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)}
	total := batch.MaxAttempts + 5
	for range total {
		r.creates = []*slot{{}}
		r.beginAttempt()
		a := openAttempt(st)
		a.FailedReplicas = []v1beta1.FailedReplica{{Name: "j-worker-0", Logs: "the end of the log", Time: metav1.NewTime(r.now)}}
		a.FailedReplicaCount = 1
		r.now = r.now.Add(time.Minute)
		endAttempt(st, r.now, StopRestartJob, "restarted")
	}
	if len(st.Attempts) != batch.MaxAttempts || st.AttemptCount != int32(total) {
		t.Fatalf("%d attempts kept, count %d; want %d kept of %d", len(st.Attempts), st.AttemptCount, batch.MaxAttempts, total)
	}
	if first, last := st.Attempts[0].Number, st.Attempts[len(st.Attempts)-1].Number; first != int32(total-batch.MaxAttempts+1) || last != int32(total) {
		t.Errorf("kept attempts %d to %d, want the newest, %d to %d", first, last, total-batch.MaxAttempts+1, total)
	}
	for i, a := range st.Attempts {
		wantListed := i >= len(st.Attempts)-batch.MaxAttemptsWithFailedReplicas
		if listed := len(a.FailedReplicas) > 0; listed != wantListed || a.FailedReplicaCount != 1 {
			t.Errorf("attempt %d lists its failed replicas: %v, count %d; want %v, count 1", a.Number, listed, a.FailedReplicaCount, wantListed)
		}
	}
}
