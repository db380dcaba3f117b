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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// scriptVolume is the volume of a job's trainer script in its pods.
const scriptVolume = "tensorstack-script"

// ScriptConfigMapName is the name of the ConfigMap that holds a job's
// spec.trainer.script: the job's name and UID, as ClusterConfigMapName.
func ScriptConfigMapName(job metav1.Object) string { return ownedObjectName(job, "script") }

// script is the job's trainer script, or nil.
func (b *Builder) script() *v1beta1.TrainerScript {
	if t := b.Job.CommonSpec().Trainer; t != nil {
		return t.Script
	}
	return nil
}

// ScriptConfigMap is the ConfigMap the job's script is mounted from, owned
// by the job; nil for a job without a script. The script never changes
// once the job exists (spec.trainer is immutable).
func (b *Builder) ScriptConfigMap() *corev1.ConfigMap {
	s := b.script()
	if s == nil {
		return nil
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:            ScriptConfigMapName(b.Job),
			Namespace:       b.Job.GetNamespace(),
			Labels:          b.labels(),
			OwnerReferences: []metav1.OwnerReference{b.controllerRef()},
		},
		Data: map[string]string{s.Name: s.Source},
	}
}

// addScript mounts the job's script read-only at batch.ScriptDir in every
// container, init containers included, and names its path in
// batch.EnvTrainingScript, so that a runtime's launcher (or a command's
// $(TRAINING_SCRIPT)) can run it on any replica.
func (b *Builder) addScript(pod *corev1.Pod) {
	s := b.script()
	if s == nil {
		return
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: scriptVolume, VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: ScriptConfigMapName(b.Job)},
			Items:                []corev1.KeyToPath{{Key: s.Name, Path: s.Name}},
			DefaultMode:          ptr.To(int32(0o555)),
		},
	}})
	mount := corev1.VolumeMount{Name: scriptVolume, MountPath: batch.ScriptDir, ReadOnly: true}
	env := []corev1.EnvVar{envVar(batch.EnvTrainingScript, batch.ScriptPath(s.Name))}
	for _, containers := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range containers {
			containers[i].VolumeMounts = append(containers[i].VolumeMounts, mount)
			setEnv(&containers[i], env)
		}
	}
}
