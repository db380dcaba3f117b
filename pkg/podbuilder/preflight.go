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
	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// The node checks of a job: its preflight init container, and the nodes
// its next pods avoid (status.suspectNodes).

// EnvNodeName gives the preflight check its node's name.
const EnvNodeName = "TENSORSTACK_NODE_NAME"

// addPreflight puts the job's preflight check first among the pod's init
// containers. It has the training container's image (unless it names its
// own), resources and security context: an init container's requests do not
// add to the pod's, and a GPU check needs the GPUs the training uses.
func addPreflight(pod *corev1.Pod, training *corev1.Container, check *v1beta1.Preflight) {
	image, pull := training.Image, training.ImagePullPolicy
	if check.Image != "" {
		image, pull = check.Image, ""
	}
	preflight := corev1.Container{
		Name:            batch.PreflightContainerName,
		Image:           image,
		ImagePullPolicy: pull,
		Command:         append([]string(nil), check.Command...),
		Env: []corev1.EnvVar{{Name: EnvNodeName, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.nodeName"},
		}}},
		Resources:                *training.Resources.DeepCopy(),
		SecurityContext:          training.SecurityContext.DeepCopy(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	pod.Spec.InitContainers = append([]corev1.Container{preflight}, pod.Spec.InitContainers...)
}

// avoidNodes keeps the pod off the named nodes (KeepOffNodes).
func avoidNodes(pod *corev1.Pod, nodes []string) {
	KeepOffNodes(&pod.Spec, nodes)
}

// KeepOffNodes keeps a pod of spec off the named nodes with a required
// node affinity. Each of the spec's own terms (which are alternatives) gets
// the condition, so every way the pod may be placed leaves the nodes out.
// Kueue's topology-aware placement reads the same affinity from a
// Workload's pod set templates.
func KeepOffNodes(spec *corev1.PodSpec, nodes []string) {
	if len(nodes) == 0 {
		return
	}
	notOn := corev1.NodeSelectorRequirement{
		Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: append([]string(nil), nodes...),
	}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	a := spec.Affinity
	if a.NodeAffinity == nil {
		a.NodeAffinity = &corev1.NodeAffinity{}
	}
	required := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if required == nil || len(required.NodeSelectorTerms) == 0 {
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{notOn}}},
		}
		return
	}
	for i := range required.NodeSelectorTerms {
		term := &required.NodeSelectorTerms[i]
		term.MatchFields = append(term.MatchFields, *notOn.DeepCopy())
	}
}
