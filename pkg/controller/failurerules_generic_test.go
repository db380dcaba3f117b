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
)

// TestGenericFailureRules: a GenericJob's failure rules say which replicas
// that fail for good fail the job. A failure that completes no rule leaves
// its replica failed and the job running while a success rule can still
// hold.
func TestGenericFailureRules(t *testing.T) {
	chief := v1beta1.ReplicaRule{Replicas: []v1beta1.ReplicaSelector{{Type: "chief"}}}
	newJob := func(failure, success []v1beta1.ReplicaRule) v1beta1.TrainingJob {
		b := newGenericJob("g").withReplicas("chief", 1).withReplicas("worker", 2)
		spec := &b.job.(*v1beta1.GenericJob).Spec
		spec.FailureRules, spec.SuccessRules = failure, success
		return b.obj()
	}
	// failedJob asserts the job failed, and why.
	failedJob := func(t *testing.T, f *fixture, job v1beta1.TrainingJob, why string) {
		t.Helper()
		st := f.status(job)
		assertPhase(t, st, v1beta1.JobFailed)
		c := condition(st, v1beta1.ConditionFailed)
		if c == nil || c.Reason != ReasonReplicaFailed || !strings.Contains(c.Message, why) {
			t.Fatalf("Failed condition %+v, want reason %s and a message saying %q", c, ReasonReplicaFailed, why)
		}
	}

	t.Run("a failure no rule names is tolerated", func(t *testing.T) {
		job := newJob([]v1beta1.ReplicaRule{chief}, []v1beta1.ReplicaRule{chief})
		f := newFixture(t, job)
		f.start(job)
		f.setPod("g-worker-1", failed(3))
		f.step(job)
		st := f.status(job)
		assertPhase(t, st, v1beta1.JobRunning)
		assertCondition(t, st, v1beta1.ConditionReplicaFailure, metav1.ConditionTrue, ReasonReplicaFailed)
		if rs := st.Tasks[1].ReplicaStatus[1]; rs.Phase != v1beta1.ReplicaFailed {
			t.Errorf("worker-1 is %s, want Failed", rs.Phase)
		}
		if events := f.events(); !hasEvent(events, corev1.EventTypeWarning, ReasonFailureTolerated) {
			t.Errorf("events %q, want a %s warning", events, ReasonFailureTolerated)
		}
		if created, deleted := f.createdPodNames(), f.deletedPodNames(); len(created)+len(deleted) != 0 {
			t.Errorf("created %v and deleted %v: a replica failed for good is left as it is", created, deleted)
		}
		f.step(job)
		if events := f.events(); hasEvent(events, corev1.EventTypeWarning, ReasonFailureTolerated) {
			t.Errorf("events %q: the tolerated failure was announced twice", events)
		}
		assertPhase(t, f.status(job), v1beta1.JobRunning)

		f.setPod("g-chief-0", succeeded)
		f.step(job)
		assertPhase(t, f.status(job), v1beta1.JobSucceeded)
	})

	t.Run("a failure that completes a rule fails the job", func(t *testing.T) {
		job := newJob([]v1beta1.ReplicaRule{chief}, []v1beta1.ReplicaRule{chief})
		f := newFixture(t, job)
		f.start(job)
		f.setPod("g-chief-0", failed(1))
		f.step(job)
		failedJob(t, f, job, "a failure rule holds")
	})

	t.Run("a rule holds once every replica it names has failed", func(t *testing.T) {
		workers := v1beta1.ReplicaRule{Replicas: []v1beta1.ReplicaSelector{{Type: "worker"}}}
		job := newJob([]v1beta1.ReplicaRule{workers}, []v1beta1.ReplicaRule{chief})
		f := newFixture(t, job)
		f.start(job)
		f.setPod("g-worker-0", failed(1))
		f.step(job)
		assertPhase(t, f.status(job), v1beta1.JobRunning)
		f.setPod("g-worker-1", failed(1))
		f.step(job)
		failedJob(t, f, job, "a failure rule holds")
	})

	t.Run("a failure that leaves no success rule able to hold fails the job", func(t *testing.T) {
		job := newJob([]v1beta1.ReplicaRule{chief}, nil) // every replica must succeed
		f := newFixture(t, job)
		f.start(job)
		f.setPod("g-worker-1", failed(3))
		f.step(job)
		failedJob(t, f, job, "no success rule can hold")
	})

	t.Run("without failure rules any failure fails the job", func(t *testing.T) {
		job := newJob(nil, []v1beta1.ReplicaRule{chief})
		f := newFixture(t, job)
		f.start(job)
		f.setPod("g-worker-1", failed(3))
		f.step(job)
		failedJob(t, f, job, "replica worker-1")
	})
}
