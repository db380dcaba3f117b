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
// +genclient:method=Pause,verb=create,subresource=pause,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.PauseRequest,result=GenericJob
// +genclient:method=Resume,verb=create,subresource=resume,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.ResumeRequest,result=GenericJob
// +genclient:method=Debug,verb=create,subresource=debug,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.DebugRequest,result=GenericJob
// +genclient:method=ReportProgress,verb=create,subresource=progress,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.ProgressReport,result=tensorstack.dev/training/pkg/apis/batch/v1beta1.ProgressReport
// +genclient:method=ReportCheckpoint,verb=create,subresource=checkpoint,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.CheckpointReport,result=tensorstack.dev/training/pkg/apis/batch/v1beta1.CheckpointReport
// +genclient:method=GetProgressHistory,verb=get,subresource=progresshistory,result=tensorstack.dev/training/pkg/apis/batch/v1beta1.ProgressHistory
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GenericJob runs replicas of whatever types the user names, for a framework
// the other kinds do not know: JAX, Paddle, MLX or one of the user's own.
// Every container is told the address of every replica, and the job's
// success and failure rules say which replicas decide how it ended.
type GenericJob struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Spec is the desired behaviour of the job.
	// +optional
	Spec GenericJobSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`

	// Status is what the controller last observed of the job.
	// +optional
	Status TrainingJobStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// GenericJobSpec is the desired behaviour of a GenericJob. Its replica types
// are any DNS labels; the training container of a replica is its first.
type GenericJobSpec struct {
	TrainingJobSpec `json:",inline" protobuf:"bytes,1,opt,name=trainingJobSpec"`

	// SuccessRules say when the job has succeeded: as soon as every replica
	// that one of the rules names has succeeded. Without rules, the job
	// succeeds when every replica has.
	// +optional
	// +listType=atomic
	SuccessRules []ReplicaRule `json:"successRules,omitempty" protobuf:"bytes,2,rep,name=successRules"`

	// FailureRules say when replicas that failed for good (their restart
	// policy does not run them again) fail the job: as soon as every
	// replica that one of the rules names has. A replica whose failure
	// completes no rule is left failed, and the job runs on while one of
	// its success rules can still hold. Without rules, any replica that
	// fails for good fails the job, as in every kind. A failurePolicy rule
	// with the action FailJob fails the job whatever these rules say.
	// +optional
	// +listType=atomic
	FailureRules []ReplicaRule `json:"failureRules,omitempty" protobuf:"bytes,3,rep,name=failureRules"`

	// Elastic, when enabled, lets the job run with between minReplicas and
	// maxReplicas replicas in all, aiming for expectedReplicas, which may
	// change while it runs, directly or through the scale subresource. The
	// controller scales the last replica type. The job re-forms at each new
	// size: every pod is replaced, after a checkpoint when the job asks for
	// one, and told the new addresses and world size. Rules may name the
	// scaled type only whole.
	// +optional
	Elastic *ElasticConfig `json:"elastic,omitempty" protobuf:"bytes,4,opt,name=elastic"`
}

// ReplicaRule names a set of replicas of a job.
type ReplicaRule struct {
	// Replicas are the rule's replicas, by type: some indexes of a type, or
	// every replica of it.
	// +listType=atomic
	Replicas []ReplicaSelector `json:"replicas" protobuf:"bytes,1,rep,name=replicas"`
}

// ReplicaSelector picks replicas of one type.
type ReplicaSelector struct {
	// Type is a replica type of the job.
	Type ReplicaType `json:"type" protobuf:"bytes,1,opt,name=type,casttype=ReplicaType"`

	// Indexes are the replicas of the type, from 0; every replica of the
	// type when empty.
	// +optional
	// +listType=atomic
	Indexes []int32 `json:"indexes,omitempty" protobuf:"varint,2,rep,name=indexes"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GenericJobList is a list of GenericJobs.
type GenericJobList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Items are the jobs in the list.
	Items []GenericJob `json:"items" protobuf:"bytes,2,rep,name=items"`
}

var (
	_ TrainingJob = &GenericJob{}
	_ ElasticJob  = &GenericJob{}
)

func init() { jobKindTypes = append(jobKindTypes, &GenericJob{}, &GenericJobList{}) }

// CommonSpec returns the part of the spec every kind shares.
func (j *GenericJob) CommonSpec() *TrainingJobSpec { return &j.Spec.TrainingJobSpec }

// JobStatus returns the job's status.
func (j *GenericJob) JobStatus() *TrainingJobStatus { return &j.Status }

// ElasticSpec is the job's spec.elastic.
func (j *GenericJob) ElasticSpec() *ElasticConfig { return j.Spec.Elastic }
