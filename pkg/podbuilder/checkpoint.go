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

// ResumeAnnotations are the pod annotations that name the job's latest
// checkpoint; none before the first.
func ResumeAnnotations(c *v1beta1.CheckpointStatus) map[string]string {
	if c == nil || c.Latest == nil {
		return nil
	}
	a := map[string]string{v1beta1.AnnotationResumeFrom: c.Latest.Path}
	if c.Latest.Step != nil {
		a[v1beta1.AnnotationResumeStep] = strconv.FormatInt(*c.Latest.Step, 10)
	}
	return a
}

// addCheckpointContract gives the training container of a job with a
// checkpoint policy what the contract promises it: the checkpoint
// directory, the last good checkpoint to resume from, and the file through
// which the controller asks for a checkpoint before a stop (a downward API
// projection of the pod's AnnotationCheckpointRequest, which the kubelet
// refreshes when the annotation changes), with the latest checkpoint in
// the same way beside it.
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
	for k, v := range ResumeAnnotations(b.Job.JobStatus().Checkpoint) {
		pod.Annotations[k] = v
	}
	switch from := pod.Annotations[v1beta1.AnnotationResumeFrom]; {
	case b.restartsInPlace():
		// Read from the annotations at each container start, so that a
		// restart in place resumes from the latest checkpoint; empty
		// before the first.
		env = append(env, annotationEnv(v1beta1.EnvResumeFrom, v1beta1.AnnotationResumeFrom),
			annotationEnv(v1beta1.EnvResumeStep, v1beta1.AnnotationResumeStep))
	case from != "":
		env = append(env, envVar(v1beta1.EnvResumeFrom, from))
		if step := pod.Annotations[v1beta1.AnnotationResumeStep]; step != "" {
			env = append(env, envVar(v1beta1.EnvResumeStep, step))
		}
	}
	setEnv(c, env)
	preferCheckpointNode(pod, policy.VolumeName, b.Job.JobStatus().Checkpoint)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
		Name: v1beta1.CheckpointRequestVolume,
		VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			Items: []corev1.DownwardAPIVolumeFile{
				annotationFile(v1beta1.CheckpointRequestFileName, v1beta1.AnnotationCheckpointRequest),
				annotationFile(v1beta1.ResumeFromFileName, v1beta1.AnnotationResumeFrom),
				annotationFile(v1beta1.ResumeStepFileName, v1beta1.AnnotationResumeStep),
			},
		}},
	})
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{
		Name: v1beta1.CheckpointRequestVolume, MountPath: v1beta1.CheckpointRequestDir, ReadOnly: true,
	})
}

// preferCheckpointNode asks the scheduler to put a pod whose checkpoints are
// kept on a node's own disk (a hostPath volume) on the node that wrote the
// latest one: on any other node the checkpoint it is told to resume from is
// not there. A preference rather than a requirement, so that a job whose
// node has gone still runs.
func preferCheckpointNode(pod *corev1.Pod, volume string, c *v1beta1.CheckpointStatus) {
	if c == nil || c.Latest == nil || c.Latest.Node == "" || !onNodeDisk(pod.Spec.Volumes, volume) {
		return
	}
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	a := pod.Spec.Affinity.NodeAffinity
	a.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PreferredDuringSchedulingIgnoredDuringExecution, corev1.PreferredSchedulingTerm{
		Weight: checkpointNodeWeight,
		Preference: corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{
			Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{c.Latest.Node},
		}}},
	})
}

// checkpointNodeWeight is the largest a preference may weigh: the
// checkpoint outweighs every other preference of the pod's template.
const checkpointNodeWeight = 100

// onNodeDisk says whether the named volume is a directory of the node's own
// disk.
func onNodeDisk(volumes []corev1.Volume, name string) bool {
	for _, v := range volumes {
		if v.Name == name {
			return v.HostPath != nil
		}
	}
	return false
}
