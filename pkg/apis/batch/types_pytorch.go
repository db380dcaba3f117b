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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PyTorchTrainingJob runs a distributed PyTorch training program: replicas
// that rendezvous through MASTER_ADDR/MASTER_PORT, or through torchrun.
type PyTorchTrainingJob struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired behaviour of the job.
	Spec PyTorchTrainingJobSpec `json:"spec,omitempty"`

	// Status is what the controller last observed of the job.
	Status TrainingJobStatus `json:"status,omitempty"`
}

// PyTorchTrainingJobSpec is the desired behaviour of a PyTorchTrainingJob.
type PyTorchTrainingJobSpec struct {
	TrainingJobSpec `json:",inline"`

	// TorchrunConfig, when enabled, starts the training container through
	// torchrun, which spawns procPerNode workers on each replica.
	TorchrunConfig *TorchrunConfig `json:"torchrunConfig,omitempty"`

	// Elastic lets the job run with between minReplicas and maxReplicas
	// replicas in all, aiming for expectedReplicas: the one field of a running
	// job that may change, directly or through the scale subresource. The
	// controller scales the last replica type: scaling out adds the next
	// indexes, scaling in removes the highest first, and neither counts as a
	// failure or a restart. With torchrun, the pods run
	// torchrun --nnodes=min:max and re-form their group at each change.
	Elastic *ElasticConfig `json:"elastic,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PyTorchTrainingJobList is a list of PyTorchTrainingJobs.
type PyTorchTrainingJobList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the jobs in the list.
	Items []PyTorchTrainingJob `json:"items"`
}

var (
	_ TrainingJob = &PyTorchTrainingJob{}
	_ ElasticJob  = &PyTorchTrainingJob{}
)

func init() {
	jobKindTypes = append(jobKindTypes, &PyTorchTrainingJob{}, &PyTorchTrainingJobList{})
	templateKinds = append(templateKinds, templateKind{
		kind: PyTorchTrainingJobKind, field: "pytorch",
		spec: func(t *TrainingJobTemplate) *TrainingJobSpec {
			if t.Pytorch == nil {
				return nil
			}
			return &t.Pytorch.TrainingJobSpec
		},
		kindSpec: func(t *TrainingJobTemplate) any { return t.Pytorch },
		canonicalize: func(t *TrainingJobTemplate) {
			job := PyTorchTrainingJob{Spec: *t.Pytorch}
			CanonicalizePyTorchJob(&job)
			*t.Pytorch = job.Spec
		},
	})
}

// CommonSpec returns the part of the spec every kind shares.
func (j *PyTorchTrainingJob) CommonSpec() *TrainingJobSpec { return &j.Spec.TrainingJobSpec }

// JobStatus returns the job's status.
func (j *PyTorchTrainingJob) JobStatus() *TrainingJobStatus { return &j.Status }

// TrainingContainerName is PyTorchContainerName.
func (j *PyTorchTrainingJob) TrainingContainerName() string { return PyTorchContainerName }

// ElasticSpec is the job's spec.elastic.
func (j *PyTorchTrainingJob) ElasticSpec() *ElasticConfig { return j.Spec.Elastic }
