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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

func TestFinishJob(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	earlier := metav1.NewTime(now.Add(-time.Minute))
	cases := []struct {
		name            string
		completed       *metav1.Time
		phase           v1beta1.JobPhase
		reason, failure string
		wantCompletion  metav1.Time
		wantConditions  []conditionChange
		wantEventType   string
		wantEventReason string
	}{{
		name:           "success",
		phase:          v1beta1.JobSucceeded,
		reason:         ReasonSucceeded,
		wantCompletion: now,
		wantConditions: []conditionChange{{v1beta1.ConditionCompleted, metav1.ConditionTrue, ReasonSucceeded, "msg"}},
		wantEventType:  corev1.EventTypeNormal, wantEventReason: ReasonSucceeded,
	}, {
		name:           "failure keeps an earlier completion time",
		completed:      &earlier,
		phase:          v1beta1.JobFailed,
		reason:         ReasonDeadlineExceeded,
		wantCompletion: earlier,
		wantConditions: []conditionChange{
			{v1beta1.ConditionCompleted, metav1.ConditionTrue, ReasonFailed, "msg"},
			{v1beta1.ConditionFailed, metav1.ConditionTrue, ReasonDeadlineExceeded, "msg"},
		},
		wantEventType: corev1.EventTypeWarning, wantEventReason: ReasonDeadlineExceeded,
	}, {
		name:           "a replica failure seen now is a condition too",
		phase:          v1beta1.JobFailed,
		reason:         "BackoffLimitExceeded",
		failure:        "replica worker-0 failed",
		wantCompletion: now,
		wantConditions: []conditionChange{
			{v1beta1.ConditionCompleted, metav1.ConditionTrue, ReasonFailed, "msg"},
			{v1beta1.ConditionFailed, metav1.ConditionTrue, "BackoffLimitExceeded", "msg"},
			{v1beta1.ConditionReplicaFailure, metav1.ConditionTrue, ReasonReplicaFailed, "replica worker-0 failed"},
		},
		wantEventType: corev1.EventTypeWarning, wantEventReason: "BackoffLimitExceeded",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := &v1beta1.TrainingJobStatus{CompletionTime: tc.completed, SuspectNodes: []v1beta1.SuspectNode{{Name: "n1"}}}
			d := finishJob(st, now.DeepCopy(), tc.phase, tc.reason, "msg", tc.failure)
			if st.Phase != tc.phase {
				t.Errorf("phase %q, want %q", st.Phase, tc.phase)
			}
			if st.CompletionTime == nil || !st.CompletionTime.Equal(&tc.wantCompletion) {
				t.Errorf("completion time %v, want %v", st.CompletionTime, tc.wantCompletion)
			}
			if st.SuspectNodes != nil {
				t.Errorf("suspect nodes %v kept: a finished job creates no pods", st.SuspectNodes)
			}
			if len(d.conditions) != len(tc.wantConditions) {
				t.Fatalf("conditions %+v, want %+v", d.conditions, tc.wantConditions)
			}
			for i := range d.conditions {
				if d.conditions[i] != tc.wantConditions[i] {
					t.Errorf("condition %d: %+v, want %+v", i, d.conditions[i], tc.wantConditions[i])
				}
			}
			if len(d.events) != 1 || d.events[0].eventType != tc.wantEventType || d.events[0].reason != tc.wantEventReason {
				t.Errorf("events %+v, want one %s %s", d.events, tc.wantEventType, tc.wantEventReason)
			}
			if len(d.deletes) != 0 || !d.comeBack.IsZero() || d.deleteJob {
				t.Errorf("the finish itself deletes nothing and asks no requeue: %+v", d)
			}
		})
	}
}

