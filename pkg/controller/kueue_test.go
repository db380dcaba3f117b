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
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/kueue"
)

// newKueueFixture is a fixture whose controller queues jobs with Kueue; objs
// may hold Kueue objects (unstructured) for the fake dynamic client.
func newKueueFixture(t *testing.T, kueueObjs []runtime.Object, objs ...runtime.Object) *fixture {
	t.Helper()
	logger, ctx := ktesting.NewTestContext(t)
	return newFixtureWithContext(t, ctx, logger, record.NewFakeRecorder(1000), false, func(f *fixture, o *Options) {
		f.dynamicClient = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{
				kueue.WorkloadGVR: "WorkloadList", kueue.FlavorGVR: "ResourceFlavorList", kueue.PriorityClassGVR: "WorkloadPriorityClassList",
			}, kueueObjs...)
		assignUIDs(f.dynamicClient)
		f.dynamicInformers = NewDynamicInformerFactory(f.dynamicClient, 0)
		o.Kueue = kueue.New(f.dynamicClient, f.dynamicInformers)
	}, objs...)
}

// observeKueue copies our Workloads into the controller's cache.
func (f *fixture) observeKueue() {
	f.t.Helper()
	if f.c.kueue == nil {
		return
	}
	list, err := f.dynamicClient.Resource(kueue.WorkloadGVR).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var objs []any
	for i := range list.Items {
		if _, ok := list.Items[i].GetLabels()[v1beta1.LabelJobName]; ok {
			objs = append(objs, &list.Items[i])
		}
	}
	f.replaceAll(f.c.kueue.Informer().GetIndexer(), objs)
}

func (f *fixture) workload(name string) *unstructured.Unstructured {
	f.t.Helper()
	wl, err := f.dynamicClient.Resource(kueue.WorkloadGVR).Namespace("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatalf("getting Workload %s: %v", name, err)
	}
	return wl
}

// setWorkload changes the Workload in the fake apiserver, as Kueue would,
// and lets the cache see it.
func (f *fixture) setWorkload(name string, change func(wl *unstructured.Unstructured)) {
	f.t.Helper()
	wl := f.workload(name)
	change(wl)
	if _, err := f.dynamicClient.Resource(kueue.WorkloadGVR).Namespace("ns").Update(context.Background(), wl, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.observe()
}

func setWorkloadConditions(wl *unstructured.Unstructured, conds ...metav1.Condition) {
	var raw []any
	for i := range conds {
		if conds[i].LastTransitionTime.IsZero() {
			conds[i].LastTransitionTime = metav1.NewTime(testStart)
		}
		m, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&conds[i])
		raw = append(raw, m)
	}
	_ = unstructured.SetNestedSlice(wl.Object, raw, "status", "conditions")
}

// admit admits the Workload in cluster-queue, every pod set on the flavor.
func admit(flavor string, podSets ...string) func(*unstructured.Unstructured) {
	return func(wl *unstructured.Unstructured) {
		setWorkloadConditions(wl,
			metav1.Condition{Type: kueue.ConditionQuotaReserved, Status: metav1.ConditionTrue, Reason: "QuotaReserved"},
			metav1.Condition{Type: kueue.ConditionAdmitted, Status: metav1.ConditionTrue, Reason: "Admitted"})
		var assignments []any
		for _, ps := range podSets {
			assignments = append(assignments, map[string]any{"name": ps, "flavors": map[string]any{"nvidia.com/gpu": flavor}})
		}
		_ = unstructured.SetNestedField(wl.Object, map[string]any{"clusterQueue": "cluster-queue", "podSetAssignments": assignments},
			"status", "admission")
	}
}

func evict(reason string) func(*unstructured.Unstructured) {
	return func(wl *unstructured.Unstructured) {
		conds := kueue.WorkloadConditions(wl)
		meta.SetStatusCondition(&conds, metav1.Condition{Type: kueue.ConditionEvicted, Status: metav1.ConditionTrue, Reason: reason,
			Message: "Preempted to accommodate a workload of higher priority", LastTransitionTime: metav1.NewTime(testStart)})
		setWorkloadConditions(wl, conds...)
	}
}

