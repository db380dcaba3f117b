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

package podbuilder

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// Under the InOrder startup policy, every replica but the leaders waits in
// an init container until the controller opens its gate: an annotation on
// the pod, which the init container reads through a downward API volume.
// The kubelet rewrites the file when the annotation changes, so opening the
// gate is one patch per waiting pod.

// AnnotationStartupGate on a replica pod that waits for its job's leaders
// holds StartupGateClosed until the controller sets it to StartupGateOpen.
const (
	AnnotationStartupGate = v1beta1.GroupName + "/startup-gate"
	StartupGateClosed     = "Closed"
	StartupGateOpen       = "Open"
)

// The init container that waits, and the volume it reads the gate from.
const (
	StartupGateContainerName = "tensorstack-startup-gate"
	StartupGateVolumeName    = "tensorstack-startup-gate"
	startupGateMountPath     = "/var/run/tensorstack/startup-gate"
	startupGateFile          = "state"
)

// InOrder says whether the job's replicas start in order. Debug pods run a
// command of the user's choosing and do not wait.
func InOrder(spec *v1beta1.TrainingJobSpec) bool {
	return spec.RunPolicy.StartupPolicy == v1beta1.StartupPolicyInOrder && !DebugEnabled(spec)
}

// IsLeader says whether a replica is one that the others wait for.
func IsLeader(a Adapter, t *Topology, id ReplicaID) bool {
	for _, l := range a.Leaders(t) {
		if l == id {
			return true
		}
	}
	return false
}

// addStartupGate puts the waiting init container first in the pod. It runs
// the training container's image, security context and CPU and memory, so
// the pod's requests, its QoS class and what admission allows stay as they
// were.
func addStartupGate(pod *corev1.Pod, training *corev1.Container, open bool) {
	state := StartupGateClosed
	if open {
		state = StartupGateOpen
	}
	pod.Annotations[AnnotationStartupGate] = state
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
		Name: StartupGateVolumeName,
		VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			Items: []corev1.DownwardAPIVolumeFile{{
				Path:     startupGateFile,
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: annotationFieldPath(AnnotationStartupGate)},
			}},
		}},
	})
	file := startupGateMountPath + "/" + startupGateFile
	gate := corev1.Container{
		Name:            StartupGateContainerName,
		Image:           training.Image,
		ImagePullPolicy: training.ImagePullPolicy,
		Command: []string{"sh", "-c", fmt.Sprintf(
			`echo "waiting for the job's leaders to be ready"; until [ "$(cat %s 2>/dev/null)" = %s ]; do sleep 1; done`,
			file, StartupGateOpen)},
		Resources:                computeResources(training.Resources),
		SecurityContext:          training.SecurityContext.DeepCopy(),
		VolumeMounts:             []corev1.VolumeMount{{Name: StartupGateVolumeName, MountPath: startupGateMountPath, ReadOnly: true}},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	pod.Spec.InitContainers = append([]corev1.Container{gate}, pod.Spec.InitContainers...)
}

// computeResources keeps the CPU and memory of a container's resources.
// Extended resources (GPUs) stay with the containers that use them.
func computeResources(in corev1.ResourceRequirements) corev1.ResourceRequirements {
	keep := func(list corev1.ResourceList) corev1.ResourceList {
		var out corev1.ResourceList
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := list[name]; ok {
				if out == nil {
					out = corev1.ResourceList{}
				}
				out[name] = q.DeepCopy()
			}
		}
		return out
	}
	return corev1.ResourceRequirements{Requests: keep(in.Requests), Limits: keep(in.Limits)}
}
