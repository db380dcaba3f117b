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
// +genclient:method=Pause,verb=create,subresource=pause,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.PauseRequest,result=XGBoostTrainingJob
// +genclient:method=Resume,verb=create,subresource=resume,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.ResumeRequest,result=XGBoostTrainingJob
// +genclient:method=Debug,verb=create,subresource=debug,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.DebugRequest,result=XGBoostTrainingJob
// +genclient:method=ReportProgress,verb=create,subresource=progress,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.ProgressReport,result=tensorstack.dev/training/pkg/apis/batch/v1beta1.ProgressReport
// +genclient:method=ReportCheckpoint,verb=create,subresource=checkpoint,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.CheckpointReport,result=tensorstack.dev/training/pkg/apis/batch/v1beta1.CheckpointReport
// +genclient:method=GetProgressHistory,verb=get,subresource=progresshistory,result=tensorstack.dev/training/pkg/apis/batch/v1beta1.ProgressHistory
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// XGBoostTrainingJob runs distributed XGBoost: a master replica, which hosts
// the tracker (the coordinator of XGBoost's collective), and worker replicas.
// Every replica is told the tracker's address, the number of workers and its
// own rank, in the variables XGBoost's collective and Kubeflow's XGBoostJob
// use.
type XGBoostTrainingJob struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Spec is the desired behaviour of the job.
	// +optional
	Spec XGBoostTrainingJobSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`

	// Status is what the controller last observed of the job.
	// +optional
	Status TrainingJobStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// XGBoostTrainingJobSpec is the desired behaviour of an XGBoostTrainingJob.
// Its replica types are master (exactly one) and worker.
type XGBoostTrainingJobSpec struct {
	TrainingJobSpec `json:",inline" protobuf:"bytes,1,opt,name=trainingJobSpec"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// XGBoostTrainingJobList is a list of XGBoostTrainingJobs.
type XGBoostTrainingJobList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Items are the jobs in the list.
	Items []XGBoostTrainingJob `json:"items" protobuf:"bytes,2,rep,name=items"`
}

var _ TrainingJob = &XGBoostTrainingJob{}

func init() { jobKindTypes = append(jobKindTypes, &XGBoostTrainingJob{}, &XGBoostTrainingJobList{}) }

// CommonSpec returns the part of the spec every kind shares.
func (j *XGBoostTrainingJob) CommonSpec() *TrainingJobSpec { return &j.Spec.TrainingJobSpec }

// JobStatus returns the job's status.
func (j *XGBoostTrainingJob) JobStatus() *TrainingJobStatus { return &j.Status }
