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

// MPIJob runs an MPI program: a launcher that runs mpirun and workers that
// it reaches over SSH.
type MPIJob struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired behaviour of the job.
	Spec MPIJobSpec `json:"spec,omitempty"`

	// Status is what the controller last observed of the job.
	Status TrainingJobStatus `json:"status,omitempty"`
}

// MPIJobSpec is the desired behaviour of an MPIJob.
type MPIJobSpec struct {
	TrainingJobSpec `json:",inline"`

	// SlotsPerWorker is the number of processes each worker runs.
	SlotsPerWorker *int32 `json:"slotsPerWorker,omitempty"`
	// MPIImplementation is OpenMPI, IntelMPI or MPICH.
	MPIImplementation MPIImplementation `json:"mpiImplementation,omitempty"`
	// SSHAuthMountPath is where every container finds the SSH key pair.
	SSHAuthMountPath string `json:"sshAuthMountPath,omitempty"`
}

// MPIImplementation names an MPI implementation.
type MPIImplementation string

// The MPI implementations an MPIJob supports.
const (
	MPIImplementationOpenMPI  MPIImplementation = "OpenMPI"
	MPIImplementationIntelMPI MPIImplementation = "IntelMPI"
	MPIImplementationMPICH    MPIImplementation = "MPICH"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// MPIJobList is a list of MPIJobs.
type MPIJobList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the jobs in the list.
	Items []MPIJob `json:"items"`
}

var _ TrainingJob = &MPIJob{}

func init() {
	jobKindTypes = append(jobKindTypes, &MPIJob{}, &MPIJobList{})
	templateKinds = append(templateKinds, templateKind{
		kind: MPIJobKind, field: "mpi",
		spec: func(t *TrainingJobTemplate) *TrainingJobSpec {
			if t.MPI == nil {
				return nil
			}
			return &t.MPI.TrainingJobSpec
		},
		kindSpec: func(t *TrainingJobTemplate) any { return t.MPI },
		canonicalize: func(t *TrainingJobTemplate) {
			job := MPIJob{Spec: *t.MPI}
			CanonicalizeMPIJob(&job)
			*t.MPI = job.Spec
		},
	})
}

// CommonSpec returns the part of the spec every kind shares.
func (j *MPIJob) CommonSpec() *TrainingJobSpec { return &j.Spec.TrainingJobSpec }

// JobStatus returns the job's status.
func (j *MPIJob) JobStatus() *TrainingJobStatus { return &j.Status }

// TrainingContainerName is empty: an MPI job's training container is each
// replica's first.
func (j *MPIJob) TrainingContainerName() string { return "" }
