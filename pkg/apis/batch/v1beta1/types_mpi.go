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

package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +genclient:method=Pause,verb=create,subresource=pause,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.PauseRequest,result=MPIJob
// +genclient:method=Resume,verb=create,subresource=resume,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.ResumeRequest,result=MPIJob
// +genclient:method=Debug,verb=create,subresource=debug,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.DebugRequest,result=MPIJob
// +genclient:method=ReportProgress,verb=create,subresource=progress,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.ProgressReport,result=tensorstack.dev/training/pkg/apis/batch/v1beta1.ProgressReport
// +genclient:method=ReportCheckpoint,verb=create,subresource=checkpoint,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.CheckpointReport,result=tensorstack.dev/training/pkg/apis/batch/v1beta1.CheckpointReport
// +genclient:method=GetProgressHistory,verb=get,subresource=progresshistory,result=tensorstack.dev/training/pkg/apis/batch/v1beta1.ProgressHistory
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// MPIJob runs an MPI program (Horovod, DeepSpeed's MPI launcher, mpi4py):
// one launcher replica, which runs mpirun, and worker replicas, which run
// an SSH server that mpirun starts the ranks through. The controller gives
// the job an SSH key pair, a hostfile of its workers, and the environment
// the MPI implementation reads; the launcher starts once every worker is
// ready. The job's outcome is the launcher's.
type MPIJob struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Spec is the desired behaviour of the job.
	// +optional
	Spec MPIJobSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`

	// Status is what the controller last observed of the job.
	// +optional
	Status TrainingJobStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// MPIJobSpec is the desired behaviour of an MPIJob. Its replica types are
// launcher (exactly one) and worker (at least one). Unless
// runPolicy.startupPolicy says AnyOrder, the launcher waits until every
// worker is ready (InOrder, the default of this kind).
type MPIJobSpec struct {
	TrainingJobSpec `json:",inline" protobuf:"bytes,1,opt,name=trainingJobSpec"`

	// SlotsPerWorker is the number of MPI processes each worker runs: its
	// slots in the hostfile. Defaults to 1.
	// +optional
	SlotsPerWorker *int32 `json:"slotsPerWorker,omitempty" protobuf:"varint,2,opt,name=slotsPerWorker"`

	// MPIImplementation is the MPI the containers run, which decides the
	// hostfile's form and the variables that point mpirun at it: OpenMPI
	// (the default), IntelMPI or MPICH.
	// +optional
	MPIImplementation MPIImplementation `json:"mpiImplementation,omitempty" protobuf:"bytes,3,opt,name=mpiImplementation,casttype=MPIImplementation"`

	// SSHAuthMountPath is where every container finds the job's SSH key
	// pair (id_rsa, id_rsa.pub, authorized_keys): the home of the user
	// the containers run as, followed by .ssh. Defaults to /root/.ssh.
	// +optional
	SSHAuthMountPath string `json:"sshAuthMountPath,omitempty" protobuf:"bytes,4,opt,name=sshAuthMountPath"`
}

// MPIImplementation names an MPI implementation.
// +enum
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
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Items are the jobs in the list.
	Items []MPIJob `json:"items" protobuf:"bytes,2,rep,name=items"`
}

var _ TrainingJob = &MPIJob{}

func init() { jobKindTypes = append(jobKindTypes, &MPIJob{}, &MPIJobList{}) }

// CommonSpec returns the part of the spec every kind shares.
func (j *MPIJob) CommonSpec() *TrainingJobSpec { return &j.Spec.TrainingJobSpec }

// JobStatus returns the job's status.
func (j *MPIJob) JobStatus() *TrainingJobStatus { return &j.Status }
