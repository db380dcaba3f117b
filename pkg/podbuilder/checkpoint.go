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
	"path"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// addCheckpointContract gives the training container of a job with a
// checkpoint policy what the contract promises it: the checkpoint
// directory, the last good checkpoint to resume from, and the file through
// which the controller asks for a checkpoint before a stop (a downward API
// projection of the pod's AnnotationCheckpointRequest, which the kubelet
// refreshes when the annotation changes).
func (b *Builder) addCheckpointContract(pod *corev1.Pod, ci int) {
	policy := b.Job.CommonSpec().RunPolicy.Checkpoint
	if policy == nil {
		return
	}
	c := &pod.Spec.Containers[ci]
	mount := batch.CheckpointMount(c, policy.VolumeName)
	if mount == nil {
		// Validation makes every training container mount it.
		return
	}
	env := []corev1.EnvVar{
		envVar(v1beta1.EnvCheckpointDir, mount.MountPath),
		envVar(v1beta1.EnvCheckpointRequestFile, path.Join(v1beta1.CheckpointRequestDir, v1beta1.CheckpointRequestFileName)),
	}
	if policy.IntervalSeconds != nil {
		env = append(env, envVar(v1beta1.EnvCheckpointInterval, strconv.Itoa(int(*policy.IntervalSeconds))))
	}
	if ckpt := b.Job.JobStatus().Checkpoint; ckpt != nil && ckpt.Latest != nil {
		env = append(env, envVar(v1beta1.EnvResumeFrom, ckpt.Latest.Path))
		if ckpt.Latest.Step != nil {
			env = append(env, envVar(v1beta1.EnvResumeStep, strconv.FormatInt(*ckpt.Latest.Step, 10)))
		}
	}
	setEnv(c, env)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
		Name: v1beta1.CheckpointRequestVolume,
		VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			Items: []corev1.DownwardAPIVolumeFile{{
				Path:     v1beta1.CheckpointRequestFileName,
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + v1beta1.AnnotationCheckpointRequest + "']"},
			}},
		}},
	})
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{
		Name: v1beta1.CheckpointRequestVolume, MountPath: v1beta1.CheckpointRequestDir, ReadOnly: true,
	})
}
