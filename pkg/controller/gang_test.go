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
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/gang"
	"tensorstack.dev/training/pkg/controller/owner"
	"tensorstack.dev/training/pkg/podbuilder"
)

// gangBackends are the backends every backend-neutral test runs with.
var gangBackends = []gang.Scheduler{gang.SchedulerWorkload, gang.SchedulerCoscheduling}

// withGang asks for gang scheduling (spec.scheduler.t9kScheduler).
func (b *jobBuilder) withGang(queue string, priority int32) *jobBuilder {
	b.spec().Scheduler = &v1beta1.SchedulePolicy{T9kScheduler: &v1beta1.T9kScheduler{Queue: queue, Priority: priority}}
	return b
}

// newGangFixture is a fixture whose controller runs with a gang backend.
func newGangFixture(t *testing.T, backend gang.Scheduler, objs ...runtime.Object) *fixture {
	t.Helper()
	return newGangFixtureWithOptions(t, backend, nil, objs...)
}

// newGangFixtureWithOptions also lets the test adjust the backend's
// configuration.
func newGangFixtureWithOptions(t *testing.T, backend gang.Scheduler, configure func(c *gang.Config), objs ...runtime.Object) *fixture {
	t.Helper()
	logger, ctx := ktesting.NewTestContext(t)
	return newFixtureWithContext(t, ctx, logger, record.NewFakeRecorder(1000), false, func(f *fixture, o *Options) {
		f.gangScheduler = backend
		cfg := gang.Config{KubeClient: f.kubeClient, KubeInformers: f.kubeInformers}
		if backend == gang.SchedulerCoscheduling {
			f.dynamicClient = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{gang.CoschedulingPodGroupGVR: "PodGroupList"})
			assignUIDs(f.dynamicClient)
			f.dynamicInformers = NewDynamicInformerFactory(f.dynamicClient, 0)
			cfg.DynamicClient, cfg.DynamicInformers = f.dynamicClient, f.dynamicInformers
		}
		if configure != nil {
			configure(&cfg)
		}
		var err error
		if o.Gang, err = gang.New(backend, cfg); err != nil {
			t.Fatal(err)
		}
	}, objs...)
}

// observeGang copies the group objects with the job-name label into the
// backend's caches.
func (f *fixture) observeGang() {
	f.t.Helper()
	ctx := context.Background()
	switch f.gangScheduler {
	case gang.SchedulerWorkload:
		wls, err := f.kubeClient.SchedulingV1beta1().Workloads("").List(ctx, metav1.ListOptions{})
		if err != nil {
			f.t.Fatal(err)
		}
		var objs []any
		for i := range wls.Items {
			if _, ok := wls.Items[i].Labels[v1beta1.LabelJobName]; ok {
				objs = append(objs, &wls.Items[i])
			}
		}
		f.replaceAll(f.kubeInformers.Scheduling().V1beta1().Workloads().Informer().GetIndexer(), objs)
		pgs, err := f.kubeClient.SchedulingV1beta1().PodGroups("").List(ctx, metav1.ListOptions{})
		if err != nil {
			f.t.Fatal(err)
		}
		objs = nil
		for i := range pgs.Items {
			if _, ok := pgs.Items[i].Labels[v1beta1.LabelJobName]; ok {
				objs = append(objs, &pgs.Items[i])
			}
		}
		f.replaceAll(f.kubeInformers.Scheduling().V1beta1().PodGroups().Informer().GetIndexer(), objs)
	case gang.SchedulerCoscheduling:
		list, err := f.dynamicClient.Resource(gang.CoschedulingPodGroupGVR).List(ctx, metav1.ListOptions{})
		if err != nil {
			f.t.Fatal(err)
		}
		var objs []any
		for i := range list.Items {
			if _, ok := list.Items[i].GetLabels()[v1beta1.LabelJobName]; ok {
				objs = append(objs, &list.Items[i])
			}
		}
		f.replaceAll(f.dynamicInformers.ForResource(gang.CoschedulingPodGroupGVR).Informer().GetIndexer(), objs)
		f.dynamicClient.ClearActions()
	}
}

