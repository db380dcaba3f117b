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
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	core "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/owner"
)

func TestFirstReconcile(t *testing.T) {
	job := newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 2).obj()
	f := newFixture(t, job)
	f.mustSync(job)
	if f.statusUpdates() != 1 {
		t.Errorf("%d status updates, want 1", f.statusUpdates())
	}
	events := f.events()
	if !hasEvent(events, corev1.EventTypeNormal, owner.ReasonSuccessfulCreate) {
		t.Errorf("no SuccessfulCreate event: %v", events)
	}
	f.observe()
	// A new job's first status is written once its pods are created, and
	// describes them.
	st := f.status(job)
	assertPhase(t, st, v1beta1.JobPending)
	assertCondition(t, st, v1beta1.ConditionInitialized, metav1.ConditionTrue, ReasonReplicasCreated)
	assertCondition(t, st, v1beta1.ConditionRunning, metav1.ConditionFalse, "Pending")
	if st.ObservedGeneration != 1 || st.StartTime == nil || st.Aggregate.Pending != 3 {
		t.Errorf("observedGeneration %d startTime %v aggregate %+v", st.ObservedGeneration, st.StartTime, st.Aggregate)
	}
	for _, task := range st.Tasks {
		for _, rs := range task.ReplicaStatus {
			if p := f.pod(rs.Name); p == nil || rs.UID != p.UID || rs.Phase != v1beta1.ReplicaPending {
				t.Errorf("replica %s: %+v, want Pending with its pod's UID", rs.Name, rs)
			}
		}
	}
	for _, c := range st.Conditions {
		if c.ObservedGeneration != 1 || !c.LastTransitionTime.Time.Equal(testStart) {
			t.Errorf("condition %s: observedGeneration %d lastTransitionTime %v", c.Type, c.ObservedGeneration, c.LastTransitionTime)
		}
	}
	// Pods seen: nothing new to write; still Pending until every replica
	// runs.
	f.step(job)
	if n := f.statusUpdates(); n != 0 {
		t.Errorf("%d status writes when the created pods were seen, want none", n)
	}
	st = f.status(job)
	assertCondition(t, st, v1beta1.ConditionInitialized, metav1.ConditionTrue, ReasonReplicasCreated)
	assertPhase(t, st, v1beta1.JobPending)
	f.setPod("j-chief-0", running)
	f.step(job)
	assertPhase(t, f.status(job), v1beta1.JobPending)
	f.setPod("j-worker-0", running)
	f.setPod("j-worker-1", running)
	f.step(job)
	st = f.status(job)
	assertPhase(t, st, v1beta1.JobRunning)
	assertCondition(t, st, v1beta1.ConditionRunning, metav1.ConditionTrue, ReasonReplicasRunning)
}

