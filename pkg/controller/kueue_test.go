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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueuefake "sigs.k8s.io/kueue/client-go/clientset/versioned/fake"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/kueue"
)

// newKueueFixture is a fixture whose controller queues jobs with Kueue; objs
// may hold Kueue objects for the fake Kueue clientset.
func newKueueFixture(t *testing.T, kueueObjs []runtime.Object, objs ...runtime.Object) *fixture {
	t.Helper()
	logger, ctx := ktesting.NewTestContext(t)
	return newFixtureWithContext(t, ctx, logger, record.NewFakeRecorder(1000), false, func(f *fixture, o *Options) {
		f.kueueClient = kueuefake.NewSimpleClientset(kueueObjs...) //nolint:staticcheck // merge patches, as the controller sends
		assignUIDs(f.kueueClient)
		o.Queueing = kueue.UsableGate(kueue.New(f.kueueClient, 0))
	}, objs...)
}

// observeKueue copies our Workloads into the controller's cache.
func (f *fixture) observeKueue() {
	f.t.Helper()
	q, _ := f.c.queueing.Current()
	if q == nil {
		return
	}
	list, err := f.kueueClient.KueueV1beta2().Workloads("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var objs []any
	for i := range list.Items {
		if _, ok := list.Items[i].Labels[v1beta1.LabelJobName]; ok {
			objs = append(objs, &list.Items[i])
		}
	}
	f.replaceAll(q.Informer().GetIndexer(), objs)
}

func (f *fixture) workload(name string) *kueuev1beta2.Workload {
	f.t.Helper()
	wl, err := f.kueueClient.KueueV1beta2().Workloads("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatalf("getting Workload %s: %v", name, err)
	}
	return wl
}

// setWorkload changes the Workload in the fake apiserver, as Kueue would,
// and lets the cache see it.
func (f *fixture) setWorkload(name string, change func(wl *kueuev1beta2.Workload)) {
	f.t.Helper()
	wl := f.workload(name)
	change(wl)
	if _, err := f.kueueClient.KueueV1beta2().Workloads("ns").Update(context.Background(), wl, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.observe()
}

func setCondition(wl *kueuev1beta2.Workload, c metav1.Condition) {
	if c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = metav1.NewTime(testStart)
	}
	meta.SetStatusCondition(&wl.Status.Conditions, c)
}

// admit admits the Workload in cluster-queue, every pod set on the flavor;
// as Kueue does, an earlier eviction is no longer in force.
func admit(flavor string, podSets ...string) func(*kueuev1beta2.Workload) {
	return func(wl *kueuev1beta2.Workload) {
		if meta.FindStatusCondition(wl.Status.Conditions, kueuev1beta2.WorkloadEvicted) != nil {
			setCondition(wl, metav1.Condition{Type: kueuev1beta2.WorkloadEvicted, Status: metav1.ConditionFalse, Reason: "QuotaReserved"})
		}
		setCondition(wl, metav1.Condition{Type: kueuev1beta2.WorkloadQuotaReserved, Status: metav1.ConditionTrue, Reason: "QuotaReserved"})
		setCondition(wl, metav1.Condition{Type: kueuev1beta2.WorkloadAdmitted, Status: metav1.ConditionTrue, Reason: "Admitted"})
		wl.Status.Admission = &kueuev1beta2.Admission{ClusterQueue: "cluster-queue"}
		for _, ps := range podSets {
			wl.Status.Admission.PodSetAssignments = append(wl.Status.Admission.PodSetAssignments, kueuev1beta2.PodSetAssignment{
				Name: kueuev1beta2.PodSetReference(ps), Flavors: map[corev1.ResourceName]kueuev1beta2.ResourceFlavorReference{
					"nvidia.com/gpu": kueuev1beta2.ResourceFlavorReference(flavor)},
			})
		}
	}
}

func evict(reason string) func(*kueuev1beta2.Workload) {
	return func(wl *kueuev1beta2.Workload) {
		setCondition(wl, metav1.Condition{Type: kueuev1beta2.WorkloadEvicted, Status: metav1.ConditionTrue, Reason: reason,
			Message: "Preempted to accommodate a workload of higher priority"})
	}
}

func resourceFlavor(name string, labels map[string]string, tolerations ...corev1.Toleration) *kueuev1beta2.ResourceFlavor {
	return &kueuev1beta2.ResourceFlavor{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       kueuev1beta2.ResourceFlavorSpec{NodeLabels: labels, Tolerations: tolerations},
	}
}

func gpuJob(name string) *jobBuilder {
	b := newPyTorchJob(name).withReplicas("master", 1).withReplicas("worker", 3)
	for i := range b.spec().ReplicaSpecs {
		b.spec().ReplicaSpecs[i].Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
			"nvidia.com/gpu": resource.MustParse("1"),
		}
	}
	return b
}

