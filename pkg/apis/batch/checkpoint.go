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

package batch

import (
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The checkpoint contract's rules, which validation, defaulting, the
// checkpoint subresource and the controller all apply.

// DefaultTerminationGracePeriodSeconds is what a pod gets when its
// template sets no terminationGracePeriodSeconds.
const DefaultTerminationGracePeriodSeconds = 30

// TerminationGraceOf is a pod template's termination grace period.
func TerminationGraceOf(spec *corev1.PodSpec) int64 {
	if spec.TerminationGracePeriodSeconds == nil {
		return DefaultTerminationGracePeriodSeconds
	}
	return *spec.TerminationGracePeriodSeconds
}

// DefaultStopGrace is the stop grace of a job that names none: 30 seconds,
// or the shortest termination grace period of its templates when that is
// shorter (but at least 1).
func DefaultStopGrace(templates []*corev1.PodSpec) int32 {
	grace := int64(DefaultStopGraceSeconds)
	for _, t := range templates {
		grace = min(grace, TerminationGraceOf(t))
	}
	return int32(max(grace, 1))
}

// CheckpointMount is the training container's mount of the checkpoint
// volume, or nil when it has none.
func CheckpointMount(c *corev1.Container, volume string) *corev1.VolumeMount {
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].Name == volume {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

// CheckpointPath resolves a reported checkpoint path against the checkpoint
// directory: a relative path lies under dir, an absolute one must. ok is
// false for a path outside dir, or dir itself.
func CheckpointPath(dir, reported string) (string, bool) {
	p := reported
	if !path.IsAbs(p) {
		p = path.Join(dir, p)
	}
	p = path.Clean(p)
	root := path.Clean(dir)
	if root == "/" {
		return p, p != "/"
	}
	return p, strings.HasPrefix(p, root+"/")
}

// CheckpointDir is the job's checkpoint directory: where the training
// container mounts the checkpoint volume (validation makes it one path for
// every replica type). ok is false for a job without a checkpoint policy.
func CheckpointDir(job TrainingJob) (dir string, ok bool) {
	spec := job.CommonSpec()
	if spec.RunPolicy.Checkpoint == nil {
		return "", false
	}
	for i := range spec.ReplicaSpecs {
		pod := &spec.ReplicaSpecs[i].Template.Spec
		if c := TrainingContainer(pod.Containers, job.TrainingContainerName()); c >= 0 {
			if m := CheckpointMount(&pod.Containers[c], spec.RunPolicy.Checkpoint.VolumeName); m != nil {
				return m.MountPath, true
			}
		}
	}
	return "", false
}

// RecordCheckpoint makes a checkpoint the latest, moving the one before it
// into the bounded history.
func RecordCheckpoint(status *CheckpointStatus, record CheckpointRecord) {
	if status.Latest != nil {
		status.History = append(status.History, *status.Latest)
		if over := len(status.History) - MaxCheckpointHistory; over > 0 {
			status.History = append([]CheckpointRecord(nil), status.History[over:]...)
		}
	}
	status.Latest = &record
}
