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

// TensorFlowTrainingJob runs a distributed TensorFlow training program: a set
// of replicas (chief, parameter servers, workers, evaluator) that find each
// other through TF_CONFIG.
type TensorFlowTrainingJob struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired behaviour of the job.
	Spec TensorFlowTrainingJobSpec `json:"spec,omitempty"`

	// Status is what the controller last observed of the job.
	Status TrainingJobStatus `json:"status,omitempty"`
}

// TensorFlowTrainingJobSpec is the desired behaviour of a TensorFlowTrainingJob.
type TensorFlowTrainingJobSpec struct {
	TrainingJobSpec `json:",inline"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TensorFlowTrainingJobList is a list of TensorFlowTrainingJobs.
type TensorFlowTrainingJobList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the jobs in the list.
	Items []TensorFlowTrainingJob `json:"items"`
}

var _ TrainingJob = &TensorFlowTrainingJob{}

func init() {
	jobKindTypes = append(jobKindTypes, &TensorFlowTrainingJob{}, &TensorFlowTrainingJobList{})
	templateKinds = append(templateKinds, templateKind{
		kind: TensorFlowTrainingJobKind, field: "tensorflow",
		spec: func(t *TrainingJobTemplate) *TrainingJobSpec {
			if t.Tensorflow == nil {
				return nil
			}
			return &t.Tensorflow.TrainingJobSpec
		},
		kindSpec: func(t *TrainingJobTemplate) any { return t.Tensorflow },
		canonicalize: func(t *TrainingJobTemplate) {
			job := TensorFlowTrainingJob{Spec: *t.Tensorflow}
			CanonicalizeTensorFlowJob(&job)
			*t.Tensorflow = job.Spec
		},
	})
}

// CommonSpec returns the part of the spec every kind shares.
func (j *TensorFlowTrainingJob) CommonSpec() *TrainingJobSpec { return &j.Spec.TrainingJobSpec }

// JobStatus returns the job's status.
func (j *TensorFlowTrainingJob) JobStatus() *TrainingJobStatus { return &j.Status }

// TrainingContainerName is TensorFlowContainerName.
func (j *TensorFlowTrainingJob) TrainingContainerName() string { return TensorFlowContainerName }