func TestKueueWorkloadFromJob(t *testing.T) {
	b := gpuJob("p").withGang("user-queue", 40)
	job := b.obj()
	f := newKueueFixture(t, nil, job)
	f.step(job)
	if got := f.createdPodNames(); len(got) != 0 {
		t.Fatalf("created %v before admission", got)
	}
	wl := f.workload("pj-p")
	if !metav1.IsControlledBy(wl, job) {
		t.Errorf("the Workload is not controlled by the job: %+v", wl.OwnerReferences)
	}
	spec := wl.Spec
	if spec.QueueName != "user-queue" || ptr.Deref(spec.Priority, -1) != 40 || !ptr.Deref(spec.Active, false) {
		t.Errorf("spec queueName %v priority %v active %v, want user-queue 40 true", spec.QueueName, spec.Priority, spec.Active)
	}
	if len(spec.PodSets) != 2 {
		t.Fatalf("pod sets %v, want master and worker", spec.PodSets)
	}
	for i, want := range []struct {
		name  kueuev1beta2.PodSetReference
		count int32
	}{{"master", 1}, {"worker", 3}} {
		ps := spec.PodSets[i]
		gpus := ps.Template.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"]
		if ps.Name != want.name || ps.Count != want.count || gpus.String() != "1" {
			t.Errorf("pod set %d: name %v count %v gpus %s, want %s %d 1", i, ps.Name, ps.Count, gpus.String(), want.name, want.count)
		}
	}
	st := f.status(job)
	assertPhase(t, st, v1beta1.JobPending)
	assertCondition(t, st, v1beta1.ConditionQueued, metav1.ConditionTrue, v1beta1.ReasonWaitingForAdmission)
}

func TestKueuePriorityClassLabel(t *testing.T) {
	job := gpuJob("p").obj()
	job.SetLabels(map[string]string{kueue.LabelQueueName: "user-queue", kueue.LabelPriorityClass: "high"})
	wpc := &kueuev1beta2.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}
	f := newKueueFixture(t, []runtime.Object{wpc}, job)
	f.step(job)
	spec := f.workload("pj-p").Spec
	ref := spec.PriorityClassRef
	if ptr.Deref(spec.Priority, -1) != 1000 || ref == nil || ref.Name != "high" || ref.Kind != kueuev1beta2.WorkloadPriorityClassKind ||
		ref.Group != kueuev1beta2.WorkloadPriorityClassGroup {
		t.Errorf("priority %v class %+v, want 1000 and WorkloadPriorityClass high", spec.Priority, ref)
	}
}

