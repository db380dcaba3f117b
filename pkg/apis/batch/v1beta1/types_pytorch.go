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
// +genclient:method=Pause,verb=create,subresource=pause,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.PauseRequest,result=PyTorchTrainingJob
// +genclient:method=Resume,verb=create,subresource=resume,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.ResumeRequest,result=PyTorchTrainingJob
// +genclient:method=Debug,verb=create,subresource=debug,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.DebugRequest,result=PyTorchTrainingJob
// +genclient:method=ReportProgress,verb=create,subresource=progress,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.ProgressReport,result=tensorstack.dev/training/pkg/apis/batch/v1beta1.ProgressReport
// +genclient:method=ReportCheckpoint,verb=create,subresource=checkpoint,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.CheckpointReport,result=tensorstack.dev/training/pkg/apis/batch/v1beta1.CheckpointReport
// +genclient:method=GetProgressHistory,verb=get,subresource=progresshistory,result=tensorstack.dev/training/pkg/apis/batch/v1beta1.ProgressHistory
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PyTorchTrainingJob runs a distributed PyTorch training program: replicas
// that rendezvous through MASTER_ADDR/MASTER_PORT, or through torchrun.
type PyTorchTrainingJob struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Spec is the desired behaviour of the job.
	// +optional
	Spec PyTorchTrainingJobSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`

	// Status is what the controller last observed of the job.
	// +optional
	Status TrainingJobStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// PyTorchTrainingJobSpec is the desired behaviour of a PyTorchTrainingJob.
type PyTorchTrainingJobSpec struct {
	TrainingJobSpec `json:",inline" protobuf:"bytes,1,opt,name=trainingJobSpec"`

	// TorchrunConfig, when enabled, starts the training container through
	// torchrun, which spawns procPerNode workers on each replica.
	// +optional
	TorchrunConfig *TorchrunConfig `json:"torchrunConfig,omitempty" protobuf:"bytes,2,opt,name=torchrunConfig"`

	// Elastic lets the job run with between minReplicas and maxReplicas
	// replicas in all, aiming for expectedReplicas: the one field of a running
	// job that may change, directly or through the scale subresource. The
	// controller scales the last replica type: scaling out adds the next
	// indexes, scaling in removes the highest first, and neither counts as a
	// failure or a restart. With torchrun, the pods run
	// torchrun --nnodes=min:max and re-form their group at each change.
	// +optional
	Elastic *ElasticConfig `json:"elastic,omitempty" protobuf:"bytes,3,opt,name=elastic"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PyTorchTrainingJobList is a list of PyTorchTrainingJobs.
type PyTorchTrainingJobList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Items are the jobs in the list.
	Items []PyTorchTrainingJob `json:"items" protobuf:"bytes,2,rep,name=items"`
}

var (
	_ TrainingJob = &PyTorchTrainingJob{}
	_ ElasticJob  = &PyTorchTrainingJob{}
)

func init() { jobKindTypes = append(jobKindTypes, &PyTorchTrainingJob{}, &PyTorchTrainingJobList{}) }

// CommonSpec returns the part of the spec every kind shares.
func (j *PyTorchTrainingJob) CommonSpec() *TrainingJobSpec { return &j.Spec.TrainingJobSpec }

// JobStatus returns the job's status.
func (j *PyTorchTrainingJob) JobStatus() *TrainingJobStatus { return &j.Status }

// ElasticSpec is the job's spec.elastic.
func (j *PyTorchTrainingJob) ElasticSpec() *ElasticConfig { return j.Spec.Elastic }
