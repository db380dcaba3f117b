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
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	core "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/owner"
	"tensorstack.dev/training/pkg/podbuilder"
)

func TestExpectations(t *testing.T) {
	clk := clocktesting.NewFakeClock(testStart)
	x := NewExpectations(clk, time.Minute)
	const key = "TensorFlowTrainingJob/ns/j"

	if !x.SatisfiedExpectations(key) {
		t.Fatalf("a job without expectations must be satisfied")
	}
	x.ExpectCreations(key, "a", "b")
	x.ExpectDeletions(key, "c")
	steps := []struct {
		do   func()
		want bool
	}{
		{func() {}, false},
		{func() { x.CreationObserved(key, "a") }, false},
		{func() { x.CreationObserved(key, "a") }, false}, // twice: no effect
		{func() { x.CreationObserved(key, "b") }, false},
		{func() { x.DeletionObserved("other", "c") }, false}, // another job
		{func() { x.DeletionObserved(key, "c") }, true},
		{func() { x.DeletionObserved(key, "c") }, true}, // the final delete after the update that set deletionTimestamp
	}
	for i, s := range steps {
		s.do()
		if got := x.SatisfiedExpectations(key); got != s.want {
			t.Fatalf("step %d: satisfied %v, want %v", i, got, s.want)
		}
	}

	// Expectations that are never met expire.
	x.ExpectCreations(key, "d")
	clk.Step(59 * time.Second)
	if x.SatisfiedExpectations(key) {
		t.Fatalf("satisfied before the timeout")
	}
	clk.Step(time.Second)
	if !x.SatisfiedExpectations(key) {
		t.Fatalf("not satisfied after the timeout")
	}
	// The expired record is gone; a new expectation has its own clock.
	x.ExpectDeletions(key, "e")
	if x.SatisfiedExpectations(key) {
		t.Fatalf("a new expectation was satisfied by the old timeout")
	}
	if c, d := x.Pending(key); c != 0 || d != 1 {
		t.Fatalf("pending %d/%d, want 0/1", c, d)
	}
	x.DeleteExpectations(key)
	if !x.SatisfiedExpectations(key) {
		t.Fatalf("deleted expectations must be satisfied")
	}
}

// The informer cache has not seen the pods created a moment ago: the next
// reconcile must not create them again.
func TestExpectationsPreventDuplicatePods(t *testing.T) {
	job := newTFJob("j").withReplicas("worker", 3).obj()
	f := newFixture(t, job)
	f.mustSync(job)
	if n := len(f.createdPods()); n != 3 {
		t.Fatalf("created %d pods, want 3", n)
	}
	f.kubeClient.ClearActions()
	for range 3 {
		f.mustSync(job)
		if got := f.createdPodNames(); len(got) != 0 {
			t.Fatalf("created %v again while the cache was behind", got)
		}
	}
	// Events for two of the three pods arrive: still waiting for the third.
	for _, name := range []string{"j-worker-0", "j-worker-1"} {
		p := f.pod(name)
		_ = f.indexer(p).Add(p)
		f.c.addPod(f.logger, p)
	}
	if f.c.expectations.SatisfiedExpectations(keyOf(job).String()) {
		t.Fatalf("satisfied with one creation unseen")
	}
	f.observe()
	if !f.c.expectations.SatisfiedExpectations(keyOf(job).String()) {
		t.Fatalf("not satisfied after every creation was seen")
	}
	f.mustSync(job)
	if got := f.createdPodNames(); len(got) != 0 {
		t.Fatalf("created %v with the cache up to date", got)
	}
}

// When the events never come, the expectations expire and the reconcile
// goes on from the cache; creating a pod that exists is then harmless.
func TestExpiredExpectations(t *testing.T) {
	job := newTFJob("j").withReplicas("worker", 2).obj()
	f := newFixture(t, job)
	f.mustSync(job)
	d := f.mustSync(job)
	if d != ExpectationsTimeout {
		t.Errorf("requeue after %v while waiting for the cache, want %v", d, ExpectationsTimeout)
	}
	f.kubeClient.ClearActions()
	f.clock.Step(ExpectationsTimeout)
	if _, err := f.sync(job); err != nil {
		t.Fatalf("sync with expired expectations: %v", err)
	}
	if n := len(f.createdPods()); n != 2 {
		t.Fatalf("tried %d creations, want 2 (answered AlreadyExists)", n)
	}
	if got := f.podNames(); !equalStrings(got, []string{"j-worker-0", "j-worker-1"}) {
		t.Fatalf("pods %v", got)
	}
}