// TestKueueAdmissionEvictionFinish follows a job through admission (pods
// placed on the flavor), eviction (pods gone, job kept, quota given back,
// no restart used), admission again (resumed) and its end (Workload
// finished at once).
func TestKueueAdmissionEvictionFinish(t *testing.T) {
	job := gpuJob("p").withGang("user-queue", 0).obj()
	flavor := resourceFlavor("gpu-a", map[string]string{"gpu-type": "a100"},
		corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	f := newKueueFixture(t, []runtime.Object{flavor}, job)
	f.step(job)
	f.setWorkload("pj-p", admit("gpu-a", "master", "worker"))
	f.mustSync(job)
	created := f.createdPods()
	if len(created) != 4 {
		t.Fatalf("created %v after admission, want 4 pods", names(created))
	}
	for _, p := range created {
		if p.Spec.NodeSelector["gpu-type"] != "a100" || len(p.Spec.Tolerations) != 1 || p.Spec.Tolerations[0].Key != "gpu" {
			t.Errorf("pod %s: nodeSelector %v tolerations %v, want the flavor's", p.Name, p.Spec.NodeSelector, p.Spec.Tolerations)
		}
	}
	f.observe()
	f.setAll(running)
	f.step(job)
	st := f.status(job)
	assertPhase(t, st, v1beta1.JobRunning)
	assertCondition(t, st, v1beta1.ConditionQueued, metav1.ConditionFalse, v1beta1.ReasonAdmitted)

	// Preempted: the pods go, the job stays.
	f.setWorkload("pj-p", evict(kueuev1beta2.WorkloadEvictedByPreemption))
	f.mustSync(job)
	if got := f.deletedPodNames(); len(got) != 4 {
		t.Fatalf("deleted %v on eviction, want every pod", got)
	}
	f.observe()
	f.step(job)
	st = f.status(job)
	assertPhase(t, st, v1beta1.JobPaused)
	assertCondition(t, st, v1beta1.ConditionQueued, metav1.ConditionTrue, kueuev1beta2.WorkloadEvictedByPreemption)
	if st.BackoffCount != 0 {
		t.Errorf("backoffCount %d after an eviction, want 0", st.BackoffCount)
	}
	if !hasEvent(f.events(), corev1.EventTypeWarning, kueuev1beta2.WorkloadEvictedByPreemption) {
		t.Errorf("no event for the eviction")
	}
	wl := f.workload("pj-p")
	conds := wl.Status.Conditions
	if wl.Status.Admission != nil || meta.IsStatusConditionTrue(conds, kueuev1beta2.WorkloadQuotaReserved) ||
		!meta.IsStatusConditionTrue(conds, kueuev1beta2.WorkloadRequeued) || meta.IsStatusConditionTrue(conds, kueuev1beta2.WorkloadAdmitted) {
		t.Fatalf("the evicted Workload kept its quota: admission %v conditions %+v", wl.Status.Admission, conds)
	}
	if got := f.podNames(); len(got) != 0 {
		t.Fatalf("pods %v left", got)
	}

	// Admitted again: it resumes.
	f.setWorkload("pj-p", admit("gpu-a", "master", "worker"))
	f.mustSync(job)
	if got := f.createdPodNames(); len(got) != 4 {
		t.Fatalf("created %v after readmission, want 4", got)
	}
	f.observe()
	st = f.status(job)
	assertPhase(t, st, v1beta1.JobResuming)
	assertCondition(t, st, v1beta1.ConditionPaused, metav1.ConditionFalse, ReasonResumed)

	// The master succeeds: the Workload is finished in the same reconcile.
	f.setAll(running)
	f.setPod("p-master-0", succeeded)
	f.step(job)
	assertPhase(t, f.status(job), v1beta1.JobSucceeded)
	c := meta.FindStatusCondition(f.workload("pj-p").Status.Conditions, kueuev1beta2.WorkloadFinished)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != "Succeeded" {
		t.Errorf("Workload Finished condition %+v, want True Succeeded", c)
	}
}

// A job whose master succeeds while its eviction waits for a checkpoint
// has succeeded: the pods are not stopped, and its Workload is finished
// instead of queued again.
func TestKueueJobThatSucceedsWhileEvicted(t *testing.T) {
	job := gpuJob("p").withGang("user-queue", 0).withCheckpoints(20).obj()
	f := newKueueFixture(t, []runtime.Object{resourceFlavor("gpu-a", nil)}, job)
	f.step(job)
	f.setWorkload("pj-p", admit("gpu-a", "master", "worker"))
	f.step(job)
	f.setAll(running)
	f.step(job)

	f.setWorkload("pj-p", evict(kueuev1beta2.WorkloadEvictedByPreemption))
	f.mustSync(job)
	if got := f.deletedPodNames(); len(got) != 0 {
		t.Fatalf("deleted %v before the checkpoint", got)
	}
	f.observe()
	f.setPod("p-master-0", succeeded)
	f.mustSync(job)
	// The clean-up policy takes the workers that still run; the eviction
	// would have taken the master too.
	if got := f.deletedPodNames(); !equalStrings(got, []string{"p-worker-0", "p-worker-1", "p-worker-2"}) {
		t.Errorf("deleted %v, want only the running workers, by the clean-up of a job that succeeded", got)
	}
	f.observe()
	st := f.status(job)
	assertPhase(t, st, v1beta1.JobSucceeded)
	if c := condition(st, v1beta1.ConditionCompleted); c == nil || c.Message != "the job succeeded before its queue's stop took effect" {
		t.Errorf("Completed condition %+v: want the message to say the job succeeded before the stop", c)
	}
	assertCondition(t, st, v1beta1.ConditionQueued, metav1.ConditionFalse, ReasonSucceeded)
	c := meta.FindStatusCondition(f.workload("pj-p").Status.Conditions, kueuev1beta2.WorkloadFinished)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != "Succeeded" {
		t.Errorf("Workload Finished condition %+v, want True Succeeded", c)
	}
}

// TestKueuePause: a paused job's Workload is inactive, whether it was
// admitted (its pods go too) or still queued; resuming activates it again.
func TestKueuePause(t *testing.T) {
	for _, admitted := range []bool{true, false} {
		name := "queued"
		if admitted {
			name = "admitted"
		}
		t.Run(name, func(t *testing.T) {
			job := gpuJob("p").withGang("user-queue", 0).obj()
			f := newKueueFixture(t, []runtime.Object{resourceFlavor("gpu-a", nil)}, job)
			f.step(job)
			if admitted {
				f.setWorkload("pj-p", admit("gpu-a", "master", "worker"))
				f.step(job)
				f.setAll(running)
				f.step(job)
			}
			paused := f.pause(job)
			f.step(paused)
			if active := kueue.Active(f.workload("pj-p")); active {
				t.Errorf("the paused job's Workload is active")
			}
			if admitted {
				// Kueue evicts the inactive Workload; with the pods gone,
				// its quota goes back.
				f.setWorkload("pj-p", evict("InactiveWorkload"))
			}
			f.step(paused)
			f.step(paused)
			if got := f.podNames(); len(got) != 0 {
				t.Errorf("pods %v of a paused job", got)
			}
			assertPhase(t, f.status(paused), v1beta1.JobPaused)
			if wl := f.workload("pj-p"); wl.Status.Admission != nil {
				t.Errorf("the paused job's Workload keeps its admission: %v", wl.Status.Admission)
			}
			resumed := f.job(paused)
			resumed.CommonSpec().RunMode = nil
			f.updateJob(resumed)
			f.step(resumed)
			if !kueue.Active(f.workload("pj-p")) {
				t.Errorf("the resumed job's Workload is inactive")
			}
		})
	}
}

// podsReadyOf is the PodsReady condition of the job's Workload, or nil.
func (f *fixture) podsReadyOf(workload string) *metav1.Condition {
	f.t.Helper()
	return meta.FindStatusCondition(f.workload(workload).Status.Conditions, kueuev1beta2.WorkloadPodsReady)
}

func assertPodsReady(t *testing.T, c *metav1.Condition, status metav1.ConditionStatus, reason string) {
	t.Helper()
	if c == nil || c.Status != status || c.Reason != reason {
		t.Fatalf("PodsReady %+v, want %s %s", c, status, reason)
	}
}

// TestKueuePodsReady: the admitted job's Workload says whether every pod is
// ready (Kueue's waitForPodsReady evicts it otherwise): not before they are,
// True once they are and while succeeded replicas stay done, False with
// WaitForRecovery when a running job loses a pod, Recovered once it is
// whole again; after an eviction it waits for a start again.
func TestKueuePodsReady(t *testing.T) {
	job := gpuJob("p").withGang("user-queue", 0).withRestartPolicy("worker", v1beta1.RestartPolicyOnFailure).withBackoffLimit(5).obj()
	f := newKueueFixture(t, []runtime.Object{resourceFlavor("gpu-a", nil)}, job)
	f.step(job)
	if c := f.podsReadyOf("pj-p"); c != nil {
		t.Fatalf("PodsReady %+v before admission; jobframework writes it only once admitted", c)
	}
	f.setWorkload("pj-p", admit("gpu-a", "master", "worker"))
	f.step(job)
	f.step(job)
	assertPodsReady(t, f.podsReadyOf("pj-p"), metav1.ConditionFalse, kueuev1beta2.WorkloadWaitForStart)

	// Running is not enough: readiness is.
	f.setAll(running)
	f.step(job)
	assertPodsReady(t, f.podsReadyOf("pj-p"), metav1.ConditionFalse, kueuev1beta2.WorkloadWaitForStart)
	f.setAll(ready)
	f.step(job)
	assertPodsReady(t, f.podsReadyOf("pj-p"), metav1.ConditionTrue, kueuev1beta2.WorkloadStarted)

	// A worker that succeeded still counts.
	f.setPod("p-worker-2", succeeded)
	f.step(job)
	assertPodsReady(t, f.podsReadyOf("pj-p"), metav1.ConditionTrue, kueuev1beta2.WorkloadStarted)

	// A worker fails: its pod goes and comes back after the restart backoff.
	f.setPod("p-worker-1", failed(1))
	f.step(job)
	f.step(job)
	assertPodsReady(t, f.podsReadyOf("pj-p"), metav1.ConditionFalse, kueuev1beta2.WorkloadWaitForRecovery)
	f.clock.Step(DefaultRestartBackoffMax)
	for range 4 {
		f.step(job)
	}
	if f.pod("p-worker-1") == nil {
		t.Fatalf("worker-1 was not replaced; pods %v", f.podNames())
	}
	f.setPod("p-worker-1", ready)
	f.step(job)
	assertPodsReady(t, f.podsReadyOf("pj-p"), metav1.ConditionTrue, kueuev1beta2.WorkloadRecovered)

	// Evicted: once the pods are gone the quota goes back and the next
	// admission times a new start.
	f.setWorkload("pj-p", evict(kueuev1beta2.WorkloadEvictedByPodsReadyTimeout))
	for range 3 {
		f.step(job)
	}
	wl := f.workload("pj-p")
	if wl.Status.Admission != nil {
		t.Fatalf("the evicted Workload keeps its admission")
	}
	assertPodsReady(t, f.podsReadyOf("pj-p"), metav1.ConditionFalse, kueuev1beta2.WorkloadWaitForStart)
	if c := meta.FindStatusCondition(wl.Status.Conditions, kueuev1beta2.WorkloadRequeued); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Requeued %+v after a PodsReady timeout, want False: Kueue requeues it after its backoff", c)
	}
	st := f.status(job)
	assertPhase(t, st, v1beta1.JobPaused)
	assertCondition(t, st, v1beta1.ConditionQueued, metav1.ConditionTrue, kueuev1beta2.WorkloadEvictedByPodsReadyTimeout)
	if !hasEvent(f.events(), corev1.EventTypeWarning, kueuev1beta2.WorkloadEvictedByPodsReadyTimeout) {
		t.Errorf("no event for the eviction")
	}
}

