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
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

func elasticJob(minR, maxR, expected int32) v1beta1.TrainingJob {
	job := newPyTorchJob("j").withReplicas("worker", 2).withTorchrun(v1beta1.TorchrunConfig{Enabled: true}).obj()
	job.(*v1beta1.PyTorchTrainingJob).Spec.Elastic = &v1beta1.ElasticConfig{
		Enabled: true, MinReplicas: ptr.To(minR), MaxReplicas: ptr.To(maxR), ExpectedReplicas: ptr.To(expected),
	}
	return job
}

// An elastic job runs expectedReplicas replicas with torchrun's
// --nnodes=min:max and an environment that does not depend on the count.
func TestElasticPods(t *testing.T) {
	job := elasticJob(1, 4, 3)
	f := newFixture(t, job)
	f.step(job)
	if diff := cmp.Diff([]string{"j-worker-0", "j-worker-1", "j-worker-2"}, f.podNames()); diff != "" {
		t.Fatalf("pods (-want +got): expectedReplicas decides\n%s", diff)
	}
	c := &f.pod("j-worker-2").Spec.Containers[0]
	if !slices.Contains(c.Command, "--nnodes=1:4") {
		t.Errorf("command %q, want --nnodes=1:4", c.Command)
	}
	env := envOf(c)
	if v := env["PET_NNODES"]; v != "1:4" {
		t.Errorf("PET_NNODES=%q, want 1:4", v)
	}
	if v, ok := env["WORLD_SIZE"]; ok {
		t.Errorf("WORLD_SIZE=%q: an elastic job's pods must not be told a size that scaling changes", v)
	}
	if got := f.pod("j-worker-2").Annotations[podbuilder.AnnotationTopology]; got != "worker:1:4" {
		t.Errorf("topology annotation %q, want the range", got)
	}
	st := f.status(job)
	if st.Replicas == nil || *st.Replicas != 3 || !strings.Contains(st.Selector, v1beta1.LabelJobName+"=j") {
		t.Errorf("status replicas %v selector %q, want 3 and the job's selector", st.Replicas, st.Selector)
	}
}

// Scaling out adds the next indexes, scaling in removes the highest ones;
// no surviving pod is replaced, and nothing counts as a failure or restart.
func TestElasticScaling(t *testing.T) {
	job := elasticJob(1, 4, 2)
	f := newFixture(t, job)
	f.start(job)
	uids := map[string]types.UID{}
	for _, n := range f.podNames() {
		uids[n] = f.pod(n).UID
	}
	scale := func(n int32) {
		t.Helper()
		j := f.job(job).DeepCopyObject().(*v1beta1.PyTorchTrainingJob)
		j.Spec.Elastic.ExpectedReplicas = ptr.To(n)
		f.updateJob(j)
	}

	scale(4)
	f.mustSync(job)
	if deleted := f.deletedPodNames(); len(deleted) > 0 {
		t.Errorf("scaling out deleted %v", deleted)
	}
	f.observe()
	if diff := cmp.Diff([]string{"j-worker-0", "j-worker-1", "j-worker-2", "j-worker-3"}, f.podNames()); diff != "" {
		t.Fatalf("pods after scaling to 4 (-want +got):\n%s", diff)
	}
	if !hasEvent(f.events(), corev1.EventTypeNormal, ReasonScaled) {
		t.Errorf("no %s event", ReasonScaled)
	}
	if st := f.status(job); st.LastScaleTime == nil {
		t.Errorf("no lastScaleTime after scaling")
	}
	f.setAll(running)
	f.step(job)

	scale(1)
	f.mustSync(job)
	if diff := cmp.Diff([]string{"j-worker-1", "j-worker-2", "j-worker-3"}, f.deletedPodNames()); diff != "" {
		t.Errorf("deleted (-want +got): the highest indexes go\n%s", diff)
	}
	f.observe()
	f.step(job)
	st := f.status(job)
	if st.BackoffCount != 0 || st.Tasks[0].RestartCount != 0 {
		t.Errorf("backoffCount %d, restarts %d after scaling in: removing a replica is not a failure", st.BackoffCount, st.Tasks[0].RestartCount)
	}
	if st.Phase != v1beta1.JobRunning {
		t.Errorf("phase %s after scaling in, want Running", st.Phase)
	}
	if p := f.pod("j-worker-0"); p == nil || p.UID != uids["j-worker-0"] {
		t.Errorf("worker-0 was replaced: the survivor keeps its pod")
	}
	events := f.events()
	if hasEvent(events, corev1.EventTypeWarning, ReasonRestarting) {
		t.Errorf("events %v: scaling in restarted a replica", events)
	}
}

