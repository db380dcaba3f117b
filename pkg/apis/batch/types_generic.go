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

// GenericJob runs replicas of whatever types the user names; every
// container is told the address of every replica.
type GenericJob struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired behaviour of the job.
	Spec GenericJobSpec `json:"spec,omitempty"`

	// Status is what the controller last observed of the job.
	Status TrainingJobStatus `json:"status,omitempty"`
}

// GenericJobSpec is the desired behaviour of a GenericJob.
type GenericJobSpec struct {
	TrainingJobSpec `json:",inline"`

	// SuccessRules say when the job has succeeded: when every replica one
	// of them names has succeeded; without rules, when every replica has.
	SuccessRules []ReplicaRule `json:"successRules,omitempty"`

	// FailureRules say when replicas that failed for good fail the job:
	// when every replica one of them names has; without rules, when any
	// replica has. A failure that completes no rule is tolerated while a
	// success rule can still hold.
	FailureRules []ReplicaRule `json:"failureRules,omitempty"`

	// Elastic, when enabled, lets the job change its replica count while it
	// runs: the last replica type scales, and the job re-forms at each new
	// size (every pod is replaced, after a checkpoint).
	Elastic *ElasticConfig `json:"elastic,omitempty"`
}

// ReplicaRule names a set of replicas of a job.
type ReplicaRule struct {
	// Replicas are the rule's replicas, by type.
	Replicas []ReplicaSelector `json:"replicas"`
}

// ReplicaSelector picks replicas of one type: the listed indexes, or every
// replica of the type.
type ReplicaSelector struct {
	Type    ReplicaType `json:"type"`
	Indexes []int32     `json:"indexes,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GenericJobList is a list of GenericJobs.
type GenericJobList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the jobs in the list.
	Items []GenericJob `json:"items"`
}

var (
	_ TrainingJob = &GenericJob{}
	_ ElasticJob  = &GenericJob{}
)

func init() {
	jobKindTypes = append(jobKindTypes, &GenericJob{}, &GenericJobList{})
	templateKinds = append(templateKinds, templateKind{
		kind: GenericJobKind, field: "generic",
		spec: func(t *TrainingJobTemplate) *TrainingJobSpec {
			if t.Generic == nil {
				return nil
			}
			return &t.Generic.TrainingJobSpec
		},
		kindSpec: func(t *TrainingJobTemplate) any { return t.Generic },
		canonicalize: func(t *TrainingJobTemplate) {
			job := GenericJob{Spec: *t.Generic}
			CanonicalizeGenericJob(&job)
			*t.Generic = job.Spec
		},
	})
}

// CommonSpec returns the part of the spec every kind shares.
func (j *GenericJob) CommonSpec() *TrainingJobSpec { return &j.Spec.TrainingJobSpec }

// JobStatus returns the job's status.
func (j *GenericJob) JobStatus() *TrainingJobStatus { return &j.Status }

// TrainingContainerName is empty: a generic job's training container is
// each replica's first.
func (j *GenericJob) TrainingContainerName() string { return "" }

// ElasticSpec is the job's spec.elastic.
func (j *GenericJob) ElasticSpec() *ElasticConfig { return j.Spec.Elastic }