func TestStatusAggregation(t *testing.T) {
	job := newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 3).withReplicas("ps", 1).
		withRestartPolicy("worker", v1beta1.RestartPolicyOnFailure).withSidecar("worker").obj()
	f := newFixture(t, job)
	f.step(job)
	f.setPod("j-chief-0", running)
	f.setPod("j-worker-0", succeeded)
	f.setPod("j-worker-1", func(p *corev1.Pod) { p.Status.Phase = corev1.PodUnknown })
	f.setPod("j-worker-2", failed(137))
	f.setPod("j-ps-0", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending })
	f.step(job)
	st := f.status(job)

	wantAgg := v1beta1.Aggregate{Pending: 1, Running: 1, Succeeded: 1, Unknown: 1, Deleted: 1}
	if st.Aggregate != wantAgg {
		t.Errorf("aggregate %+v, want %+v", st.Aggregate, wantAgg)
	}
	if len(st.Tasks) != 3 || st.Tasks[0].Type != "chief" || st.Tasks[1].Type != "worker" || st.Tasks[2].Type != "ps" {
		t.Fatalf("tasks %+v", st.Tasks)
	}
	if st.Tasks[1].RestartCount != 1 || st.BackoffCount != 1 {
		t.Errorf("worker restarts %d backoff %d, want 1 and 1", st.Tasks[1].RestartCount, st.BackoffCount)
	}
	w0 := f.pod("j-worker-0")
	wantW0 := v1beta1.ReplicaStatus{
		Name: "j-worker-0", UID: w0.UID, Phase: v1beta1.ReplicaSucceeded,
		Containers: []v1beta1.ContainerStatus{
			{Name: "tensorflow", State: "Terminated", LastTermination: &v1beta1.ContainerTermination{}},
			{Name: "sidecar", State: "Terminated", LastTermination: &v1beta1.ContainerTermination{}},
		},
	}
	if !reflect.DeepEqual(st.Tasks[1].ReplicaStatus[0], wantW0) {
		t.Errorf("worker-0 %+v, want %+v", st.Tasks[1].ReplicaStatus[0], wantW0)
	}
	w2 := st.Tasks[1].ReplicaStatus[2]
	if w2.Phase != v1beta1.ReplicaDeleted || w2.Containers[0].ExitCode != 137 || w2.Containers[0].State != "Terminated" {
		t.Errorf("worker-2 (being replaced) %+v", w2)
	}
	if cs := st.Tasks[0].ReplicaStatus[0].Containers; len(cs) != 1 || cs[0].State != "Running" {
		t.Errorf("chief containers %+v", cs)
	}
	if cs := st.Tasks[2].ReplicaStatus[0].Containers; len(cs) != 1 || cs[0].State != "Waiting" {
		t.Errorf("pending ps containers %+v", cs)
	}
	assertCondition(t, st, v1beta1.ConditionReplicaFailure, metav1.ConditionTrue, ReasonReplicaFailed)

	// Recreated and running again: the failure condition clears, Creating is counted.
	f.clock.Step(DefaultRestartBackoffBase)
	f.step(job)
	wantAgg = v1beta1.Aggregate{Creating: 1, Pending: 1, Running: 1, Succeeded: 1, Unknown: 1}
	if st := f.status(job); st.Aggregate != wantAgg {
		t.Errorf("aggregate after recreation %+v, want %+v", st.Aggregate, wantAgg)
	}
	f.setAll(running)
	f.step(job)
	st = f.status(job)
	assertPhase(t, st, v1beta1.JobRunning)
	assertCondition(t, st, v1beta1.ConditionReplicaFailure, metav1.ConditionFalse, ReasonReplicasHealthy)
}

func TestNoStatusWriteWithoutChange(t *testing.T) {
	job := newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 2).obj()
	f := newFixture(t, job)
	f.start(job)
	for range 3 {
		f.mustSync(job)
		if n := f.statusUpdates(); n != 0 {
			t.Fatalf("%d status updates without any change", n)
		}
		if len(f.createdPods()) != 0 || len(f.deletedPodNames()) != 0 {
			t.Fatalf("pods touched without any change")
		}
		f.observe()
	}
	// Time passing alone changes nothing either.
	f.clock.Step(time.Hour)
	f.mustSync(job)
	if n := f.statusUpdates(); n != 0 {
		t.Fatalf("%d status updates after time passed", n)
	}
}

func TestConditionTransitionTimes(t *testing.T) {
	job := newTFJob("j").withReplicas("worker", 1).withRestartPolicy("worker", v1beta1.RestartPolicyOnFailure).obj()
	f := newFixture(t, job)
	f.start(job)
	before := *condition(f.status(job), v1beta1.ConditionRunning)
	f.clock.Step(time.Minute)
	// A restart changes the ReplicaFailure condition but not Running.
	f.setPod("j-worker-0", failed(1))
	f.step(job)
	st := f.status(job)
	if after := condition(st, v1beta1.ConditionRunning); !after.LastTransitionTime.Equal(&before.LastTransitionTime) {
		t.Errorf("Running changed its transition time without a transition: %v -> %v", before.LastTransitionTime, after.LastTransitionTime)
	}
	rf := condition(st, v1beta1.ConditionReplicaFailure)
	if rf == nil || !rf.LastTransitionTime.Time.Equal(testStart.Add(time.Minute)) {
		t.Errorf("ReplicaFailure %+v", rf)
	}
}

