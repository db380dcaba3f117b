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

// XGBoostTrainingJob runs distributed XGBoost: a master, which hosts the
// tracker, and workers, which meet through it.
type XGBoostTrainingJob struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired behaviour of the job.
	Spec XGBoostTrainingJobSpec `json:"spec,omitempty"`

	// Status is what the controller last observed of the job.
	Status TrainingJobStatus `json:"status,omitempty"`
}

// XGBoostTrainingJobSpec is the desired behaviour of an XGBoostTrainingJob.
type XGBoostTrainingJobSpec struct {
	TrainingJobSpec `json:",inline"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// XGBoostTrainingJobList is a list of XGBoostTrainingJobs.
type XGBoostTrainingJobList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the jobs in the list.
	Items []XGBoostTrainingJob `json:"items"`
}

var _ TrainingJob = &XGBoostTrainingJob{}

func init() {
	jobKindTypes = append(jobKindTypes, &XGBoostTrainingJob{}, &XGBoostTrainingJobList{})
	templateKinds = append(templateKinds, templateKind{
		kind: XGBoostTrainingJobKind, field: "xgboost",
		spec: func(t *TrainingJobTemplate) *TrainingJobSpec {
			if t.Xgboost == nil {
				return nil
			}
			return &t.Xgboost.TrainingJobSpec
		},
		kindSpec: func(t *TrainingJobTemplate) any { return t.Xgboost },
		canonicalize: func(t *TrainingJobTemplate) {
			job := XGBoostTrainingJob{Spec: *t.Xgboost}
			CanonicalizeXGBoostJob(&job)
			*t.Xgboost = job.Spec
		},
	})
}

// CommonSpec returns the part of the spec every kind shares.
func (j *XGBoostTrainingJob) CommonSpec() *TrainingJobSpec { return &j.Spec.TrainingJobSpec }

// JobStatus returns the job's status.
func (j *XGBoostTrainingJob) JobStatus() *TrainingJobStatus { return &j.Status }

// TrainingContainerName is XGBoostContainerName.
func (j *XGBoostTrainingJob) TrainingContainerName() string { return XGBoostContainerName }