// TestKueueUnqueued: without Kueue, a job that names a queue runs, and its
// Queued condition and an event say that it runs outside any quota and
// why; a job that names no queue says nothing of queues.
func TestKueueUnqueued(t *testing.T) {
	queued := gpuJob("q").withGang("user-queue", 0).obj()
	plain := gpuJob("plain").obj()
	logger, ctx := ktesting.NewTestContext(t)
	const why = "the cluster does not serve kueue.x-k8s.io/v1beta2 workloads"
	f := newFixtureWithContext(t, ctx, logger, record.NewFakeRecorder(1000), false, func(_ *fixture, o *Options) {
		o.Queueing = kueue.DisabledGate(why)
	}, queued, plain)
	RegisterMetrics()
	counted := func() float64 {
		t.Helper()
		v, err := testutil.GetCounterMetricValue(unqueuedJobs.WithLabelValues(queued.GetObjectKind().GroupVersionKind().Kind))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := counted()
	f.step(queued)
	f.step(plain)
	f.step(queued)
	if n := counted() - before; n != 1 {
		t.Errorf("training_controller_unqueued_jobs_total rose by %v, want 1: one job runs unqueued, reconciled twice", n)
	}
	if n := len(f.podNames()); n != 8 {
		t.Fatalf("%d pods, want both jobs' 8: a job naming a queue runs when nothing queues", n)
	}
	st := f.status(queued)
	assertCondition(t, st, v1beta1.ConditionQueued, metav1.ConditionFalse, v1beta1.ReasonUnqueued)
	if c := condition(st, v1beta1.ConditionQueued); !strings.Contains(c.Message, "user-queue") || !strings.Contains(c.Message, why) {
		t.Errorf("Queued message %q, want the queue and the reason", c.Message)
	}
	if !hasEvent(f.events(), corev1.EventTypeWarning, v1beta1.ReasonUnqueued) {
		t.Errorf("no %s event", v1beta1.ReasonUnqueued)
	}
	if c := condition(f.status(plain), v1beta1.ConditionQueued); c != nil {
		t.Errorf("a job naming no queue has Queued %+v", c)
	}
}

// TestKueueTopologyPlacement: a job admitted with a topology assignment
// gets its pods behind Kueue's topology gate, labelled with their pod set
// and annotated with their Workload, so that Kueue's ungater gives each its
// domain; a job admitted without one gets no gate.
func TestKueueTopologyPlacement(t *testing.T) {
	for _, tas := range []bool{true, false} {
		t.Run(fmt.Sprintf("tas=%v", tas), func(t *testing.T) {
			job := gpuJob("p").withGang("user-queue", 0).obj()
			job.SetAnnotations(map[string]string{batch.AnnotationRequiredTopology: "rack"})
			f := newKueueFixture(t, []runtime.Object{resourceFlavor("gpu-a", nil)}, job)
			f.step(job)
			sets := f.workload("pj-p").Spec.PodSets
			if r := sets[1].TopologyRequest; r == nil || ptr.Deref(r.Required, "") != "rack" {
				t.Fatalf("worker pod set topologyRequest %+v, want rack required", r)
			}
			f.setWorkload("pj-p", func(wl *kueuev1beta2.Workload) {
				admit("gpu-a", "master", "worker")(wl)
				if tas {
					for i := range wl.Status.Admission.PodSetAssignments {
						wl.Status.Admission.PodSetAssignments[i].TopologyAssignment = &kueuev1beta2.TopologyAssignment{Levels: []string{"rack"}}
					}
				}
			})
			f.mustSync(job)
			created := f.createdPods()
			if len(created) != 4 {
				t.Fatalf("created %v, want 4 pods", names(created))
			}
			for _, p := range created {
				gated := len(p.Spec.SchedulingGates) == 1 && p.Spec.SchedulingGates[0].Name == kueuev1beta2.TopologySchedulingGate
				// Kueue's ungater acts on the events of pods that carry
				// their pod set's topology annotation.
				labelled := p.Labels["kueue.x-k8s.io/podset"] == p.Labels[v1beta1.LabelReplicaType] &&
					p.Annotations[kueuev1beta2.WorkloadAnnotation] == "pj-p" &&
					p.Annotations[kueuev1beta2.PodSetRequiredTopologyAnnotation] == "rack"
				if gated != tas || labelled != tas {
					t.Errorf("pod %s: gates %v podset label %q workload annotation %q, want TAS's only with a topology assignment",
						p.Name, p.Spec.SchedulingGates, p.Labels["kueue.x-k8s.io/podset"], p.Annotations[kueuev1beta2.WorkloadAnnotation])
				}
			}
		})
	}
}

// admitOnNodes admits the Workload as Kueue's topology-aware placement
// does: every pod set in one rack, on nodes (one pod each, in order).
func admitOnNodes(nodes ...string) func(*kueuev1beta2.Workload) {
	return func(wl *kueuev1beta2.Workload) {
		admit("gpu-a", "master", "worker")(wl)
		next := 0
		for i, ps := range wl.Spec.PodSets {
			roots := nodes[next : next+int(ps.Count)]
			next += int(ps.Count)
			wl.Status.Admission.PodSetAssignments[i].TopologyAssignment = &kueuev1beta2.TopologyAssignment{
				Levels: []string{"rack", corev1.LabelHostname},
				Slices: []kueuev1beta2.TopologyAssignmentSlice{{
					DomainCount: int32(len(roots)),
					ValuesPerLevel: []kueuev1beta2.TopologyAssignmentSliceLevelValues{
						{Universal: ptr.To("r1")},
						{Individual: &kueuev1beta2.TopologyAssignmentSliceLevelIndividualValues{Prefix: ptr.To("node-"), Roots: roots}},
					},
					PodCounts: kueuev1beta2.TopologyAssignmentSlicePodCounts{Universal: ptr.To[int32](1)},
				}},
			}
		}
	}
}

// keptOff are the nodes a pod set's template keeps off (its affinity's
// metadata.name NotIn), or nil.
func keptOff(ps kueuev1beta2.PodSet) []string {
	a := ps.Template.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, r := range term.MatchFields {
			if r.Key == "metadata.name" && r.Operator == corev1.NodeSelectorOpNotIn {
				return r.Values
			}
		}
	}
	return nil
}

