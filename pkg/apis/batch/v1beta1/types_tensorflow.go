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
// +genclient:method=Pause,verb=create,subresource=pause,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.PauseRequest,result=TensorFlowTrainingJob
// +genclient:method=Resume,verb=create,subresource=resume,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.ResumeRequest,result=TensorFlowTrainingJob
// +genclient:method=Debug,verb=create,subresource=debug,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.DebugRequest,result=TensorFlowTrainingJob
// +genclient:method=ReportProgress,verb=create,subresource=progress,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.ProgressReport,result=tensorstack.dev/training/pkg/apis/batch/v1beta1.ProgressReport
// +genclient:method=ReportCheckpoint,verb=create,subresource=checkpoint,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.CheckpointReport,result=tensorstack.dev/training/pkg/apis/batch/v1beta1.CheckpointReport
// +genclient:method=GetProgressHistory,verb=get,subresource=progresshistory,result=tensorstack.dev/training/pkg/apis/batch/v1beta1.ProgressHistory
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TensorFlowTrainingJob runs a distributed TensorFlow training program: a set
// of replicas (chief, parameter servers, workers, evaluator) that find each
// other through TF_CONFIG.
type TensorFlowTrainingJob struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Spec is the desired behaviour of the job.
	// +optional
	Spec TensorFlowTrainingJobSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`

	// Status is what the controller last observed of the job.
	// +optional
	Status TrainingJobStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// TensorFlowTrainingJobSpec is the desired behaviour of a TensorFlowTrainingJob.
type TensorFlowTrainingJobSpec struct {
	TrainingJobSpec `json:",inline" protobuf:"bytes,1,opt,name=trainingJobSpec"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TensorFlowTrainingJobList is a list of TensorFlowTrainingJobs.
type TensorFlowTrainingJobList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Items are the jobs in the list.
	Items []TensorFlowTrainingJob `json:"items" protobuf:"bytes,2,rep,name=items"`
}

var _ TrainingJob = &TensorFlowTrainingJob{}

func init() {
	jobKindTypes = append(jobKindTypes, &TensorFlowTrainingJob{}, &TensorFlowTrainingJobList{})
}

// CommonSpec returns the part of the spec every kind shares.
func (j *TensorFlowTrainingJob) CommonSpec() *TrainingJobSpec { return &j.Spec.TrainingJobSpec }

// JobStatus returns the job's status.
func (j *TensorFlowTrainingJob) JobStatus() *TrainingJobStatus { return &j.Status }