// gangActions are the calls on group objects since the last observe, as
// "<verb> <resource>", sorted.
func (f *fixture) gangActions() []string {
	var actions []core.Action
	if f.dynamicClient != nil {
		actions = f.dynamicClient.Actions()
	} else {
		actions = f.kubeClient.Actions()
	}
	var out []string
	for _, a := range actions {
		if r := a.GetResource().Resource; (r == "podgroups" || r == "workloads") && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			out = append(out, a.GetVerb()+" "+r)
		}
	}
	sort.Strings(out)
	return out
}

// podGroupMinCount reads the minimum count of the job's PodGroup in the
// fake apiserver: spec.schedulingPolicy.gang.minCount or spec.minMember.
func (f *fixture) podGroupMinCount(name string) (int64, bool) {
	f.t.Helper()
	ctx := context.Background()
	if f.dynamicClient != nil {
		pg, err := f.dynamicClient.Resource(gang.CoschedulingPodGroupGVR).Namespace("ns").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return 0, false
		}
		return minMember(pg), true
	}
	pg, err := f.kubeClient.SchedulingV1beta1().PodGroups("ns").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, false
	}
	return int64(pg.Spec.SchedulingPolicy.Gang.MinCount), true
}

// workloadExists says whether the Workload API backend's Workload is there.
func (f *fixture) workloadExists(name string) bool {
	_, err := f.kubeClient.SchedulingV1beta1().Workloads("ns").Get(context.Background(), name, metav1.GetOptions{})
	return err == nil
}

// inGroup says whether a pod joined the group of the backend.
func inGroup(backend gang.Scheduler, p *corev1.Pod, group string) bool {
	if backend == gang.SchedulerCoscheduling {
		return p.Labels[gang.LabelCoschedulingPodGroup] == group
	}
	return p.Spec.SchedulingGroup != nil && ptr.Deref(p.Spec.SchedulingGroup.PodGroupName, "") == group
}

// jobOwner is the owner reference of a job's group objects: the job, as
// their controller.
func jobOwner(kind string, job v1beta1.TrainingJob) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: kind, Name: job.GetName(), UID: job.GetUID(),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}

// checkGangPods checks the created pods: the members, and only they, joined
// the group j; every pod has the priority's class.
func checkGangPods(t *testing.T, backend gang.Scheduler, created []*corev1.Pod, members, others []string, class string) {
	t.Helper()
	if got, want := len(created), len(members)+len(others); got != want {
		t.Fatalf("created %d pods, want %d", got, want)
	}
	for _, p := range created {
		if member := slices.Contains(members, p.Name); inGroup(backend, p, "j") != member {
			t.Errorf("pod %s: labels %v, schedulingGroup %+v; member %v", p.Name, p.Labels, p.Spec.SchedulingGroup, member)
		}
		if p.Spec.PriorityClassName != class {
			t.Errorf("pod %s: priorityClassName %q, want %q", p.Name, p.Spec.PriorityClassName, class)
		}
	}
}

// startGang creates the group, then the pods, and lets them run.
func (f *fixture) startGang(job v1beta1.TrainingJob) {
	f.t.Helper()
	f.step(job)
	f.step(job)
	f.setAll(running)
	f.step(job)
	if st := f.status(job); st.Phase != v1beta1.JobRunning {
		f.t.Fatalf("job did not start: phase %q, conditions %+v", st.Phase, st.Conditions)
	}
	f.events()
}