// A status write that fails (here a conflict, which a patch without a
// resourceVersion meets only from a webhook or another writer) is retried,
// and nothing is done meanwhile.
func TestStatusConflictIsRetried(t *testing.T) {
	// A job with a status: its status is written before the pods are made.
	job := newTFJob("j").withReplicas("worker", 1).withStatus(v1beta1.TrainingJobStatus{Phase: v1beta1.JobPending}).obj()
	f := newFixture(t, job)
	f.jobClient.PrependReactor("patch", "tensorflowtrainingjobs", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: v1beta1.GroupName, Resource: "tensorflowtrainingjobs"}, "j", fmt.Errorf("stale"))
	})
	_, err := f.sync(job)
	if !apierrors.IsConflict(err) {
		t.Fatalf("err %v, want a conflict to retry", err)
	}
	// Nothing was done on the strength of a status that was not written.
	if got := f.createdPodNames(); len(got) != 0 {
		t.Fatalf("created %v though the status write failed", got)
	}
}

func TestDefensiveAgainstUndefaultedJobs(t *testing.T) {
	b := newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 2)
	b.spec().ReplicaSpecs[1].Replicas = nil                                                   // defaults to 1
	b.spec().RunMode = &v1beta1.RunMode{Debug: &v1beta1.DebugMode{Enable: ptr.To(true)}}      // deprecated spelling
	b.spec().RunMode.Debug.ReplicaSpecs = []v1beta1.ReplicaDebugSpec{{Type: "worker"}}        // no command
	b.spec().ReplicaSpecs = append(b.spec().ReplicaSpecs, b.spec().ReplicaSpecs[1])           // duplicate type
	b.spec().ReplicaSpecs = append(b.spec().ReplicaSpecs, v1beta1.ReplicaSpec{Type: "empty"}) // no containers
	b.spec().ReplicaSpecs = append(b.spec().ReplicaSpecs, v1beta1.ReplicaSpec{Type: "none", Replicas: ptr.To[int32](-1)})
	job := b.raw()
	f := newFixture(t, job)
	f.mustSync(job)
	got := f.createdPodNames()
	if !equalStrings(got, []string{"j-master-0", "j-worker-0"}) {
		t.Fatalf("created %v", got)
	}
	for _, p := range f.createdPods() {
		if !equalStrings(p.Spec.Containers[0].Command, []string{"sleep", "inf"}) {
			t.Errorf("%s: command %v, want the default debug command", p.Name, p.Spec.Containers[0].Command)
		}
	}
	if !hasEvent(f.events(), corev1.EventTypeWarning, owner.ReasonFailedCreate) {
		t.Errorf("no FailedCreate event for the replica without containers")
	}
}

func TestFailedCreate(t *testing.T) {
	job := newTFJob("j").withReplicas("worker", 3).obj()
	f := newFixture(t, job)
	f.failNext("create", "pods", 1, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "j-worker-0",
		fmt.Errorf("exceeded quota")))
	if _, err := f.sync(job); err == nil {
		t.Fatalf("a failed create must be retried")
	}
	// The first failure stops the others: they would most likely fail alike.
	if n := len(f.createdPods()); n != 1 {
		t.Fatalf("%d creates attempted, want 1", n)
	}
	if !hasEvent(f.events(), corev1.EventTypeWarning, owner.ReasonFailedCreate) {
		t.Errorf("no FailedCreate event")
	}
	if !f.c.expectations.SatisfiedExpectations(keyOf(job).String()) {
		t.Errorf("creations that were never made are still expected")
	}
	f.observe()
	st := f.status(job)
	assertCondition(t, st, v1beta1.ConditionReplicaFailure, metav1.ConditionTrue, owner.ReasonFailedCreate)
	// The next attempt creates them all.
	f.mustSync(job)
	if got := f.createdPodNames(); !equalStrings(got, []string{"j-worker-0", "j-worker-1", "j-worker-2"}) {
		t.Fatalf("created %v", got)
	}
}