// A delete that the cache has not seen yet is not repeated.
func TestExpectationsPreventDoubleDeletes(t *testing.T) {
	job := newTFJob("j").withReplicas("worker", 2).obj()
	f := newFixture(t, job)
	f.gracefulDeletes()
	f.start(job)
	paused := f.pause(job)
	f.mustSync(paused)
	if n := len(f.deletedPodNames()); n != 2 {
		t.Fatalf("deleted %d pods, want 2", n)
	}
	f.kubeClient.ClearActions()
	f.mustSync(paused) // the cache still shows both pods without deletionTimestamp
	if got := f.deletedPodNames(); len(got) != 0 {
		t.Fatalf("deleted %v again", got)
	}
}

func TestAdoption(t *testing.T) {
	job := newTFJob("j").withReplicas("worker", 2).obj()
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "j-worker-0", Namespace: "ns", UID: "orphan", ResourceVersion: "7",
		Labels: map[string]string{
			v1beta1.LabelJobName: "j", v1beta1.LabelJobKind: podbuilder.TensorFlowKind,
			v1beta1.LabelReplicaType: "worker", v1beta1.LabelReplicaIndex: "0",
		},
	}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "tensorflow"}}}}
	foreign := orphan.DeepCopy()
	foreign.Name, foreign.UID = "j-worker-1", "foreign"
	foreign.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ReplicationController", Name: "rc", UID: "rc", Controller: ptrBool(true)}}
	orphanSvc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{
		Name: "j", Namespace: "ns", UID: "svc", Labels: map[string]string{v1beta1.LabelJobName: "j", v1beta1.LabelJobKind: podbuilder.TensorFlowKind},
	}}
	f := newFixture(t, job, orphan, foreign, orphanSvc)
	_, err := f.sync(job)
	if err == nil {
		t.Fatalf("a pod of another controller holding a replica's name must be reported")
	}
	var patched []string
	for _, a := range f.kubeClient.Actions() {
		if p, ok := a.(core.PatchAction); ok {
			patched = append(patched, a.GetResource().Resource+"/"+p.GetName())
		}
	}
	if !equalStrings(patched, []string{"pods/j-worker-0", "services/j"}) {
		t.Fatalf("patched %v, want the orphan pod and service", patched)
	}
	got := f.pod("j-worker-0")
	if ref := metav1.GetControllerOf(got); ref == nil || ref.UID != "uid-j" || ref.Kind != podbuilder.TensorFlowKind {
		t.Fatalf("orphan not adopted: %+v", got.OwnerReferences)
	}
	svc, _ := f.kubeClient.CoreV1().Services("ns").Get(context.Background(), "j", metav1.GetOptions{})
	if ref := metav1.GetControllerOf(svc); ref == nil || ref.UID != "uid-j" {
		t.Fatalf("service not adopted: %+v", svc.OwnerReferences)
	}
	if ref := metav1.GetControllerOf(f.pod("j-worker-1")); ref.UID != "rc" {
		t.Fatalf("a pod of another controller was taken over")
	}
	events := f.events()
	if !hasEvent(events, corev1.EventTypeNormal, owner.ReasonAdopted) || !hasEvent(events, corev1.EventTypeWarning, owner.ReasonNameConflict) {
		t.Fatalf("events %v", events)
	}
	// Only the foreign pod's slot was attempted.
	if got := f.createdPodNames(); !equalStrings(got, []string{"j-worker-1"}) {
		t.Fatalf("created %v", got)
	}
}