// TestNoGangScheduler: without a backend a job asking for a gang runs, its
// pods scheduled one by one, and its GangScheduled condition says so.
func TestNoGangScheduler(t *testing.T) {
	job := newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 2).withGang("gpus", 40).obj()
	f := newFixture(t, job)
	f.step(job)
	if got := f.podNames(); !equalStrings(got, []string{"j-chief-0", "j-worker-0", "j-worker-1"}) {
		t.Fatalf("pods %v, want every replica's at once", got)
	}
	st := f.status(job)
	assertCondition(t, st, v1beta1.ConditionGangScheduled, metav1.ConditionFalse, ReasonNoGangScheduler)
	if c := condition(st, v1beta1.ConditionGangScheduled); !strings.Contains(c.Message, "scheduled one by one") {
		t.Errorf("condition message %q does not say the pods are scheduled one by one", c.Message)
	}
	p := f.pod("j-worker-0")
	if p.Spec.SchedulingGroup != nil || p.Labels[gang.LabelCoschedulingPodGroup] != "" || p.Spec.SchedulerName != "" {
		t.Errorf("pod joined a group without a gang scheduler: %+v %v %q", p.Spec.SchedulingGroup, p.Labels, p.Spec.SchedulerName)
	}
	// The priority still orders the pods in the scheduler's queue.
	if p.Spec.PriorityClassName != podbuilder.PriorityClassP50 {
		t.Errorf("priorityClassName %q, want %s", p.Spec.PriorityClassName, podbuilder.PriorityClassP50)
	}

	// A job that asks for no gang gets no such condition.
	plain := newTFJob("plain").withReplicas("worker", 1).obj()
	g := newFixture(t, plain)
	g.step(plain)
	if c := condition(g.status(plain), v1beta1.ConditionGangScheduled); c != nil {
		t.Errorf("a job without t9kScheduler has condition %+v", c)
	}
}

// TestGangGroupBeforePods: the first reconcile creates the group and no
// pod; the pods come once the group is in the cache, and a job without
// t9kScheduler gets no group.
func TestGangGroupBeforePods(t *testing.T) {
	for _, backend := range gangBackends {
		t.Run(string(backend), func(t *testing.T) {
			job := newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 2).withGang("gpus", 0).obj()
			plain := newPyTorchJob("plain").withReplicas("master", 1).obj()
			f := newGangFixture(t, backend, job, plain)

			f.mustSync(job)
			if got := f.createdPodNames(); len(got) != 0 {
				t.Fatalf("created pods %v before the group was in the cache", got)
			}
			want := []string{"create podgroups"}
			if backend == gang.SchedulerWorkload {
				want = []string{"create podgroups", "create workloads"}
			}
			if got := f.gangActions(); !equalStrings(got, want) {
				t.Fatalf("group calls %v, want %v", got, want)
			}
			if !hasEvent(f.events(), corev1.EventTypeNormal, owner.ReasonSuccessfulCreate) {
				t.Errorf("no SuccessfulCreate event for the group")
			}
			f.observe()
			f.mustSync(job)
			if got := f.createdPodNames(); !equalStrings(got, []string{"j-master-0", "j-worker-0", "j-worker-1"}) {
				t.Fatalf("created %v once the group was there", got)
			}
			if got := f.gangActions(); len(got) != 0 {
				t.Errorf("group calls %v once it exists", got)
			}
			for _, p := range f.createdPods() {
				if !inGroup(backend, p, "j") {
					t.Errorf("pod %s did not join group j", p.Name)
				}
				if p.Spec.PriorityClassName != "" {
					t.Errorf("pod %s has priorityClassName %q with priority 0", p.Name, p.Spec.PriorityClassName)
				}
			}
			f.observe()

			f.mustSync(plain)
			if got := f.gangActions(); len(got) != 0 {
				t.Errorf("group calls %v for a job without t9kScheduler", got)
			}
			if p := f.createdPods(); len(p) != 1 || inGroup(backend, p[0], "plain") || p[0].Spec.SchedulerName != "" {
				t.Errorf("a job without t9kScheduler got pods %+v", p)
			}
		})
	}
}

