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
