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
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

func TestStall(t *testing.T) {
	for _, tc := range []struct {
		policy      v1beta1.StallPolicy
		wantPhase   v1beta1.JobPhase
		wantDeletes int
	}{
		{v1beta1.StallPolicyNone, v1beta1.JobRunning, 0},
		{v1beta1.StallPolicyFail, v1beta1.JobFailed, 2}, // clean-up policy Unfinished
		{v1beta1.StallPolicyRestart, v1beta1.JobRunning, 2},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			b := newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 1)
			b.spec().RunPolicy.ProgressDeadlineSeconds = ptr.To[int64](60)
			b.spec().RunPolicy.StallPolicy = tc.policy
			job := b.obj()
			f := newFixture(t, job)
			f.start(job)
			started := f.clock.Now()
			f.setAll(func(p *corev1.Pod) {
				running(p)
				for i := range p.Status.ContainerStatuses {
					p.Status.ContainerStatuses[i].State.Running.StartedAt = metav1.NewTime(started)
				}
			})
			f.clock.Step(40 * time.Second)
			f.reportProgress(job, 10, true)
			// 59s after the last step moved: not yet.
			f.clock.Step(59 * time.Second)
			f.reportProgress(job, 10, false)
			if d := f.step(job); d <= 0 || d > time.Second {
				t.Errorf("requeue after %v, want at the deadline, 1s away", d)
			}
			if c := condition(f.status(job), v1beta1.ConditionStalled); c != nil && c.Status == metav1.ConditionTrue {
				t.Fatalf("stalled before the deadline: %+v", c)
			}
			f.clock.Step(time.Second)
			f.mustSync(job)
			if got := f.deletedPodNames(); len(got) != tc.wantDeletes {
				t.Errorf("deleted %v, want %d pods", got, tc.wantDeletes)
			}
			f.observe()
			st := f.status(job)
			assertCondition(t, st, v1beta1.ConditionStalled, metav1.ConditionTrue, v1beta1.ReasonProgressDeadlineExceeded)
			if c := condition(st, v1beta1.ConditionStalled); !strings.Contains(c.Message, "step 10") || !strings.Contains(c.Message, "j-master-0") {
				t.Errorf("Stalled message %q does not name the last step and reporter", c.Message)
			}
			assertPhase(t, st, tc.wantPhase)
			if !hasEvent(f.events(), corev1.EventTypeWarning, ReasonStalled) {
				t.Errorf("no Stalled event")
			}
			logged := st.Stall != nil && len(st.Stall.Logs) == 2
			if acts := tc.policy != v1beta1.StallPolicyNone; logged != acts {
				t.Errorf("status.stall %+v: log tails kept %v, want %v", st.Stall, logged, acts)
			}
			if tc.policy == v1beta1.StallPolicyFail {
				assertCondition(t, st, v1beta1.ConditionFailed, metav1.ConditionTrue, ReasonStalled)
			}
			if tc.policy == v1beta1.StallPolicyRestart {
				if st.BackoffCount != 1 || st.Accounting.Interruptions != 1 || st.Accounting.Recent[0].Reason != StopStalled {
					t.Errorf("backoffCount %d, accounting %+v: want one counted stall restart", st.BackoffCount, st.Accounting)
				}
			}
		})
	}
}

func TestStallClockSkipsStarting(t *testing.T) {
	b := newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 1)
	b.spec().RunPolicy.ProgressDeadlineSeconds = ptr.To[int64](60)
	job := b.obj()
	f := newFixture(t, job)
	f.step(job)
	// Pods pending for ten minutes: no stall.
	f.clock.Step(10 * time.Minute)
	f.step(job)
	if c := condition(f.status(job), v1beta1.ConditionStalled); c != nil {
		t.Fatalf("a starting job stalled: %+v", c)
	}
	now := f.clock.Now()
	f.setAll(func(p *corev1.Pod) {
		running(p)
		for i := range p.Status.ContainerStatuses {
			p.Status.ContainerStatuses[i].State.Running.StartedAt = metav1.NewTime(now)
		}
	})
	if d := f.step(job); d != 60*time.Second {
		t.Errorf("requeue after %v, want the full deadline from when the replicas run", d)
	}
}

func TestStallConditionDecisions(t *testing.T) {
	stalled := []metav1.Condition{{Type: v1beta1.ConditionStalled, Status: metav1.ConditionTrue,
		Reason: v1beta1.ReasonProgressDeadlineExceeded}}
	first := stalledCondition(true, "no progress for 60s", v1beta1.StallPolicyFail)
	if len(first.events) != 1 || first.events[0].reason != ReasonStalled ||
		first.events[0].message != "Stalled: no progress for 60s (stall policy Fail)" {
		t.Errorf("a new stall records one event: %+v", first.events)
	}
	again := stalledCondition(false, "no progress for 90s", v1beta1.StallPolicyFail)
	if len(again.events) != 0 {
		t.Errorf("a stall already recorded records no event again: %+v", again.events)
	}
	for _, d := range []decision{first, again} {
		if len(d.conditions) != 1 || d.conditions[0].typ != v1beta1.ConditionStalled || d.conditions[0].status != metav1.ConditionTrue {
			t.Errorf("Stalled is True: %+v", d.conditions)
		}
	}
	if d := stallResolved(stalled, "the job makes progress"); len(d.conditions) != 1 ||
		d.conditions[0].status != metav1.ConditionFalse || d.conditions[0].reason != v1beta1.ReasonProgressing {
		t.Errorf("a True Stalled condition turns False: %+v", d.conditions)
	}
	if d := stallResolved(nil, "the job makes progress"); len(d.conditions) != 0 {
		t.Errorf("no Stalled condition, nothing to resolve: %+v", d.conditions)
	}
}
