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
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// The informer caches hold every pod, Service and job the controller made,
// for as long as they exist: at 2,000 jobs that is 10,000 pods, and a
// history of finished jobs grows without bound. Most of a cached pod is what
// the controller never reads, its managedFields and its containers' specs,
// and so are a finished job's pod templates, so the caches drop them as
// objects arrive.
//
// Nothing is lost to a write: the controller changes existing pods,
// Services and jobs only by patches, and an update of an object without
// managedFields leaves the server's managedFields as they were.

// trimForCache is the transform of the controller's informers. It may
// change obj in place: an informer hands its transform objects it owns.
func trimForCache(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		trimPod(o)
	case v1beta1.TrainingJob:
		o.SetManagedFields(nil)
		if o.JobStatus().Phase.IsFinished() {
			trimFinishedJob(o)
		}
	case metav1.Object:
		o.SetManagedFields(nil)
	}
	return obj, nil
}

// lastAppliedAnnotation is where kubectl apply keeps the whole manifest it
// applied: as large as the spec, and never read by the controller.
const lastAppliedAnnotation = corev1.LastAppliedConfigAnnotation

// trimFinishedJob keeps of a finished job what the controller still reads
// of it: its metadata, its whole status, and of its spec everything but the
// pod templates, of which it keeps the containers' names and ports (the
// replicas' addresses and the training container are found by them). A
// finished job makes no more pods, so the rest of its templates, the bulk
// of a job, is dead weight that a history of finished jobs would otherwise
// multiply. The spec is never written back: the controller changes jobs
// only through status patches and deletes. A field the controller starts
// reading from finished jobs must be kept here;
// TestTrimmedFinishedJobReconcilesAlike shows it does not miss one.
func trimFinishedJob(job v1beta1.TrainingJob) {
	if a := job.GetAnnotations(); a[lastAppliedAnnotation] != "" {
		a = maps.Clone(a)
		delete(a, lastAppliedAnnotation)
		job.SetAnnotations(a)
	}
	specs := job.CommonSpec().ReplicaSpecs
	for i := range specs {
		t := &specs[i].Template
		t.ObjectMeta = metav1.ObjectMeta{}
		t.Spec = corev1.PodSpec{
			InitContainers: containerNames(t.Spec.InitContainers),
			Containers:     containerNamesAndPorts(t.Spec.Containers),
		}
	}
}

func containerNamesAndPorts(cs []corev1.Container) []corev1.Container {
	out := containerNames(cs)
	for i := range out {
		out[i].Ports = cs[i].Ports
	}
	return out
}

// trimPod keeps of a pod what the controller reads: its metadata without
// managedFields, its whole status, and of its spec the node, the scheduler
// and its scheduling group, and the containers' names (the training
// container is found by name and a replica's container states are listed
// in spec order). A field the controller starts reading from cached pods
// must be kept here; TestTrimPodKeepsWhatTheControllerReads lists them.
func trimPod(p *corev1.Pod) {
	p.ManagedFields = nil
	spec := &p.Spec
	*spec = corev1.PodSpec{
		NodeName:        spec.NodeName,
		SchedulerName:   spec.SchedulerName,
		SchedulingGroup: spec.SchedulingGroup,
		Hostname:        spec.Hostname,
		Subdomain:       spec.Subdomain,
		RestartPolicy:   spec.RestartPolicy,
		InitContainers:  containerNames(spec.InitContainers),
		Containers:      containerNames(spec.Containers),
	}
}

func containerNames(cs []corev1.Container) []corev1.Container {
	if cs == nil {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i := range cs {
		out[i].Name = cs[i].Name
	}
	return out
}