func resourceFlavor(name string, labels map[string]any, tolerations ...any) *unstructured.Unstructured {
	rf := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"nodeLabels": labels, "tolerations": tolerations},
	}}
	return rf
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
		t.Errorf("the Workload is not controlled by the job: %+v", wl.GetOwnerReferences())
	}
	spec := wl.Object["spec"].(map[string]any)
	if spec["queueName"] != "user-queue" || spec["priority"] != int64(40) || spec["active"] != true {
		t.Errorf("spec queueName %v priority %v active %v, want user-queue 40 true", spec["queueName"], spec["priority"], spec["active"])
	}
	sets := spec["podSets"].([]any)
	if len(sets) != 2 {
		t.Fatalf("pod sets %v, want master and worker", sets)
	}
	for i, want := range []struct {
		name  string
		count int64
	}{{"master", 1}, {"worker", 3}} {
		ps := sets[i].(map[string]any)
		containers, _, _ := unstructured.NestedSlice(ps, "template", "spec", "containers")
		req, _, _ := unstructured.NestedString(containers[0].(map[string]any), "resources", "requests", "nvidia.com/gpu")
		if ps["name"] != want.name || ps["count"] != want.count || req != "1" {
			t.Errorf("pod set %d: name %v count %v gpus %q, want %s %d 1", i, ps["name"], ps["count"], req, want.name, want.count)
		}
	}
	st := f.status(job)
	assertPhase(t, st, v1beta1.JobPending)
	assertCondition(t, st, v1beta1.ConditionQueued, metav1.ConditionTrue, v1beta1.ReasonWaitingForAdmission)
}

func TestKueuePriorityClassLabel(t *testing.T) {
	job := gpuJob("p").obj()
	job.SetLabels(map[string]string{kueue.LabelQueueName: "user-queue", kueue.LabelPriorityClass: "high"})
	wpc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "WorkloadPriorityClass",
		"metadata": map[string]any{"name": "high"}, "value": int64(1000),
	}}
	f := newKueueFixture(t, []runtime.Object{wpc}, job)
	f.step(job)
	spec := f.workload("pj-p").Object["spec"].(map[string]any)
	if spec["priority"] != int64(1000) || spec["priorityClassName"] != "high" || spec["priorityClassSource"] != kueue.PriorityClassSource {
		t.Errorf("priority %v class %v source %v, want 1000 high %s", spec["priority"], spec["priorityClassName"], spec["priorityClassSource"], kueue.PriorityClassSource)
	}
}

// TestKueueAdmissionEvictionFinish follows a job through admission (pods
// placed on the flavor), eviction (pods gone, job kept, quota given back,
// no restart used), admission again (resumed) and its end (Workload
// finished at once).
func TestKueueAdmissionEvictionFinish(t *testing.T) {
	job := gpuJob("p").withGang("user-queue", 0).obj()
	flavor := resourceFlavor("gpu-a", map[string]any{"gpu-type": "a100"},
		map[string]any{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"})
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
	f.setWorkload("pj-p", evict(kueue.EvictedByPreemption))
	f.mustSync(job)
	if got := f.deletedPodNames(); len(got) != 4 {
		t.Fatalf("deleted %v on eviction, want every pod", got)
	}
	f.observe()
	f.step(job)
	st = f.status(job)
	assertPhase(t, st, v1beta1.JobPaused)
	assertCondition(t, st, v1beta1.ConditionQueued, metav1.ConditionTrue, kueue.EvictedByPreemption)
	if st.BackoffCount != 0 {
		t.Errorf("backoffCount %d after an eviction, want 0", st.BackoffCount)
	}
	if !hasEvent(f.events(), corev1.EventTypeWarning, kueue.EvictedByPreemption) {
		t.Errorf("no event for the eviction")
	}
	wl := f.workload("pj-p")
	conds := kueue.WorkloadConditions(wl)
	if kueue.WorkloadAdmission(wl) != nil || meta.IsStatusConditionTrue(conds, kueue.ConditionQuotaReserved) ||
		!meta.IsStatusConditionTrue(conds, kueue.ConditionRequeued) || meta.IsStatusConditionTrue(conds, kueue.ConditionAdmitted) {
		t.Fatalf("the evicted Workload kept its quota: admission %v conditions %+v", kueue.WorkloadAdmission(wl), conds)
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
	c := meta.FindStatusCondition(kueue.WorkloadConditions(f.workload("pj-p")), kueue.ConditionFinished)
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
			paused := f.job(job)
			paused.CommonSpec().RunMode = &v1beta1.RunMode{Pause: &v1beta1.PauseMode{Enabled: true}}
			f.updateJob(paused)
			f.step(paused)
			if active := kueue.WorkloadActive(f.workload("pj-p")); active {
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
			if wl := f.workload("pj-p"); kueue.WorkloadAdmission(wl) != nil {
				t.Errorf("the paused job's Workload keeps its admission: %v", kueue.WorkloadAdmission(wl))
			}
			resumed := f.job(paused)
			resumed.CommonSpec().RunMode = nil
			f.updateJob(resumed)
			f.step(resumed)
			if !kueue.WorkloadActive(f.workload("pj-p")) {
				t.Errorf("the resumed job's Workload is inactive")
			}
		})
	}
}
