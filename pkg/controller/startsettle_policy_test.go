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
	"k8s.io/apimachinery/pkg/types"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// runningSince makes a pod run with its containers started at t.
func runningSince(t time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		running(p)
		for i := range p.Status.ContainerStatuses {
			p.Status.ContainerStatuses[i].State.Running.StartedAt = metav1.NewTime(t)
		}
	}
}

func replicaPhases(st *v1beta1.TrainingJobStatus) map[string]v1beta1.ReplicaPhase {
	out := map[string]v1beta1.ReplicaPhase{}
	for _, t := range st.Tasks {
		for _, rs := range t.ReplicaStatus {
			out[rs.Name] = rs.Phase
		}
	}
	return out
}

// syncCountingWrites reconciles once and returns the requeue and the
// status writes it made.
func (f *fixture) syncCountingWrites(job v1beta1.TrainingJob) (time.Duration, int) {
	f.t.Helper()
	d := f.mustSync(job)
	n := f.statusUpdates()
	f.observe()
	return d, n
}

func TestStartingReplicasShareOneStatusWrite(t *testing.T) {
	job := newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 2).obj()
	f := newFixture(t, job)
	f.step(job)
	assertPhase(t, f.status(job), v1beta1.JobPending)

	f.setPod("j-chief-0", runningSince(f.clock.Now()))
	if d, writes := f.syncCountingWrites(job); writes != 0 || d != startSettle {
		t.Fatalf("first start: %d status writes, requeue %v; want none, requeued after %v", writes, d, startSettle)
	}
	f.clock.Step(time.Second)
	f.setPod("j-worker-0", runningSince(f.clock.Now()))
	if d, writes := f.syncCountingWrites(job); writes != 0 || d != time.Second {
		t.Fatalf("second start: %d status writes, requeue %v; want none, requeued for the first start + %v", writes, d, startSettle)
	}
	f.clock.Step(time.Second)
	if _, writes := f.syncCountingWrites(job); writes != 1 {
		t.Fatalf("%v after the first start: %d status writes, want 1", startSettle, writes)
	}
	st := f.status(job)
	assertPhase(t, st, v1beta1.JobPending)
	want := map[string]v1beta1.ReplicaPhase{"j-chief-0": v1beta1.ReplicaRunning, "j-worker-0": v1beta1.ReplicaRunning, "j-worker-1": v1beta1.ReplicaPending}
	if got := replicaPhases(st); !equalReplicaPhases(got, want) {
		t.Fatalf("replicas %v, want %v", got, want)
	}
	if st.Aggregate.Running != 2 || st.Aggregate.Pending != 1 {
		t.Errorf("aggregate %+v, want 2 running and 1 pending", st.Aggregate)
	}

	// The last start makes the job Running: no wait.
	f.setPod("j-worker-1", runningSince(f.clock.Now()))
	if _, writes := f.syncCountingWrites(job); writes != 1 {
		t.Fatalf("last start: %d status writes, want 1", writes)
	}
	assertPhase(t, f.status(job), v1beta1.JobRunning)
}

func TestStartWithoutStartTimeIsWrittenAtOnce(t *testing.T) {
	job := newTFJob("j").withReplicas("worker", 3).obj()
	f := newFixture(t, job)
	f.step(job)
	for _, tc := range []struct {
		pod    string
		why    string
		change func(*corev1.Pod)
	}{
		{"j-worker-0", "no start time", running},
		{"j-worker-1", "a start in the controller's future", runningSince(f.clock.Now().Add(time.Minute))},
	} {
		f.setPod(tc.pod, tc.change)
		if _, writes := f.syncCountingWrites(job); writes != 1 {
			t.Fatalf("%s: %d status writes, want 1", tc.why, writes)
		}
		st := f.status(job)
		assertPhase(t, st, v1beta1.JobPending)
		if got := replicaPhases(st)[tc.pod]; got != v1beta1.ReplicaRunning {
			t.Fatalf("%s: %s is %s, want Running", tc.why, tc.pod, got)
		}
	}
}

