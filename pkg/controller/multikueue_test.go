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
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/kueue"
	"tensorstack.dev/training/pkg/podbuilder"
)

// TestMultiKueueWorkerTakesPrebuiltWorkload: in a worker cluster the job
// MultiKueue copied there names the Workload MultiKueue made for it. The
// controller creates none of its own, takes that one (controller
// reference, event) before it runs anything, then runs the job on its
// admission.
func TestMultiKueueWorkerTakesPrebuiltWorkload(t *testing.T) {
	b := gpuJob("p").withGang("user-queue", 0)
	b.obj().SetAnnotations(map[string]string{kueue.PrebuiltWorkloadKey: "mk-p"})
	job := b.obj()
	f := newKueueFixture(t, []runtime.Object{resourceFlavor("gpu-a", nil)}, job)

	f.step(job)
	list, err := f.kueueClient.KueueV1beta2().Workloads("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 || len(f.createdPods()) != 0 {
		t.Fatalf("before the prebuilt Workload exists: Workloads %d, pods %v; want none", len(list.Items), names(f.createdPods()))
	}

	f.createPrebuiltWorkload("mk-p", f.jobPodSets(job))
	f.setWorkload("mk-p", admit("gpu-a", "master", "worker"))
	f.step(job)
	wl := f.workload("mk-p")
	if !metav1.IsControlledBy(wl, job) {
		t.Fatalf("owner references %+v; want the job as the prebuilt Workload's controller", wl.OwnerReferences)
	}
	if created := f.createdPods(); len(created) != 0 {
		t.Fatalf("created %v while taking the Workload; want nothing before it is the job's", names(created))
	}
	if !hasEvent(f.events(), corev1.EventTypeNormal, kueue.ReasonAdopted) {
		t.Errorf("no %s event", kueue.ReasonAdopted)
	}
	if len(wl.Spec.PodSets) != 2 || wl.Annotations[kueue.AnnotationPodSets] != "" {
		t.Errorf("pod sets %+v, annotations %v; want them as MultiKueue made them", wl.Spec.PodSets, wl.Annotations)
	}

	f.mustSync(job)
	if created := f.createdPods(); len(created) != 4 {
		t.Fatalf("created %v once the admitted Workload is the job's; want 4 pods", names(created))
	}
	if f.workloadExists(kueue.WorkloadName(podbuilder.PyTorchKind, "p")) {
		t.Errorf("the controller created a Workload of its own beside the prebuilt one")
	}
}

// TestForeignPrebuiltWorkloadIsNotTaken: a job that names a Workload made
// for other pods (as a user could, to run under another job's admission)
// does not take it and creates no pod, even once it is admitted; its
// Queued condition and an event say why.
func TestForeignPrebuiltWorkloadIsNotTaken(t *testing.T) {
	b := gpuJob("p").withGang("user-queue", 0)
	b.obj().SetAnnotations(map[string]string{kueue.PrebuiltWorkloadKey: "other"})
	job := b.obj()
	f := newKueueFixture(t, []runtime.Object{resourceFlavor("gpu-a", nil)}, job)
	sets := f.jobPodSets(job)
	sets[1].Count = 1 // admitted for one worker, the job has three
	f.createPrebuiltWorkload("other", sets)
	f.setWorkload("other", admit("gpu-a", "master", "worker"))
	f.step(job)
	f.step(job)
	if wl := f.workload("other"); len(wl.OwnerReferences) != 0 {
		t.Errorf("owner references %+v; want the foreign Workload left alone", wl.OwnerReferences)
	}
	if created := f.createdPods(); len(created) != 0 {
		t.Fatalf("created %v under a Workload made for other pods", names(created))
	}
	st := f.status(job)
	assertCondition(t, st, v1beta1.ConditionQueued, metav1.ConditionTrue, v1beta1.ReasonPrebuiltWorkloadMismatch)
	if c := condition(st, v1beta1.ConditionQueued); !strings.Contains(c.Message, "worker has 1 pods, the job's 3") {
		t.Errorf("Queued message %q does not say how the pod sets differ", c.Message)
	}
	if !hasEvent(f.events(), corev1.EventTypeWarning, v1beta1.ReasonPrebuiltWorkloadMismatch) {
		t.Errorf("no %s event", v1beta1.ReasonPrebuiltWorkloadMismatch)
	}
}

// jobPodSets are the pod sets of the job's Workload, as the controller (and
// MultiKueue, copying the manager's Workload) builds them.
func (f *fixture) jobPodSets(job v1beta1.TrainingJob) []kueuev1beta2.PodSet {
	f.t.Helper()
	topo := podbuilder.NewTopology(f.c.kinds[job.GetObjectKind().GroupVersionKind().Kind].Adapter, job, "")
	sets, _, err := kueue.PodSets(job.GetAnnotations(), topo.Groups, func(gi int) int32 { return elasticMinCount(topo, gi) }, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	return sets
}

// createPrebuiltWorkload creates a Workload for the job "p" with no owner,
// as MultiKueue does in a worker cluster.
func (f *fixture) createPrebuiltWorkload(name string, sets []kueuev1beta2.PodSet) {
	f.t.Helper()
	prebuilt := &kueuev1beta2.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: v1beta1.JobLabels(podbuilder.PyTorchKind, "p")},
		Spec:       kueuev1beta2.WorkloadSpec{QueueName: "user-queue", PodSets: sets},
	}
	if _, err := f.kueueClient.KueueV1beta2().Workloads("ns").Create(context.Background(), prebuilt, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// TestMultiKueueManagerReportsPodsReady: in the manager cluster the job's
// Workload gets PodsReady from the status MultiKueue copies back from the
// worker, or Kueue's waitForPodsReady would evict it.
func TestMultiKueueManagerReportsPodsReady(t *testing.T) {
	b := gpuJob("p").withGang("user-queue", 0)
	b.spec().ManagedBy = ptr.To(batch.ManagedByMultiKueue)
	job := b.obj()
	f := newKueueFixture(t, []runtime.Object{resourceFlavor("gpu-a", nil)}, job)
	f.step(job)
	f.setWorkload("pj-p", admit("gpu-a", "master", "worker"))
	f.step(job)
	assertPodsReady(t, f.podsReadyOf("pj-p"), metav1.ConditionFalse, kueuev1beta2.WorkloadWaitForStart)

	copyStatus := func(agg v1beta1.Aggregate) {
		t.Helper()
		got := f.job(job).(*v1beta1.PyTorchTrainingJob)
		got.Status.Phase, got.Status.Aggregate = v1beta1.JobRunning, agg
		if _, err := f.jobClient.BatchV1beta1().PyTorchTrainingJobs("ns").UpdateStatus(context.Background(), got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.observe()
		f.step(got)
	}
	copyStatus(v1beta1.Aggregate{Running: 3, Pending: 1})
	assertPodsReady(t, f.podsReadyOf("pj-p"), metav1.ConditionFalse, kueuev1beta2.WorkloadWaitForStart)
	copyStatus(v1beta1.Aggregate{Running: 3, Succeeded: 1})
	assertPodsReady(t, f.podsReadyOf("pj-p"), metav1.ConditionTrue, kueuev1beta2.WorkloadStarted)
	if pods, _ := f.kubeClient.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{}); len(pods.Items) != 0 {
		t.Errorf("%d pods in the manager cluster; want none", len(pods.Items))
	}
}
