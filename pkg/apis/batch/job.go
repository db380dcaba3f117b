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
	"k8s.io/apimachinery/pkg/runtime"
)

// TrainingJob is the view of a job that code shared by every kind works on:
// the registry, validation and defaults reach the common spec and the status
// through it, and each kind adds only what is its own.
type TrainingJob interface {
	runtime.Object
	metav1.Object
	// CommonSpec returns the part of the spec every kind shares.
	CommonSpec() *TrainingJobSpec
	// JobStatus returns the job's status.
	JobStatus() *TrainingJobStatus
	// TrainingContainerName is the name of the container that runs the
	// training program (TrainingContainer picks the first without one).
	TrainingContainerName() string
}

var (
	_ TrainingJob = &TensorFlowTrainingJob{}
	_ TrainingJob = &PyTorchTrainingJob{}
	_ TrainingJob = &XGBoostTrainingJob{}
	_ TrainingJob = &GenericJob{}
	_ TrainingJob = &MPIJob{}
)

// CommonSpec returns the part of the spec every kind shares.
func (j *TensorFlowTrainingJob) CommonSpec() *TrainingJobSpec { return &j.Spec.TrainingJobSpec }

// JobStatus returns the job's status.
func (j *TensorFlowTrainingJob) JobStatus() *TrainingJobStatus { return &j.Status }

// TrainingContainerName is TensorFlowContainerName.
func (j *TensorFlowTrainingJob) TrainingContainerName() string { return TensorFlowContainerName }

// ElasticJob is a job of a kind that may change its replica count while it
// runs: PyTorch, and GenericJob by opt-in. MPI workers, TensorFlow and
// XGBoost replicas cannot.
type ElasticJob interface {
	TrainingJob
	// ElasticSpec is the job's spec.elastic, nil when it has none; the
	// scale subresource writes its expectedReplicas.
	ElasticSpec() *ElasticConfig
}

var (
	_ ElasticJob = &PyTorchTrainingJob{}
	_ ElasticJob = &GenericJob{}
)

// ElasticSpec is the job's spec.elastic.
func (j *PyTorchTrainingJob) ElasticSpec() *ElasticConfig { return j.Spec.Elastic }

// ElasticSpec is the job's spec.elastic.
func (j *GenericJob) ElasticSpec() *ElasticConfig { return j.Spec.Elastic }

// CommonSpec returns the part of the spec every kind shares.
func (j *PyTorchTrainingJob) CommonSpec() *TrainingJobSpec { return &j.Spec.TrainingJobSpec }

// JobStatus returns the job's status.
func (j *PyTorchTrainingJob) JobStatus() *TrainingJobStatus { return &j.Status }

// TrainingContainerName is PyTorchContainerName.
func (j *PyTorchTrainingJob) TrainingContainerName() string { return PyTorchContainerName }

// IsFinished says whether the phase is final: a Succeeded or Failed job never
// runs again.
func (p JobPhase) IsFinished() bool { return p == JobSucceeded || p == JobFailed }

// CommonSpec returns the part of the spec every kind shares.
func (j *XGBoostTrainingJob) CommonSpec() *TrainingJobSpec { return &j.Spec.TrainingJobSpec }

// JobStatus returns the job's status.
func (j *XGBoostTrainingJob) JobStatus() *TrainingJobStatus { return &j.Status }

// TrainingContainerName is XGBoostContainerName.
func (j *XGBoostTrainingJob) TrainingContainerName() string { return XGBoostContainerName }

// CommonSpec returns the part of the spec every kind shares.
func (j *GenericJob) CommonSpec() *TrainingJobSpec { return &j.Spec.TrainingJobSpec }

// JobStatus returns the job's status.
func (j *GenericJob) JobStatus() *TrainingJobStatus { return &j.Status }

// TrainingContainerName is empty: a generic job's training container is
// each replica's first.
func (j *GenericJob) TrainingContainerName() string { return "" }

// CommonSpec returns the part of the spec every kind shares.
func (j *MPIJob) CommonSpec() *TrainingJobSpec { return &j.Spec.TrainingJobSpec }

// JobStatus returns the job's status.
func (j *MPIJob) JobStatus() *TrainingJobStatus { return &j.Status }

// TrainingContainerName is empty: an MPI job's training container is each
// replica's first.
func (j *MPIJob) TrainingContainerName() string { return "" }
