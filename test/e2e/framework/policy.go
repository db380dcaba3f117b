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

package framework

import "tensorstack.dev/training/pkg/apis/batch/v1beta1"

// FailurePolicy sets the job's failure policy rules.
func (b *JobBuilder) FailurePolicy(rules ...v1beta1.FailurePolicyRule) *JobBuilder {
	b.policy.FailurePolicy = &v1beta1.FailurePolicy{Rules: rules}
	return b
}

// SuccessPolicy sets the job's success policy.
func (b *JobBuilder) SuccessPolicy(p v1beta1.SuccessPolicy) *JobBuilder {
	b.policy.SuccessPolicy = p
	return b
}

// StartupPolicy sets whether every replica's container starts at once
// (AnyOrder) or the others' wait until the job's leaders, such as its
// master, are Ready (InOrder).
func (b *JobBuilder) StartupPolicy(p v1beta1.StartupPolicy) *JobBuilder {
	b.policy.StartupPolicy = p
	return b
}

// ProgressDeadline sets how long the job may run, every replica running,
// without a report that moves its step before it is Stalled
// (progressDeadlineSeconds).
func (b *JobBuilder) ProgressDeadline(seconds int64) *JobBuilder {
	b.policy.ProgressDeadlineSeconds = &seconds
	return b
}

// RestartStrategy sets how a whole-job restart brings the replicas back.
func (b *JobBuilder) RestartStrategy(s v1beta1.RestartStrategy) *JobBuilder {
	b.policy.RestartStrategy = s
	return b
}

// StallPolicy sets what the controller does with a stalled job.
func (b *JobBuilder) StallPolicy(p v1beta1.StallPolicy) *JobBuilder {
	b.policy.StallPolicy = p
	return b
}

// CheckpointVolume names the pod volume the job's checkpoints are on, and
// gives a stopping job stopGraceSeconds to write one first. The volume
// itself comes from ClaimVolume or the like; Checkpoints instead makes an
// emptyDir of its own.
func (b *JobBuilder) CheckpointVolume(volume string, stopGraceSeconds int32) *JobBuilder {
	b.policy.Checkpoint = &v1beta1.CheckpointPolicy{VolumeName: volume, StopGraceSeconds: &stopGraceSeconds}
	return b
}

// Preflight sets the check every replica runs on its node before it trains,
// in its training container's image and without a shell; a check that
// exits non-zero makes the node suspect.
func (b *JobBuilder) Preflight(command ...string) *JobBuilder {
	b.policy.Preflight = &v1beta1.Preflight{Command: command}
	return b
}