func TestCleanUpFinished(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	pod := func(name string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: phase}}
	}
	cases := []struct {
		name          string
		policy        v1beta1.CleanUpPolicy
		ttl           *int32
		doneAgo       time.Duration
		failedReason  string
		running       bool // the job had a Running condition
		wantDeleted   []string
		wantComeBack  time.Duration // after now; 0 for none
		wantDeleteJob bool
		wantPhases    map[string]v1beta1.ReplicaPhase
	}{{
		name:        "Unfinished stops the running pod and keeps the ended one",
		policy:      v1beta1.CleanUpPolicyUnfinished,
		wantDeleted: []string{"job-worker-1", "stray"},
		wantPhases:  map[string]v1beta1.ReplicaPhase{"job-worker-0": v1beta1.ReplicaSucceeded, "job-worker-1": v1beta1.ReplicaDeleted},
	}, {
		name:        "None keeps every replica pod",
		policy:      v1beta1.CleanUpPolicyNone,
		wantDeleted: []string{"stray"},
		wantPhases:  map[string]v1beta1.ReplicaPhase{"job-worker-0": v1beta1.ReplicaSucceeded, "job-worker-1": v1beta1.ReplicaRunning},
	}, {
		name:         "a job past its deadline stops running pods whatever the policy",
		policy:       v1beta1.CleanUpPolicyNone,
		failedReason: ReasonDeadlineExceeded,
		wantDeleted:  []string{"job-worker-1", "stray"},
		wantPhases:   map[string]v1beta1.ReplicaPhase{"job-worker-0": v1beta1.ReplicaSucceeded, "job-worker-1": v1beta1.ReplicaDeleted},
	}, {
		name:        "All deletes every pod",
		policy:      v1beta1.CleanUpPolicyAll,
		running:     true,
		wantDeleted: []string{"job-worker-0", "job-worker-1", "stray"},
	}, {
		name:         "a TTL not yet passed comes back when it does",
		policy:       v1beta1.CleanUpPolicyNone,
		ttl:          ptr.To[int32](60),
		doneAgo:      20 * time.Second,
		wantDeleted:  []string{"stray"},
		wantComeBack: 40 * time.Second,
	}, {
		name:          "a TTL passed deletes the job",
		policy:        v1beta1.CleanUpPolicyNone,
		ttl:           ptr.To[int32](60),
		doneAgo:       time.Minute,
		wantDeleted:   []string{"stray"},
		wantDeleteJob: true,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := &v1beta1.TrainingJobSpec{RunPolicy: v1beta1.RunPolicy{CleanUpPolicy: tc.policy, TTLSecondsAfterFinished: tc.ttl}}
			done := metav1.NewTime(now.Add(-tc.doneAgo))
			st := &v1beta1.TrainingJobStatus{Phase: v1beta1.JobSucceeded, CompletionTime: &done}
			if tc.failedReason != "" {
				st.Phase = v1beta1.JobFailed
			}
			if tc.running {
				meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1beta1.ConditionRunning, Status: metav1.ConditionTrue, Reason: ReasonReplicasRunning})
			}
			slots := []*slot{
				{name: "job-worker-0", pod: pod("job-worker-0", corev1.PodSucceeded)},
				{name: "job-worker-1", pod: pod("job-worker-1", corev1.PodRunning)},
			}
			d := cleanUpFinished(finishedJob{spec: spec, status: st, failedReason: tc.failedReason, slots: slots,
				extra: []*corev1.Pod{pod("stray", corev1.PodRunning)}, now: now})
			var deleted []string
			for _, del := range d.deletes {
				deleted = append(deleted, del.pod.Name)
			}
			if len(deleted) != len(tc.wantDeleted) {
				t.Fatalf("deleted %v, want %v", deleted, tc.wantDeleted)
			}
			for i := range deleted {
				if deleted[i] != tc.wantDeleted[i] {
					t.Errorf("deleted %v, want %v", deleted, tc.wantDeleted)
				}
			}
			for _, s := range slots {
				if want, ok := tc.wantPhases[s.name]; ok && s.phase != want {
					t.Errorf("%s: phase %q, want %q", s.name, s.phase, want)
				}
			}
			var wantComeBack time.Time
			if tc.wantComeBack != 0 {
				wantComeBack = now.Add(tc.wantComeBack)
			}
			if !d.comeBack.Equal(wantComeBack) || d.deleteJob != tc.wantDeleteJob {
				t.Errorf("come back %v, delete job %v; want %v, %v", d.comeBack, d.deleteJob, wantComeBack, tc.wantDeleteJob)
			}
			gotRunningFalse := len(d.conditions) == 1 && d.conditions[0].typ == v1beta1.ConditionRunning &&
				d.conditions[0].status == metav1.ConditionFalse
			if gotRunningFalse != tc.running || (!tc.running && len(d.conditions) != 0) {
				t.Errorf("conditions %+v; a Running condition turns False only where there was one", d.conditions)
			}
		})
	}
}