// TestAdoptionConflictRetries: when the orphan changed since the cache saw
// it (its kubelet wrote its status), the adoption patch conflicts; the
// reconcile is retried, writing nothing, rather than creating a pod of the
// orphan's name and recording the replica as missing. The next reconcile
// adopts it and creates nothing for its slot.
func TestAdoptionConflictRetries(t *testing.T) {
	job := newTFJob("j").withReplicas("worker", 1).obj()
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "j-worker-0", Namespace: "ns", UID: "orphan", ResourceVersion: "7",
		Labels: map[string]string{v1beta1.LabelJobName: "j", v1beta1.LabelJobKind: podbuilder.TensorFlowKind},
	}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "tensorflow"}}}}
	f := newFixture(t, job, orphan)
	conflicts := 1
	f.kubeClient.PrependReactor("patch", "pods", func(core.Action) (bool, runtime.Object, error) {
		if conflicts == 0 {
			return false, nil, nil
		}
		conflicts--
		return true, nil, apierrors.NewConflict(corev1.Resource("pods"), "j-worker-0", errors.New("the object has been modified"))
	})
	if _, err := f.sync(job); err == nil {
		t.Fatalf("an adoption that conflicted must be retried")
	}
	if got := f.createdPodNames(); len(got) != 0 {
		t.Fatalf("created %v next to the orphan holding the name", got)
	}
	for _, a := range f.jobClient.Actions() {
		if a.GetSubresource() == "status" {
			t.Fatalf("the status was written while the orphan was not yet adopted: %v", a)
		}
	}
	f.observe()
	f.mustSync(job)
	if ref := metav1.GetControllerOf(f.pod("j-worker-0")); ref == nil || ref.UID != "uid-j" {
		t.Fatalf("the orphan was not adopted on the retry: %+v", f.pod("j-worker-0").OwnerReferences)
	}
	if got := f.createdPodNames(); len(got) != 0 {
		t.Fatalf("created %v after adopting the orphan", got)
	}
	if got := f.deletedPodNames(); len(got) != 0 {
		t.Fatalf("deleted %v after adopting the orphan", got)
	}
}

func TestPodEventsFindTheirJob(t *testing.T) {
	job := newPyTorchJob("j").withReplicas("master", 1).obj()
	f := newFixture(t, job)
	owned := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "j-master-0", Namespace: "ns",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch.tensorstack.dev/v1beta1", Kind: podbuilder.PyTorchKind, Name: "j", UID: "uid-j", Controller: ptrBool(true)}}}}
	stale := owned.DeepCopy()
	stale.OwnerReferences[0].UID = types.UID("an-older-job")
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns",
		Labels: map[string]string{v1beta1.LabelJobName: "j", v1beta1.LabelJobKind: podbuilder.PyTorchKind}}}
	wrongKind := orphan.DeepCopy()
	wrongKind.Labels[v1beta1.LabelJobKind] = podbuilder.TensorFlowKind

	cases := []struct {
		name string
		pod  *corev1.Pod
		want int
	}{
		{"owned", owned, 1},
		{"owner with another UID", stale, 0},
		{"labelled orphan", orphan, 1},
		{"orphan naming another kind", wrongKind, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for f.c.queue.Len() > 0 {
				k, _ := f.c.queue.Get()
				f.c.queue.Done(k)
			}
			f.c.addPod(f.logger, tc.pod)
			if got := f.c.queue.Len(); got != tc.want {
				t.Fatalf("queue length %d, want %d", got, tc.want)
			}
			if tc.want == 1 {
				k, _ := f.c.queue.Get()
				f.c.queue.Done(k)
				if k != keyOf(job) {
					t.Fatalf("queued %v, want %v", k, keyOf(job))
				}
			}
		})
	}
}

func ptrBool(b bool) *bool { return &b }

// TestExpectationsOfAnEarlierJobOfTheName: the deletions an earlier job of
// the same name expected, never observed under the key once a new job holds
// it, do not hold the new job back; the job's own expectations stay.
func TestExpectationsOfAnEarlierJobOfTheName(t *testing.T) {
	x := NewExpectations(clocktesting.NewFakeClock(testStart), time.Hour)
	const key = "MPIJob/ns/again"
	x.ForJob(key, "uid-1")
	x.ExpectDeletions(key, "again-worker-0")
	x.ForJob(key, "uid-1")
	if x.SatisfiedExpectations(key) {
		t.Fatal("the job's own expectation was dropped")
	}
	x.ForJob(key, "uid-2")
	if !x.SatisfiedExpectations(key) {
		t.Fatal("the new job of the name waits for what the earlier one expected")
	}
}