// The reconcile edits a copy of the job's status only; the informer cache,
// whose spec it shares, must come out unchanged.
func TestCacheIsNotMutated(t *testing.T) {
	jobs := []v1beta1.TrainingJob{
		newTFJob("tf").withReplicas("chief", 1).withReplicas("worker", 2).withInitContainer("worker").
			withTensorBoard("t9k://pvc/a/x", "t9k://pvc/b").obj(),
		newPyTorchJob("pt").withReplicas("worker", 2).withReplicas("master", 1).
			withTorchrun(v1beta1.TorchrunConfig{Enabled: true, ExtraOptions: []string{"--x"}}).obj(),
		newPyTorchJob("dbg").withReplicas("master", 1).withInitContainer("master").
			debug(v1beta1.ReplicaDebugSpec{Type: "master", SkipInitContainer: true, Command: []string{"sh"}}).obj(),
		newTFJob("rs").withReplicas("worker", 1).withInitContainer("worker").
			paused(v1beta1.ResumeSpec{Type: "worker", SkipInitContainer: true, Command: []string{"a"}, Args: []string{"b"}}).
			withStatus(v1beta1.TrainingJobStatus{Phase: v1beta1.JobPaused, Conditions: []metav1.Condition{{
				Type: v1beta1.ConditionPaused, Status: metav1.ConditionTrue, Reason: ReasonPaused}}}).obj(),
	}
	jobs[3].CommonSpec().RunMode.Pause.Enabled = false // resuming
	for _, job := range jobs {
		t.Run(job.GetName(), func(t *testing.T) {
			f := newFixture(t, job)
			for range 3 {
				obj, _, _ := f.indexer(job).GetByKey("ns/" + job.GetName())
				before := obj.(v1beta1.TrainingJob).DeepCopyObject()
				f.mustSync(job)
				after, _, _ := f.indexer(job).GetByKey("ns/" + job.GetName())
				if !reflect.DeepEqual(before, after) {
					t.Fatalf("the cached job changed during the reconcile:\nbefore %+v\nafter  %+v", before, after)
				}
				f.observe()
				f.setAll(running)
			}
			if len(f.podNames()) == 0 {
				t.Fatalf("the scenario created no pods")
			}
		})
	}
}

func TestTasksFollowTheSpecOrder(t *testing.T) {
	job := newPyTorchJob("j").withReplicas("worker", 2).withReplicas("master", 1).obj()
	f := newFixture(t, job)
	f.step(job)
	st := f.status(job)
	if len(st.Tasks) != 2 || st.Tasks[0].Type != "worker" || st.Tasks[1].Type != "master" ||
		len(st.Tasks[0].ReplicaStatus) != 2 || st.Tasks[0].ReplicaStatus[1].Name != "j-worker-1" ||
		len(st.Tasks[1].ReplicaStatus) != 1 || st.Tasks[1].ReplicaStatus[0].Name != "j-master-0" {
		t.Fatalf("tasks %+v, want worker then master as listed", st.Tasks)
	}
}

// In a namespace being deleted nothing can be created; that is no error to
// retry or to report.
func TestTerminatingNamespace(t *testing.T) {
	job := newTFJob("j").withReplicas("worker", 2).withTensorBoard("t9k://pvc/logs").obj()
	f := newFixture(t, job)
	terminating := func(resource string) error {
		err := apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "x", fmt.Errorf("namespace ns is being terminated"))
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes,
			metav1.StatusCause{Type: corev1.NamespaceTerminatingCause, Message: "namespace ns is being terminated"})
		return err
	}
	for _, r := range []string{"pods", "services", "deployments"} {
		f.failNext("create", r, 10, terminating(r))
	}
	if _, err := f.sync(job); err != nil {
		t.Fatalf("sync in a terminating namespace: %v", err)
	}
	if hasEvent(f.events(), corev1.EventTypeWarning, owner.ReasonFailedCreate) {
		t.Errorf("FailedCreate reported for a terminating namespace")
	}
}