// TestWaitingForGang: the GangScheduled condition says the job waits for
// room for its whole gang, with the scheduler's message, until every member
// is placed; the evaluator is not waited for.
func TestWaitingForGang(t *testing.T) {
	for _, backend := range gangBackends {
		t.Run(string(backend), func(t *testing.T) {
			job := newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 2).withReplicas("evaluator", 1).
				withGang("gpus", 0).obj()
			f := newGangFixture(t, backend, job)
			f.step(job)
			st := f.status(job)
			assertCondition(t, st, v1beta1.ConditionGangScheduled, metav1.ConditionFalse, v1beta1.ReasonWaitingForGang)
			if c := condition(st, v1beta1.ConditionGangScheduled); !strings.Contains(c.Message, "0 of 3 pods placed") {
				t.Errorf("message %q, want 0 of 3 pods placed", c.Message)
			}
			f.step(job)

			const said = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
			f.setPod("j-worker-1", func(p *corev1.Pod) {
				p.Status.Conditions = []corev1.PodCondition{{
					Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: said,
				}}
			})
			f.setPod("j-chief-0", func(p *corev1.Pod) { p.Spec.NodeName = "node-1" })
			f.step(job)
			st = f.status(job)
			assertPhase(t, st, v1beta1.JobPending)
			assertCondition(t, st, v1beta1.ConditionGangScheduled, metav1.ConditionFalse, v1beta1.ReasonWaitingForGang)
			c := condition(st, v1beta1.ConditionGangScheduled)
			if !strings.Contains(c.Message, "1 of 3 pods placed") || !strings.HasSuffix(c.Message, "the scheduler says: "+said) {
				t.Errorf("message %q, want 1 of 3 placed and the scheduler's message", c.Message)
			}

			// Every member placed; the evaluator still pending does not matter.
			f.setAll(func(p *corev1.Pod) {
				if p.Labels[v1beta1.LabelReplicaType] != "evaluator" {
					p.Spec.NodeName = "node-1"
					p.Status.Conditions = nil
				}
			})
			f.step(job)
			assertCondition(t, f.status(job), v1beta1.ConditionGangScheduled, metav1.ConditionTrue, ReasonGangPlaced)
		})
	}
}

// TestGangPauseAndResume: pausing deletes the pods and keeps the group;
// resuming creates the pods at once in the same group.
func TestGangPauseAndResume(t *testing.T) {
	for _, backend := range gangBackends {
		t.Run(string(backend), func(t *testing.T) {
			job := newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 2).withGang("gpus", 0).obj()
			f := newGangFixture(t, backend, job)
			f.startGang(job)

			paused := f.pause(job)
			f.mustSync(paused)
			if got := f.deletedPodNames(); len(got) != 3 {
				t.Fatalf("deleted %v, want every pod", got)
			}
			if got := f.gangActions(); len(got) != 0 {
				t.Fatalf("group calls %v on pause", got)
			}
			f.observe()
			f.step(paused)
			assertPhase(t, f.status(paused), v1beta1.JobPaused)
			if _, ok := f.podGroupMinCount("j"); !ok {
				t.Fatalf("the PodGroup is gone while paused")
			}

			resumed := f.job(paused)
			resumed.CommonSpec().RunMode.Pause.Enabled = false
			f.updateJob(resumed)
			f.mustSync(resumed)
			if got := f.gangActions(); len(got) != 0 {
				t.Errorf("group calls %v on resume, want the group reused", got)
			}
			created := f.createdPods()
			if len(created) != 3 {
				t.Fatalf("created %d pods on resume, want 3 at once", len(created))
			}
			for _, p := range created {
				if !inGroup(backend, p, "j") {
					t.Errorf("pod %s did not join the group on resume", p.Name)
				}
			}
			if n, _ := f.podGroupMinCount("j"); n != 3 {
				t.Errorf("minCount %d after resume, want 3", n)
			}
		})
	}
}