// TestKueueTopologyOffSuspectNodes: a job that Kueue placed node by node
// and whose pod fails in a way that blames its node is evicted from that
// assignment (Kueue's ungater would send the replacement back to the node
// its affinity keeps it off, where it never runs), gives its quota back,
// and asks again with pod sets that keep off the node, so that Kueue
// places it elsewhere. An assignment that names no suspect node stays.
func TestKueueTopologyOffSuspectNodes(t *testing.T) {
	job := gpuJob("p").withGang("user-queue", 0).obj()
	job.SetAnnotations(map[string]string{batch.AnnotationRequiredTopology: "rack"})
	f := newKueueFixture(t, []runtime.Object{resourceFlavor("gpu-a", nil)}, job)
	f.step(job)
	for _, ps := range f.workload("pj-p").Spec.PodSets {
		if off := keptOff(ps); off != nil {
			t.Fatalf("pod set %s keeps off %v before any node is suspect", ps.Name, off)
		}
	}
	f.setWorkload("pj-p", admitOnNodes("a", "b", "c", "d"))
	f.mustSync(job)
	f.observe()
	f.setAll(running)
	f.step(job)
	assertPhase(t, f.status(job), v1beta1.JobRunning)

	// The kubelet of node-b evicts worker 0: node-b is suspect.
	f.setPod("p-worker-0", onNode("node-b", evicted))
	f.step(job)
	st := f.status(job)
	if names := st.SuspectNodeNames(); !slices.Equal(names, []string{"node-b"}) {
		t.Fatalf("suspect nodes %v, want node-b", names)
	}
	ev := meta.FindStatusCondition(f.workload("pj-p").Status.Conditions, kueuev1beta2.WorkloadEvicted)
	if ev == nil || ev.Status != metav1.ConditionTrue || ev.Reason != kueuev1beta2.WorkloadEvictedDueToNodeFailures ||
		!strings.Contains(ev.Message, "node-b") {
		t.Fatalf("Workload Evicted condition %+v, want True NodeFailures naming node-b", ev)
	}
	if !hasEvent(f.events(), corev1.EventTypeWarning, kueue.ReasonSuspectNodeAssigned) {
		t.Errorf("no %s event", kueue.ReasonSuspectNodeAssigned)
	}

	// The job stops as on any eviction, gives its quota back, and its pod
	// sets keep off node-b from then on.
	for range 4 {
		f.step(job)
	}
	if got := f.podNames(); len(got) != 0 {
		t.Fatalf("pods %v left after the eviction", got)
	}
	wl := f.workload("pj-p")
	if wl.Status.Admission != nil || !meta.IsStatusConditionTrue(wl.Status.Conditions, kueuev1beta2.WorkloadRequeued) {
		t.Fatalf("the evicted Workload kept its admission %v or is not requeued: %+v", wl.Status.Admission, wl.Status.Conditions)
	}
	for _, ps := range wl.Spec.PodSets {
		if off := keptOff(ps); !slices.Equal(off, []string{"node-b"}) {
			t.Errorf("pod set %s keeps off %v, want node-b", ps.Name, off)
		}
	}
	assertPhase(t, f.status(job), v1beta1.JobPaused)

	// Admitted again elsewhere: the pods come back, and nothing is evicted.
	f.setWorkload("pj-p", admitOnNodes("a", "c", "d", "e"))
	f.mustSync(job)
	if got := f.createdPodNames(); len(got) != 4 {
		t.Fatalf("created %v after readmission, want 4", got)
	}
	f.observe()
	f.setAll(running)
	f.step(job)
	if ev := meta.FindStatusCondition(f.workload("pj-p").Status.Conditions, kueuev1beta2.WorkloadEvicted); ev != nil && ev.Status == metav1.ConditionTrue {
		t.Errorf("evicted again from an assignment off node-b: %+v", ev)
	}
	assertPhase(t, f.status(job), v1beta1.JobRunning)
}