func equalReplicaPhases(a, b map[string]v1beta1.ReplicaPhase) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestStartHoldPolicy: a status whose only change is replicas that started
// moments ago may wait for the others; anything else is written at once.
func TestStartHoldPolicy(t *testing.T) {
	now := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	status := func(phase v1beta1.JobPhase, replicas ...v1beta1.ReplicaPhase) *v1beta1.TrainingJobStatus {
		st := &v1beta1.TrainingJobStatus{Phase: phase, Tasks: []v1beta1.TaskStatus{{Type: v1beta1.ReplicaTypeWorker}}}
		for i, p := range replicas {
			name := fmt.Sprintf("j-worker-%d", i)
			st.Tasks[0].ReplicaStatus = append(st.Tasks[0].ReplicaStatus,
				v1beta1.ReplicaStatus{Name: name, UID: types.UID(name), Phase: p})
		}
		return st
	}
	startedAt := func(ago time.Duration) *corev1.Pod {
		p := &corev1.Pod{}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{
			Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-ago))}}}}
		return p
	}
	pending, running := v1beta1.ReplicaPending, v1beta1.ReplicaRunning
	cases := map[string]struct {
		old, cur *v1beta1.TrainingJobStatus
		pods     map[string]*corev1.Pod
		events   int
		until    time.Time
		hold     bool
	}{
		"a replica started a moment ago: held until the settle time": {
			old: status(v1beta1.JobPending, pending, pending), cur: status(v1beta1.JobPending, running, pending),
			pods:  map[string]*corev1.Pod{"j-worker-0": startedAt(500 * time.Millisecond)},
			until: now.Add(startSettle - 500*time.Millisecond), hold: true,
		},
		"the first start is older than the settle time: written": {
			old: status(v1beta1.JobPending, pending, pending), cur: status(v1beta1.JobPending, running, pending),
			pods:  map[string]*corev1.Pod{"j-worker-0": startedAt(3 * time.Second)},
			until: now.Add(startSettle - 3*time.Second),
		},
		"the phase changes: written": {
			old: status(v1beta1.JobPending, pending, pending), cur: status(v1beta1.JobRunning, running, running),
			pods: map[string]*corev1.Pod{"j-worker-0": startedAt(0), "j-worker-1": startedAt(0)},
		},
		"an event to record: written": {
			old: status(v1beta1.JobPending, pending), cur: status(v1beta1.JobPending, running),
			pods: map[string]*corev1.Pod{"j-worker-0": startedAt(0)}, events: 1,
		},
		"a start without a time: written": {
			old: status(v1beta1.JobPending, pending), cur: status(v1beta1.JobPending, running),
			pods: map[string]*corev1.Pod{"j-worker-0": {}},
		},
		"another change beside the start: written": {
			old: status(v1beta1.JobPending, pending, pending), cur: status(v1beta1.JobPending, running, v1beta1.ReplicaFailed),
			pods: map[string]*corev1.Pod{"j-worker-0": startedAt(0)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			recorded := map[string]*v1beta1.ReplicaStatus{}
			for i := range tc.old.Tasks[0].ReplicaStatus {
				rs := &tc.old.Tasks[0].ReplicaStatus[i]
				recorded[rs.Name] = rs
			}
			until, hold := decideStartHold(startHoldInput{
				old: tc.old, cur: tc.cur, events: tc.events, now: now,
				replica: func(name string) (*v1beta1.ReplicaStatus, *corev1.Pod, bool) {
					rs, ok := recorded[name]
					return rs, tc.pods[name], ok
				},
			})
			if hold != tc.hold || (!tc.until.IsZero() && !until.Equal(tc.until)) {
				t.Errorf("decideStartHold = %v, %v; want %v, %v", until, hold, tc.until, tc.hold)
			}
		})
	}
}