// TestGangCleanUp: a finished job's group goes under clean-up policies All
// and Unfinished and stays under None.
func TestGangCleanUp(t *testing.T) {
	for _, backend := range gangBackends {
		for _, tc := range []struct {
			policy v1beta1.CleanUpPolicy
			kept   bool
		}{{v1beta1.CleanUpPolicyAll, false}, {v1beta1.CleanUpPolicyUnfinished, false}, {v1beta1.CleanUpPolicyNone, true}} {
			t.Run(string(backend)+" "+string(tc.policy), func(t *testing.T) {
				job := newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 1).withGang("gpus", 0).
					withCleanUp(tc.policy).obj()
				f := newGangFixture(t, backend, job)
				f.startGang(job)
				f.setPod("j-chief-0", succeeded)
				f.mustSync(job)
				assertPhase(t, f.status(job), v1beta1.JobSucceeded)
				f.observe()
				f.mustSync(job) // clean-up happens once
				if got := f.gangActions(); len(got) != 0 {
					t.Errorf("group calls %v after the clean-up", got)
				}
				f.observe()
				if _, ok := f.podGroupMinCount("j"); ok != tc.kept {
					t.Errorf("PodGroup kept: %v, want %v", ok, tc.kept)
				}
				if backend == gang.SchedulerWorkload && f.workloadExists("j") != tc.kept {
					t.Errorf("Workload kept: %v, want %v", !tc.kept, tc.kept)
				}
				if !tc.kept && !hasEvent(f.events(), corev1.EventTypeNormal, owner.ReasonSuccessfulDelete) {
					t.Errorf("no SuccessfulDelete event for the group")
				}
			})
		}
	}
}

// TestGangReplacement: a replaced member joins the same group, which is
// neither recreated nor resized while the others run: the running members
// and the new pod make up minCount. Once a member has finished for good,
// minCount drops, so that a later replacement is admitted by schedulers
// that count only pods that have not terminated.
func TestGangReplacement(t *testing.T) {
	for _, backend := range gangBackends {
		t.Run(string(backend), func(t *testing.T) {
			job := newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 2).withReplicas("ps", 1).
				withRestartPolicy("worker", v1beta1.RestartPolicyOnFailure).withRestartPolicy("ps", v1beta1.RestartPolicyOnFailure).
				withGang("gpus", 0).obj()
			f := newGangFixture(t, backend, job)
			f.startGang(job)

			f.setPod("j-worker-1", failed(1))
			f.step(job)
			f.clock.Step(DefaultRestartBackoffBase)
			f.mustSync(job)
			if got := f.createdPodNames(); !equalStrings(got, []string{"j-worker-1"}) {
				t.Fatalf("created %v, want the replacement", got)
			}
			if p := f.createdPods()[0]; !inGroup(backend, p, "j") {
				t.Errorf("the replacement did not join the group")
			}
			if got := f.gangActions(); len(got) != 0 {
				t.Errorf("group calls %v for a replacement", got)
			}
			f.observe()
			if n, _ := f.podGroupMinCount("j"); n != 4 {
				t.Errorf("minCount %d, want 4", n)
			}

			f.setAll(running)
			f.setPod("j-worker-0", succeeded)
			f.mustSync(job)
			if got := f.gangActions(); !equalStrings(got, []string{"patch podgroups"}) {
				t.Fatalf("group calls %v once a member finished, want the PodGroup resized", got)
			}
			f.observe()
			if n, _ := f.podGroupMinCount("j"); n != 3 {
				t.Errorf("minCount %d after a member finished, want 3", n)
			}
			if !hasEvent(f.events(), corev1.EventTypeNormal, owner.ReasonSuccessfulUpdate) {
				t.Errorf("no SuccessfulUpdate event for the resize")
			}
			f.setPod("j-ps-0", failed(137))
			f.step(job)
			f.clock.Step(DefaultRestartBackoffBase)
			f.mustSync(job)
			if got := f.createdPodNames(); !equalStrings(got, []string{"j-ps-0"}) {
				t.Fatalf("created %v, want the ps replacement", got)
			}
			if got := f.gangActions(); len(got) != 0 {
				t.Errorf("group calls %v for the ps replacement", got)
			}
		})
	}
}