// With Kueue, an elastic job's scaled pod set asks for minCount; admitted
// partially, the job runs the admitted count, says so, and the other
// replicas wait, also after a scale-out; scaling in needs no admission.
func TestElasticPartialAdmission(t *testing.T) {
	b := gpuJob("p").withTorchrun(v1beta1.TorchrunConfig{Enabled: true}).withGang("user-queue", 0)
	b.job.(*v1beta1.PyTorchTrainingJob).Spec.Elastic = &v1beta1.ElasticConfig{
		Enabled: true, MinReplicas: ptr.To[int32](2), MaxReplicas: ptr.To[int32](6), ExpectedReplicas: ptr.To[int32](5),
	}
	job := b.obj()
	f := newKueueFixture(t, []runtime.Object{resourceFlavor("gpu-a", nil)}, job)
	f.step(job)
	sets := f.workload("pj-p").Spec.PodSets
	if len(sets) != 2 {
		t.Fatalf("pod sets %v, want master and worker", sets)
	}
	worker := sets[1]
	if worker.Count != 4 || ptr.Deref(worker.MinCount, 0) != 1 {
		t.Errorf("worker pod set count %v minCount %v, want 4 and 1 (minReplicas 2 less the master)", worker.Count, worker.MinCount)
	}
	if sets[0].MinCount != nil {
		t.Errorf("the master's pod set has a minCount; only the scaled type may be admitted partially")
	}

	// Kueue admits 2 of the 4 workers.
	f.setWorkload("pj-p", func(wl *kueuev1beta2.Workload) {
		admit("gpu-a", "master", "worker")(wl)
		wl.Status.Admission.PodSetAssignments[0].Count = ptr.To[int32](1)
		wl.Status.Admission.PodSetAssignments[1].Count = ptr.To[int32](2)
	})
	f.mustSync(job)
	created := names(f.createdPods())
	slices.Sort(created)
	if diff := cmp.Diff([]string{"p-master-0", "p-worker-0", "p-worker-1"}, created); diff != "" {
		t.Errorf("created (-want +got): the admitted count\n%s", diff)
	}
	f.observe()
	f.setAll(running)
	f.step(job)
	st := f.status(job)
	assertPhase(t, st, v1beta1.JobRunning)
	if hasEvent(f.events(), corev1.EventTypeNormal, ReasonScaled) || st.LastScaleTime != nil {
		t.Errorf("a Scaled event or lastScaleTime at admission: the job was not scaled")
	}
	if c := condition(st, v1beta1.ConditionQueued); c == nil || !strings.Contains(c.Message, "2 of the 4 worker replicas") {
		t.Errorf("Queued condition %+v, want it to say 2 of the 4 workers run", c)
	}
	// Kueue expects the pods it admitted: once those are ready, so is the
	// Workload, though the job asks for more.
	f.setAll(ready)
	f.step(job)
	assertPodsReady(t, f.podsReadyOf("pj-p"), metav1.ConditionTrue, kueuev1beta2.WorkloadStarted)

	// Scaled out while admitted: nothing more runs until admitted again.
	scale := func(n int32) {
		j := f.job(job).DeepCopyObject().(*v1beta1.PyTorchTrainingJob)
		j.Spec.Elastic.ExpectedReplicas = ptr.To(n)
		f.updateJob(j)
	}
	scale(6)
	f.mustSync(job)
	if created := f.createdPods(); len(created) > 0 {
		t.Errorf("created %v beyond the admission", names(created))
	}
	f.observe()
	// Scaled in: the highest index goes.
	scale(2)
	f.mustSync(job)
	if diff := cmp.Diff([]string{"p-worker-1"}, f.deletedPodNames()); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
}

// An elastic GenericJob re-forms at each size: its pods are told the count
// (TENSORSTACK_WORLD_SIZE, the scaled type's hosts), so scaling replaces
// every pod, as a run mode change does, and the new ones are told the new
// size; nothing counts as a failure or a restart.
func TestElasticGenericJobReforms(t *testing.T) {
	b := newGenericJob("g").withReplicas("coordinator", 1).withReplicas("worker", 2)
	b.job.(*v1beta1.GenericJob).Spec.Elastic = &v1beta1.ElasticConfig{
		Enabled: true, MinReplicas: ptr.To[int32](2), MaxReplicas: ptr.To[int32](4), ExpectedReplicas: ptr.To[int32](3),
	}
	job := b.obj()
	f := newFixture(t, job)
	f.start(job)
	if diff := cmp.Diff([]string{"g-coordinator-0", "g-worker-0", "g-worker-1"}, f.podNames()); diff != "" {
		t.Fatalf("pods (-want +got):\n%s", diff)
	}
	if got := f.pod("g-worker-1").Annotations[podbuilder.AnnotationTopology]; got != "coordinator:1,worker:2" {
		t.Errorf("topology annotation %q, want the counts: the job re-forms at each size", got)
	}

	j := f.job(job).DeepCopyObject().(*v1beta1.GenericJob)
	j.Spec.Elastic.ExpectedReplicas = ptr.To[int32](4)
	f.updateJob(j)
	f.mustSync(job)
	if diff := cmp.Diff([]string{"g-coordinator-0", "g-worker-0", "g-worker-1"}, f.deletedPodNames()); diff != "" {
		t.Errorf("deleted (-want +got): every pod was told the old size\n%s", diff)
	}
	for range 3 {
		f.observe()
		f.step(job)
	}
	if diff := cmp.Diff([]string{"g-coordinator-0", "g-worker-0", "g-worker-1", "g-worker-2"}, f.podNames()); diff != "" {
		t.Fatalf("pods after scaling to 4 (-want +got):\n%s", diff)
	}
	for _, name := range f.podNames() {
		env := f.containerEnv(&f.pod(name).Spec.Containers[0])
		if env["TENSORSTACK_WORLD_SIZE"] != "4" || strings.Count(env["TENSORSTACK_WORKER_HOSTS"], ",") != 2 {
			t.Errorf("%s: world size %q, workers %q; want 4 and three workers", name, env["TENSORSTACK_WORLD_SIZE"], env["TENSORSTACK_WORKER_HOSTS"])
		}
	}
	st := f.status(job)
	if st.BackoffCount != 0 {
		t.Errorf("backoffCount %d after scaling: a resize is not a failure", st.BackoffCount)
	}
	if events := f.events(); hasEvent(events, corev1.EventTypeWarning, ReasonRestarting) {
		t.Errorf("events %v: scaling counted as a restart", events)
	}
}
