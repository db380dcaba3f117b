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

import corev1 "k8s.io/api/core/v1"

// How the controller talks to a pod that runs: through its annotations,
// which the kubelet projects into files (rewritten when they change) and,
// for a container's environment, reads at each container start.

// annotationFieldPath selects one annotation of the pod.
func annotationFieldPath(annotation string) string {
	return "metadata.annotations['" + annotation + "']"
}

// annotationFile projects an annotation into a file; an annotation the pod
// lacks gives an empty file.
func annotationFile(name, annotation string) corev1.DownwardAPIVolumeFile {
	return corev1.DownwardAPIVolumeFile{
		Path:     name,
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: annotationFieldPath(annotation)},
	}
}

// annotationEnv is a variable the kubelet reads from a pod annotation each
// time it starts the container; empty when the pod lacks the annotation.
func annotationEnv(name, annotation string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: annotationFieldPath(annotation)},
	}}
}