// TestGangNameConflict: a group object of the job's name that the job does
// not control keeps the pods from being created.
func TestGangNameConflict(t *testing.T) {
	for _, backend := range gangBackends {
		t.Run(string(backend), func(t *testing.T) {
			job := newTFJob("j").withReplicas("worker", 2).withGang("gpus", 0).obj()
			f := newGangFixture(t, backend, job)
			meta := metav1.ObjectMeta{Name: "j", Namespace: "ns", Labels: map[string]string{
				v1beta1.LabelJobName: "j", v1beta1.LabelJobKind: podbuilder.TensorFlowKind,
			}}
			if backend == gang.SchedulerCoscheduling {
				pg := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"minMember": int64(7)}}}
				pg.SetAPIVersion("scheduling.x-k8s.io/v1alpha1")
				pg.SetKind("PodGroup")
				pg.SetName(meta.Name)
				pg.SetNamespace(meta.Namespace)
				pg.SetLabels(meta.Labels)
				if _, err := f.dynamicClient.Resource(gang.CoschedulingPodGroupGVR).Namespace("ns").Create(context.Background(), pg, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			} else {
				for _, obj := range []runtime.Object{
					&schedulingv1beta1.Workload{ObjectMeta: meta},
					&schedulingv1beta1.PodGroup{ObjectMeta: meta, Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 7}}}},
				} {
					if err := f.kubeClient.Tracker().Add(obj); err != nil {
						t.Fatal(err)
					}
				}
			}
			f.observe()
			f.events()
			if _, err := f.sync(job); err == nil {
				t.Fatalf("no error for a group the job does not control")
			}
			if got := f.createdPodNames(); len(got) != 0 {
				t.Errorf("created %v while the group's name is taken", got)
			}
			if !hasEvent(f.events(), corev1.EventTypeWarning, owner.ReasonNameConflict) {
				t.Errorf("no NameConflict event")
			}
			if n, _ := f.podGroupMinCount("j"); n != 7 {
				t.Errorf("the other PodGroup was changed: minCount %d", n)
			}
		})
	}
}

// TestGangNoLongerAsked: a job whose t9kScheduler is removed loses its
// group and its GangScheduled condition; its new pods join no group.
func TestGangNoLongerAsked(t *testing.T) {
	for _, backend := range gangBackends {
		t.Run(string(backend), func(t *testing.T) {
			job := newTFJob("j").withReplicas("worker", 2).withRestartPolicy("worker", v1beta1.RestartPolicyOnFailure).
				withGang("gpus", 0).obj()
			f := newGangFixture(t, backend, job)
			f.startGang(job)
			plain := f.job(job)
			plain.CommonSpec().Scheduler = nil
			f.updateJob(plain)
			f.setPod("j-worker-1", failed(1))
			f.step(plain)
			f.clock.Step(DefaultRestartBackoffBase)
			f.mustSync(plain)
			if p := f.createdPods(); len(p) != 1 || inGroup(backend, p[0], "j") {
				t.Errorf("created %+v, want one pod outside any group", p)
			}
			f.observe()
			if _, ok := f.podGroupMinCount("j"); ok {
				t.Errorf("the PodGroup is still there")
			}
			if backend == gang.SchedulerWorkload && f.workloadExists("j") {
				t.Errorf("the Workload is still there")
			}
			if c := condition(f.status(plain), v1beta1.ConditionGangScheduled); c != nil {
				t.Errorf("condition %+v stays", c)
			}
		})
	}
}

// minMember reads a coscheduling PodGroup's spec.minMember; -1 when it is
// missing or not a number.
func minMember(pg *unstructured.Unstructured) int64 {
	n, ok, err := unstructured.NestedInt64(pg.Object, "spec", "minMember")
	if !ok || err != nil {
		return -1
	}
	return n
}
