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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/podbuilder"
)

// The informer caches hold every pod, Service and job the controller made,
// for as long as they exist: at 2,000 jobs that is 10,000 pods, and a
// history of finished jobs would grow without bound, had the job informers
// not left finished jobs out (finishedjobs.go). Most of a cached pod is
// what the controller never reads, its managedFields and its containers'
// specs, so the caches drop them as objects arrive.
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
	case metav1.Object:
		o.SetManagedFields(nil)
	}
	return obj, nil
}

// trimPod keeps of a pod what the controller reads: its metadata without
// managedFields, its whole status, and of its spec the node, the scheduler
// and its scheduling group, and the containers' names (the training
// container is found by name and a replica's container states are listed
// in spec order) and restart policies (whether the kubelet runs a
// container again decides a pod's outcome, and an in-place restart needs
// the agent's rule). Until a pod that restarts in place is scheduled, it
// also keeps what decides where it may run (planInPlaceNodes). A field the
// controller starts reading from cached pods must be kept here;
// TestTrimPodKeepsWhatTheControllerReads lists them.
func trimPod(p *corev1.Pod) {
	p.ManagedFields = nil
	spec := &p.Spec
	trimmed := corev1.PodSpec{
		NodeName:        spec.NodeName,
		SchedulerName:   spec.SchedulerName,
		SchedulingGroup: spec.SchedulingGroup,
		Hostname:        spec.Hostname,
		Subdomain:       spec.Subdomain,
		RestartPolicy:   spec.RestartPolicy,
		InitContainers:  containerHeads(spec.InitContainers),
		Containers:      containerHeads(spec.Containers),
	}
	if spec.NodeName == "" && podbuilder.CanRestartInPlace(p) {
		trimmed.NodeSelector, trimmed.Tolerations = spec.NodeSelector, spec.Tolerations
		if spec.Affinity != nil && spec.Affinity.NodeAffinity != nil {
			trimmed.Affinity = &corev1.Affinity{NodeAffinity: spec.Affinity.NodeAffinity}
		}
	}
	*spec = trimmed
}

// containerHeads keeps each container's name and restart policy.
func containerHeads(cs []corev1.Container) []corev1.Container {
	if cs == nil {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i := range cs {
		out[i] = corev1.Container{Name: cs[i].Name, RestartPolicy: cs[i].RestartPolicy, RestartPolicyRules: cs[i].RestartPolicyRules}
	}
	return out
}

// podJobIndex indexes pods by <namespace>/<job kind>/<job name>, from their
// labels (podJobIndexFunc): a reconcile reads its own job's pods only.
const podJobIndex = "job"

func podJobIndexKey(namespace, kind, name string) string {
	return namespace + "/" + kind + "/" + name
}
