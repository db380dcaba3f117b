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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// +genclient
// +genclient:method=Pause,verb=create,subresource=pause,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.PauseRequest,result=TensorFlowTrainingJob
// +genclient:method=Resume,verb=create,subresource=resume,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.ResumeRequest,result=TensorFlowTrainingJob
// +genclient:method=Debug,verb=create,subresource=debug,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.DebugRequest,result=TensorFlowTrainingJob
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

// +genclient
// +genclient:method=Pause,verb=create,subresource=pause,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.PauseRequest,result=PyTorchTrainingJob
// +genclient:method=Resume,verb=create,subresource=resume,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.ResumeRequest,result=PyTorchTrainingJob
// +genclient:method=Debug,verb=create,subresource=debug,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.DebugRequest,result=PyTorchTrainingJob
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

	// Elastic declares the range of replicas an elastic job may run with.
	// It is validated and stored; scaling within the range is not yet done.
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

// TrainingJobSpec is the part of the spec every training job kind shares.
type TrainingJobSpec struct {
	// ReplicaSpecs lists the groups of replicas, one per type. The order
	// matters: ranks and the default master follow it. A job lists at most
	// 32 types, and its replicas, summed over all types, are at most 1000:
	// the status reports every replica and must stay well under etcd's
	// request size limit.
	// +listType=map
	// +listMapKey=type
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +required
	ReplicaSpecs []ReplicaSpec `json:"replicaSpecs" patchStrategy:"merge" patchMergeKey:"type" protobuf:"bytes,1,rep,name=replicaSpecs"`

	// RunMode switches the job into debug or pause mode. Absent, the job runs
	// immediately.
	// +optional
	RunMode *RunMode `json:"runMode,omitempty" protobuf:"bytes,2,opt,name=runMode"`

	// RunPolicy bounds how long and how often the job may run, and what is
	// kept when it finishes.
	// +optional
	RunPolicy RunPolicy `json:"runPolicy,omitempty" protobuf:"bytes,3,opt,name=runPolicy"`

	// Scheduler selects the scheduler that places the replicas. Absent, the
	// cluster's default scheduler is used.
	// +optional
	Scheduler *SchedulePolicy `json:"scheduler,omitempty" protobuf:"bytes,4,opt,name=scheduler"`

	// TensorboardSpec asks for a TensorBoard that shows the job's training logs.
	// +optional
	TensorboardSpec *TensorBoardSpec `json:"tensorboardSpec,omitempty" protobuf:"bytes,5,opt,name=tensorboardSpec"`
}

// ReplicaType names a group of replicas within a job.
type ReplicaType string

// Replica types of TensorFlow jobs. PyTorch jobs accept any DNS-1123 label;
// ReplicaTypeMaster and ReplicaTypeWorker are the common ones.
const (
	ReplicaTypeChief     ReplicaType = "chief"
	ReplicaTypeWorker    ReplicaType = "worker"
	ReplicaTypePS        ReplicaType = "ps"
	ReplicaTypeEvaluator ReplicaType = "evaluator"
	ReplicaTypeMaster    ReplicaType = "master"
	ReplicaTypeNode      ReplicaType = "node"
)

// RestartPolicy says when a replica's failed pod is replaced.
// +enum
type RestartPolicy string

const (
	// RestartPolicyNever never replaces a failed pod: the job fails.
	RestartPolicyNever RestartPolicy = "Never"
	// RestartPolicyOnFailure replaces a pod that failed.
	RestartPolicyOnFailure RestartPolicy = "OnFailure"
	// RestartPolicyAlways replaces a pod whenever it terminates, successfully or not.
	RestartPolicyAlways RestartPolicy = "Always"
	// RestartPolicyExitCode replaces a failed pod only when its exit code is
	// retryable (130, 137, 138, 143); any other non-zero code fails the job.
	RestartPolicyExitCode RestartPolicy = "ExitCode"
)

// ReplicaSpec describes one group of identical replicas.
type ReplicaSpec struct {
	// Type names the group. TensorFlow: chief, worker, ps or evaluator.
	// PyTorch: any DNS-1123 label, e.g. master, worker or node.
	// +required
	Type ReplicaType `json:"type" protobuf:"bytes,1,opt,name=type,casttype=ReplicaType"`

	// Replicas is how many pods this group runs. Defaults to 1. The replicas
	// of all types together are at most 1000.
	// +optional
	Replicas *int32 `json:"replicas,omitempty" protobuf:"varint,2,opt,name=replicas"`

	// Template is the pod each replica runs. Its restartPolicy is ignored:
	// pods are created with Never and replaced by the controller.
	// +required
	Template corev1.PodTemplateSpec `json:"template" protobuf:"bytes,3,opt,name=template"`

	// RestartPolicy says when a failed pod of this group is replaced: Never
	// (the default), OnFailure, Always or ExitCode.
	// +optional
	RestartPolicy RestartPolicy `json:"restartPolicy,omitempty" protobuf:"bytes,4,opt,name=restartPolicy,casttype=RestartPolicy"`
}

// CleanUpPolicy says which pods are deleted once the job has finished.
// +enum
type CleanUpPolicy string

const (
	// CleanUpPolicyAll deletes every pod of a finished job.
	CleanUpPolicyAll CleanUpPolicy = "All"
	// CleanUpPolicyUnfinished deletes the pods that have not terminated.
	CleanUpPolicyUnfinished CleanUpPolicy = "Unfinished"
	// CleanUpPolicyNone keeps every pod.
	CleanUpPolicyNone CleanUpPolicy = "None"
)

// RunPolicy bounds a job's running time and retries and says what happens
// once it finished.
type RunPolicy struct {
	// ActiveDeadlineSeconds is how long the job may run, counted from
	// status.startTime, before it fails with reason DeadlineExceeded.
	// Resuming a paused job starts the count again. At most 315360000 (ten
	// years); leave it unset for no deadline.
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty" protobuf:"varint,1,opt,name=activeDeadlineSeconds"`

	// BackoffLimit is how many pod replacements the whole job may need
	// (all replicas together) before it fails. Defaults to 3. At most 1000000.
	// +optional
	BackoffLimit *int32 `json:"backoffLimit,omitempty" protobuf:"varint,2,opt,name=backoffLimit"`

	// CleanUpPolicy says which pods are deleted when the job finishes: All,
	// Unfinished (the default) or None. The lower-case spellings are accepted.
	// +optional
	CleanUpPolicy CleanUpPolicy `json:"cleanUpPolicy,omitempty" protobuf:"bytes,3,opt,name=cleanUpPolicy,casttype=CleanUpPolicy"`

	// TTLSecondsAfterFinished, when set, deletes the job itself that many
	// seconds after it finished. At most 315360000 (ten years); leave it
	// unset to keep the job.
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty" protobuf:"varint,4,opt,name=ttlSecondsAfterFinished"`

	// FailurePolicy adds rules, tried in order before the replicas' restart
	// policies, that decide what a failed pod does to the job.
	// +optional
	FailurePolicy *FailurePolicy `json:"failurePolicy,omitempty" protobuf:"bytes,5,opt,name=failurePolicy"`

	// SuccessPolicy says which replicas decide that the job succeeded:
	// Default (the kind's own rule), AllWorkers or AnyWorker. Unset means
	// Default. AllWorkers and AnyWorker need a replica type named worker.
	// +optional
	SuccessPolicy SuccessPolicy `json:"successPolicy,omitempty" protobuf:"bytes,6,opt,name=successPolicy,casttype=SuccessPolicy"`

	// StartTimeoutSeconds, when set, is how long a replica's pod may stay
	// unstarted (unscheduled, waiting for its gang, pulling its image,
	// missing a Secret, running init containers), counted from the pod's
	// creation, before the job fails. The Failed condition's reason is the
	// one the pod gives (Unschedulable, ErrImagePull, ImagePullBackOff,
	// ErrImageNeverPull, CreateContainerConfigError, FailedMount, ...), or
	// StartTimeoutExceeded when it gives none. A queued job waiting for
	// admission has no pods, so that wait does not count. At most 315360000
	// (ten years); leave it unset to wait for as long as it takes.
	// +optional
	StartTimeoutSeconds *int64 `json:"startTimeoutSeconds,omitempty" protobuf:"varint,7,opt,name=startTimeoutSeconds"`

	// StartupPolicy says in which order the replicas start. AnyOrder (also
	// when unset) starts every replica at once, the fastest. InOrder holds
	// the containers of every other replica, behind an init container, until
	// the job's leaders are Ready: the master (PyTorch; index 0 of the first
	// type when no type is named master), or the chief and every ps
	// (TensorFlow, which needs one of them). The pods are created, and
	// gang-placed, together; only their containers wait. The init container
	// runs the training container's image and needs a POSIX shell in it.
	// +optional
	StartupPolicy StartupPolicy `json:"startupPolicy,omitempty" protobuf:"bytes,8,opt,name=startupPolicy,casttype=StartupPolicy"`
}

// FailurePolicy holds the rules that decide what a failed pod does to the
// job. The first rule that matches decides; when none does, the replica's
// restartPolicy does, as it does without a failure policy.
type FailurePolicy struct {
	// Rules are tried in order; the first that matches a failed pod decides.
	// At most 20.
	// +listType=atomic
	// +optional
	Rules []FailurePolicyRule `json:"rules,omitempty" protobuf:"bytes,1,rep,name=rules"`
}

// FailurePolicyAction is what a matching rule does.
// +enum
type FailurePolicyAction string

const (
	// FailurePolicyActionRestartReplica replaces the failed pod and counts
	// the replacement against backoffLimit.
	FailurePolicyActionRestartReplica FailurePolicyAction = "RestartReplica"
	// FailurePolicyActionRestartJob deletes every pod of the job and creates
	// them all again, counted once against backoffLimit.
	FailurePolicyActionRestartJob FailurePolicyAction = "RestartJob"
	// FailurePolicyActionFailJob fails the job at once.
	FailurePolicyActionFailJob FailurePolicyAction = "FailJob"
	// FailurePolicyActionIgnore replaces the failed pod without counting it
	// against backoffLimit.
	FailurePolicyActionIgnore FailurePolicyAction = "Ignore"
)

// FailurePolicyRule matches a failed pod when every part it sets matches.
// A rule with no part set matches every failed pod.
type FailurePolicyRule struct {
	// Action is what the job does when the rule matches: RestartReplica,
	// RestartJob, FailJob or Ignore.
	Action FailurePolicyAction `json:"action" protobuf:"bytes,1,opt,name=action,casttype=FailurePolicyAction"`

	// ReplicaTypes limits the rule to pods of these replica types, each a
	// type listed in replicaSpecs; empty, the rule applies to every type.
	// +listType=set
	// +optional
	ReplicaTypes []ReplicaType `json:"replicaTypes,omitempty" protobuf:"bytes,2,rep,name=replicaTypes,casttype=ReplicaType"`

	// OnExitCodes matches on the exit codes of the pod's terminated
	// containers.
	// +optional
	OnExitCodes *FailurePolicyOnExitCodes `json:"onExitCodes,omitempty" protobuf:"bytes,3,opt,name=onExitCodes"`

	// OnPodConditions matches when the pod has any of these conditions, for
	// example DisruptionTarget for pods lost to eviction or preemption. At
	// most 20.
	// +listType=atomic
	// +optional
	OnPodConditions []FailurePolicyOnPodCondition `json:"onPodConditions,omitempty" protobuf:"bytes,4,rep,name=onPodConditions"`

	// OnReasons matches when a container of the pod terminated with one of
	// these reasons (OOMKilled, Error, ContainerCannotRun, ...), or the pod
	// itself failed with one (Evicted, DeadlineExceeded, ...). At most 20,
	// each at most 128 characters.
	// +listType=set
	// +optional
	OnReasons []string `json:"onReasons,omitempty" protobuf:"bytes,5,rep,name=onReasons"`
}

// FailurePolicyOnExitCodesOperator says how exit codes are compared with the
// rule's values.
// +enum
type FailurePolicyOnExitCodesOperator string

const (
	// FailurePolicyOnExitCodesOpIn matches when a container exited with a
	// code in values.
	FailurePolicyOnExitCodesOpIn FailurePolicyOnExitCodesOperator = "In"
	// FailurePolicyOnExitCodesOpNotIn matches when a container exited with a
	// non-zero code not in values.
	FailurePolicyOnExitCodesOpNotIn FailurePolicyOnExitCodesOperator = "NotIn"
)

// FailurePolicyOnExitCodes matches a failed pod by its containers' exit
// codes. Containers that exited 0 are never compared.
type FailurePolicyOnExitCodes struct {
	// ContainerName limits the comparison to one container or init
	// container, which the pod template of at least one of the rule's
	// replica types (of any type, when the rule names none) must have;
	// unset compares every container of the pod.
	// +optional
	ContainerName *string `json:"containerName,omitempty" protobuf:"bytes,1,opt,name=containerName"`

	// Operator is In or NotIn.
	Operator FailurePolicyOnExitCodesOperator `json:"operator" protobuf:"bytes,2,opt,name=operator,casttype=FailurePolicyOnExitCodesOperator"`

	// Values are the exit codes compared: at least one and at most 255,
	// without duplicates; 0 is not allowed with In.
	// +listType=set
	Values []int32 `json:"values" protobuf:"varint,3,rep,name=values"`
}

// FailurePolicyOnPodCondition matches a pod condition by type and status.
type FailurePolicyOnPodCondition struct {
	// Type is the pod condition type, for example DisruptionTarget.
	Type corev1.PodConditionType `json:"type" protobuf:"bytes,1,opt,name=type,casttype=k8s.io/api/core/v1.PodConditionType"`

	// Status is the status the condition must have; defaults to True.
	// +optional
	Status corev1.ConditionStatus `json:"status,omitempty" protobuf:"bytes,2,opt,name=status,casttype=k8s.io/api/core/v1.ConditionStatus"`
}

// StartupPolicy says in which order a job's replicas start.
// +enum
type StartupPolicy string

const (
	// StartupPolicyAnyOrder starts every replica at once.
	StartupPolicyAnyOrder StartupPolicy = "AnyOrder"
	// StartupPolicyInOrder holds the containers of every other replica
	// until the leaders are Ready.
	StartupPolicyInOrder StartupPolicy = "InOrder"
)

// SuccessPolicy says which replicas decide that a job succeeded.
// +enum
type SuccessPolicy string

const (
	// SuccessPolicyDefault applies the kind's own rule: a TensorFlow job
	// succeeds with its chief (else worker 0), a PyTorch job with its master
	// (else with every pod).
	SuccessPolicyDefault SuccessPolicy = "Default"
	// SuccessPolicyAllWorkers waits for every worker replica to succeed,
	// for jobs whose chief or master exits before the workers are done.
	SuccessPolicyAllWorkers SuccessPolicy = "AllWorkers"
	// SuccessPolicyAnyWorker succeeds as soon as one worker replica has.
	SuccessPolicyAnyWorker SuccessPolicy = "AnyWorker"
)

// RunMode holds the optional modes a job can be switched into.
type RunMode struct {
	// Debug starts every replica with its training command replaced, so that
	// users can enter the prepared environment.
	// +optional
	Debug *DebugMode `json:"debug,omitempty" protobuf:"bytes,1,opt,name=debug"`

	// Pause removes the job's pods while keeping the job and its Service.
	// +optional
	Pause *PauseMode `json:"pause,omitempty" protobuf:"bytes,2,opt,name=pause"`
}

// DebugMode starts replicas with a debug command instead of training.
type DebugMode struct {
	// Enabled switches debug mode on.
	// +optional
	Enabled bool `json:"enabled,omitempty" protobuf:"varint,1,opt,name=enabled"`

	// Enable is a deprecated spelling of enabled, accepted from older
	// manifests. When given it decides, true or false, over enabled; the
	// server folds it into enabled and never returns it.
	// +optional
	Enable *bool `json:"enable,omitempty" protobuf:"varint,2,opt,name=enable"`

	// ReplicaSpecs says how each replica type is started in debug mode; types
	// not listed use the defaults.
	// +listType=map
	// +listMapKey=type
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +optional
	ReplicaSpecs []ReplicaDebugSpec `json:"replicaSpecs,omitempty" patchStrategy:"merge" patchMergeKey:"type" protobuf:"bytes,3,rep,name=replicaSpecs"`
}

// ReplicaDebugSpec says how one replica type starts in debug mode.
type ReplicaDebugSpec struct {
	// Type is the replica type this applies to.
	// +required
	Type ReplicaType `json:"type" protobuf:"bytes,1,opt,name=type,casttype=ReplicaType"`

	// SkipInitContainer drops the pod template's init containers.
	// +optional
	SkipInitContainer bool `json:"skipInitContainer,omitempty" protobuf:"varint,2,opt,name=skipInitContainer"`

	// Command replaces the training container's command. Defaults to
	// ["sleep", "inf"]. At most 32768 bytes, each entry counting its length
	// plus one.
	// +listType=atomic
	// +optional
	Command []string `json:"command,omitempty" protobuf:"bytes,3,rep,name=command"`
}

// PauseMode removes a job's pods until it is resumed.
type PauseMode struct {
	// Enabled switches pause mode on.
	// +optional
	Enabled bool `json:"enabled,omitempty" protobuf:"varint,1,opt,name=enabled"`

	// Enable is a deprecated spelling of enabled, accepted from older
	// manifests. When given it decides, true or false, over enabled; the
	// server folds it into enabled and never returns it.
	// +optional
	Enable *bool `json:"enable,omitempty" protobuf:"varint,2,opt,name=enable"`

	// ResumeSpecs says how each replica type is started again on resume;
	// types not listed restart from their template. Fixed once the job exists.
	// +listType=map
	// +listMapKey=type
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +optional
	ResumeSpecs []ResumeSpec `json:"resumeSpecs,omitempty" patchStrategy:"merge" patchMergeKey:"type" protobuf:"bytes,3,rep,name=resumeSpecs"`
}

// ResumeSpec says how one replica type starts again after a pause.
type ResumeSpec struct {
	// Type is the replica type this applies to.
	// +required
	Type ReplicaType `json:"type" protobuf:"bytes,1,opt,name=type,casttype=ReplicaType"`

	// SkipInitContainer drops the pod template's init containers.
	// +optional
	SkipInitContainer bool `json:"skipInitContainer,omitempty" protobuf:"varint,2,opt,name=skipInitContainer"`

	// Command replaces the training container's command. At most 32768
	// bytes, each entry counting its length plus one.
	// +listType=atomic
	// +optional
	Command []string `json:"command,omitempty" protobuf:"bytes,3,rep,name=command"`

	// Args replaces the training container's arguments. At most 32768 bytes,
	// each entry counting its length plus one.
	// +listType=atomic
	// +optional
	Args []string `json:"args,omitempty" protobuf:"bytes,4,rep,name=args"`
}

// SchedulePolicy selects the scheduler of a job's replicas.
type SchedulePolicy struct {
	// T9kScheduler places the replicas as one group in a T9k scheduler queue.
	// +optional
	T9kScheduler *T9kScheduler `json:"t9kScheduler,omitempty" protobuf:"bytes,1,opt,name=t9kScheduler"`
}

// T9kScheduler is the placement of a job by the T9k scheduler.
type T9kScheduler struct {
	// Queue is the scheduler queue the job is placed in.
	// +required
	Queue string `json:"queue" protobuf:"bytes,1,opt,name=queue"`

	// Priority orders jobs within the queue, from 0 (the default) to 100.
	// +optional
	Priority int32 `json:"priority,omitempty" protobuf:"varint,2,opt,name=priority"`

	// The protobuf tags here are written by hand, a new field's too:
	// go-to-protobuf does not recognize this type in protoc-gen-gogo's
	// output, which names it T9KScheduler (see hack/update-codegen.sh).
}

// TensorBoardSpec describes the TensorBoard run for a job.
type TensorBoardSpec struct {
	// Image is the TensorBoard container image.
	// +required
	Image string `json:"image" protobuf:"bytes,1,opt,name=image"`

	// TrainingLogFilesets are the log directories to show, each written
	// t9k://pvc/<pvc-name>/<path>.
	// +listType=atomic
	// +required
	TrainingLogFilesets []string `json:"trainingLogFilesets" protobuf:"bytes,2,rep,name=trainingLogFilesets"`

	// Resources are the compute resources of the TensorBoard container.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty" protobuf:"bytes,3,opt,name=resources"`
}

// RendezvousBackend is the torchrun rendezvous implementation.
// +enum
type RendezvousBackend string

const (
	RendezvousBackendC10d   RendezvousBackend = "c10d"
	RendezvousBackendEtcd   RendezvousBackend = "etcd"
	RendezvousBackendEtcdV2 RendezvousBackend = "etcd-v2"
)

// TorchrunConfig starts the training container through torchrun.
type TorchrunConfig struct {
	// Enabled starts the training container as `torchrun <options> <args>`.
	// +optional
	Enabled bool `json:"enabled,omitempty" protobuf:"varint,1,opt,name=enabled"`

	// MaxRestarts is how often torchrun restarts the workers before failing.
	// Defaults to 0. At most 1000000.
	// +optional
	MaxRestarts *int32 `json:"maxRestarts,omitempty" protobuf:"varint,2,opt,name=maxRestarts"`

	// ProcPerNode is the number of worker processes per replica: a positive
	// integer, or "gpu" for one per GPU. Defaults to "1".
	// +optional
	ProcPerNode string `json:"procPerNode,omitempty" protobuf:"bytes,3,opt,name=procPerNode"`

	// RdzvBackend is the rendezvous backend: c10d (the default), etcd or etcd-v2.
	// +optional
	RdzvBackend RendezvousBackend `json:"rdzvBackend,omitempty" protobuf:"bytes,4,opt,name=rdzvBackend,casttype=RendezvousBackend"`

	// ExtraOptions are passed to torchrun before the training arguments. At
	// most 32768 bytes, each entry counting its length plus one.
	// +listType=atomic
	// +optional
	ExtraOptions []string `json:"extraOptions,omitempty" protobuf:"bytes,5,rep,name=extraOptions"`
}

// ElasticConfig is the range of replicas an elastic PyTorch job may run with.
type ElasticConfig struct {
	// Enabled marks the job as elastic.
	// +optional
	Enabled bool `json:"enabled,omitempty" protobuf:"varint,1,opt,name=enabled"`

	// MinReplicas is the fewest replicas the job runs with, at most 1000.
	// Immutable.
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty" protobuf:"varint,2,opt,name=minReplicas"`

	// MaxReplicas is the most replicas the job runs with, at most 1000.
	// Immutable.
	// +optional
	MaxReplicas *int32 `json:"maxReplicas,omitempty" protobuf:"varint,3,opt,name=maxReplicas"`

	// ExpectedReplicas is the number of replicas to aim for, between
	// minReplicas and maxReplicas, at most 1000.
	// +optional
	ExpectedReplicas *int32 `json:"expectedReplicas,omitempty" protobuf:"varint,4,opt,name=expectedReplicas"`
}

// JobPhase is the coarse state of a job.
// +enum
type JobPhase string

const (
	JobPending   JobPhase = "Pending"
	JobRunning   JobPhase = "Running"
	JobPaused    JobPhase = "Paused"
	JobResuming  JobPhase = "Resuming"
	JobSucceeded JobPhase = "Succeeded"
	JobFailed    JobPhase = "Failed"
	JobUnknown   JobPhase = "Unknown"
)

// Condition types of a job.
const (
	ConditionInitialized    = "Initialized"
	ConditionRunning        = "Running"
	ConditionReplicaFailure = "ReplicaFailure"
	ConditionPaused         = "Paused"
	ConditionCompleted      = "Completed"
	ConditionFailed         = "Failed"
	// ConditionGangScheduled, on a job with spec.scheduler.t9kScheduler,
	// says whether its whole gang of pods is placed; False with reason
	// ReasonWaitingForGang while they wait for room for all of them.
	ConditionGangScheduled = "GangScheduled"
)

// ReasonWaitingForGang is the reason of a False GangScheduled condition
// while the job's pods wait for room for the whole gang; kubectl get shows
// it after a Pending or Resuming phase.
const ReasonWaitingForGang = "WaitingForGang"

// ConditionQueued, on a job in a Kueue queue (spec.scheduler.t9kScheduler.queue
// or the label kueue.x-k8s.io/queue-name), says whether it waits for
// admission: True with ReasonWaitingForAdmission before it is admitted, or
// with Kueue's eviction reason (Preempted, InactiveWorkload, ...) once it was
// evicted; False with ReasonAdmitted while it may run. kubectl get shows the
// reason of a True condition after the phase.
const (
	ConditionQueued           = "Queued"
	ReasonWaitingForAdmission = "WaitingForAdmission"
	ReasonAdmitted            = "Admitted"
)

// TrainingJobStatus is what the controller observed of a job; both kinds
// share it.
type TrainingJobStatus struct {
	// ObservedGeneration is the metadata.generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty" protobuf:"varint,1,opt,name=observedGeneration"`

	// Phase is the coarse state of the job: Pending, Running, Paused,
	// Resuming, Succeeded, Failed or Unknown. Succeeded and Failed are final.
	// +optional
	Phase JobPhase `json:"phase,omitempty" protobuf:"bytes,2,opt,name=phase,casttype=JobPhase"`

	// Conditions are the latest observations of the job's state: Initialized,
	// Running, ReplicaFailure, Paused, Completed and Failed; GangScheduled
	// on a job with spec.scheduler.t9kScheduler; Queued on a job in a queue.
	// +listType=map
	// +listMapKey=type
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type" protobuf:"bytes,3,rep,name=conditions"`

	// Tasks reports each replica type and its replicas.
	// +listType=map
	// +listMapKey=type
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +optional
	Tasks []TaskStatus `json:"tasks,omitempty" patchStrategy:"merge" patchMergeKey:"type" protobuf:"bytes,4,rep,name=tasks"`

	// Aggregate counts the job's replicas by phase.
	// +optional
	Aggregate Aggregate `json:"aggregate,omitempty" protobuf:"bytes,5,opt,name=aggregate"`

	// BackoffCount is how many pod replacements the job has used.
	// +optional
	BackoffCount int32 `json:"backoffCount,omitempty" protobuf:"varint,6,opt,name=backoffCount"`

	// Tensorboard reports the job's TensorBoard, when one is requested.
	// +optional
	Tensorboard *DependentStatus `json:"tensorboard,omitempty" protobuf:"bytes,7,opt,name=tensorboard"`

	// StartTime is when the job's current run started; the active deadline
	// counts from here.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty" protobuf:"bytes,8,opt,name=startTime"`

	// CompletionTime is when the job finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty" protobuf:"bytes,9,opt,name=completionTime"`

	// Replicas is, for an elastic job, how many of its replicas have a pod
	// now; the scale subresource reports it as status.replicas.
	// +optional
	Replicas *int32 `json:"replicas,omitempty" protobuf:"varint,10,opt,name=replicas"`

	// Selector is, for an elastic job, the label selector of its pods in
	// string form, as the scale subresource reports it to autoscalers.
	// +optional
	Selector string `json:"selector,omitempty" protobuf:"bytes,11,opt,name=selector"`

	// LastScaleTime is when an elastic job's replica count last changed.
	// +optional
	LastScaleTime *metav1.Time `json:"lastScaleTime,omitempty" protobuf:"bytes,12,opt,name=lastScaleTime"`
}

// TaskStatus reports one replica type.
type TaskStatus struct {
	// Type is the replica type.
	Type ReplicaType `json:"type" protobuf:"bytes,1,opt,name=type,casttype=ReplicaType"`

	// RestartCount is how many pods of this type were replaced.
	// +optional
	RestartCount int32 `json:"restartCount,omitempty" protobuf:"varint,2,opt,name=restartCount"`

	// ReplicaStatus reports each replica of this type, by index.
	// +listType=atomic
	// +optional
	ReplicaStatus []ReplicaStatus `json:"replicaStatus,omitempty" protobuf:"bytes,3,rep,name=replicaStatus"`
}

// ReplicaPhase is the state of one replica: a pod phase, or Creating before
// its pod exists, or Deleted after its pod was removed.
// +enum
type ReplicaPhase string

const (
	ReplicaCreating  ReplicaPhase = "Creating"
	ReplicaPending   ReplicaPhase = "Pending"
	ReplicaRunning   ReplicaPhase = "Running"
	ReplicaSucceeded ReplicaPhase = "Succeeded"
	ReplicaFailed    ReplicaPhase = "Failed"
	ReplicaUnknown   ReplicaPhase = "Unknown"
	ReplicaDeleted   ReplicaPhase = "Deleted"
)

// ReplicaStatus reports one replica.
type ReplicaStatus struct {
	// Name is the replica's pod name.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`

	// UID is the UID of the replica's current pod.
	// +optional
	UID types.UID `json:"uid,omitempty" protobuf:"bytes,2,opt,name=uid,casttype=k8s.io/apimachinery/pkg/types.UID"`

	// Phase is the replica's state.
	// +optional
	Phase ReplicaPhase `json:"phase,omitempty" protobuf:"bytes,3,opt,name=phase,casttype=ReplicaPhase"`

	// Containers reports the pod's containers.
	// +listType=atomic
	// +optional
	Containers []ContainerStatus `json:"containers,omitempty" protobuf:"bytes,4,rep,name=containers"`

	// Reason says why the replica is in its phase, for example BackOff while
	// it waits to be started again.
	// +optional
	Reason string `json:"reason,omitempty" protobuf:"bytes,5,opt,name=reason"`

	// RestartAt is when the replica's next pod is created, while it waits
	// out the restart backoff after its pod exited.
	// +optional
	RestartAt *metav1.Time `json:"restartAt,omitempty" protobuf:"bytes,6,opt,name=restartAt"`

	// RestartCount is how many times in a row the replica was started again
	// after its pod exited; the restart delay doubles with each. It returns
	// to 0 once a pod of the replica has run for 10 minutes.
	// +optional
	RestartCount int32 `json:"restartCount,omitempty" protobuf:"varint,7,opt,name=restartCount"`
}

// ContainerState is the state of a replica's container, as the kubelet
// reports it.
// +enum
type ContainerState string

const (
	// ContainerStateWaiting: the container has not started, or waits to.
	ContainerStateWaiting ContainerState = "Waiting"
	// ContainerStateRunning: the container runs.
	ContainerStateRunning ContainerState = "Running"
	// ContainerStateTerminated: the container ended.
	ContainerStateTerminated ContainerState = "Terminated"
)

// ContainerStatus reports one container of a replica.
type ContainerStatus struct {
	// Name is the container name.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`

	// State is Waiting, Running or Terminated.
	// +optional
	State ContainerState `json:"state,omitempty" protobuf:"bytes,2,opt,name=state,casttype=ContainerState"`

	// ExitCode is the container's exit code once it terminated.
	// +optional
	ExitCode int32 `json:"exitCode,omitempty" protobuf:"varint,3,opt,name=exitCode"`

	// Reason is the kubelet's word for the state: for a waiting container
	// why it does not run yet (ContainerCreating, ImagePullBackOff,
	// CreateContainerConfigError, ...), for a terminated one how it ended
	// (Completed, Error, OOMKilled, ...).
	// +optional
	Reason string `json:"reason,omitempty" protobuf:"bytes,4,opt,name=reason"`

	// LastTermination is how the container last ended, in the replica's
	// current pod or, while a replacement starts, its previous one. It is
	// kept after the pod is deleted.
	// +optional
	LastTermination *ContainerTermination `json:"lastTermination,omitempty" protobuf:"bytes,5,opt,name=lastTermination"`
}

// ContainerTermination is how a container ended.
type ContainerTermination struct {
	// ExitCode is the container's exit code.
	ExitCode int32 `json:"exitCode" protobuf:"varint,1,opt,name=exitCode"`

	// Signal is the signal that ended the container, when the runtime
	// reports one.
	// +optional
	Signal int32 `json:"signal,omitempty" protobuf:"varint,2,opt,name=signal"`

	// Reason is the kubelet's word for how it ended: Completed, Error,
	// OOMKilled, ContainerCannotRun, ...
	// +optional
	Reason string `json:"reason,omitempty" protobuf:"bytes,3,opt,name=reason"`

	// Message is the end of the container's termination message: what it
	// wrote to its terminationMessagePath or, with terminationMessagePolicy
	// FallbackToLogsOnError, the last lines of its log. At most 256 bytes
	// (MaxTerminationMessageBytes), so that a large job's status stays small.
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,4,opt,name=message"`

	// FinishedAt is when the container ended.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty" protobuf:"bytes,5,opt,name=finishedAt"`
}

// Aggregate counts a job's replicas by phase.
type Aggregate struct {
	Creating  int32 `json:"creating" protobuf:"varint,1,opt,name=creating"`
	Pending   int32 `json:"pending" protobuf:"varint,2,opt,name=pending"`
	Running   int32 `json:"running" protobuf:"varint,3,opt,name=running"`
	Succeeded int32 `json:"succeeded" protobuf:"varint,4,opt,name=succeeded"`
	Failed    int32 `json:"failed" protobuf:"varint,5,opt,name=failed"`
	Unknown   int32 `json:"unknown" protobuf:"varint,6,opt,name=unknown"`
	Deleted   int32 `json:"deleted" protobuf:"varint,7,opt,name=deleted"`
}

// DependentStatus reports an object the controller runs for the job, such as
// its TensorBoard.
type DependentStatus struct {
	// Name identifies the dependent within the job.
	// +optional
	Name string `json:"name,omitempty" protobuf:"bytes,1,opt,name=name"`

	// Dependent refers to the Kubernetes object.
	// +optional
	Dependent *corev1.ObjectReference `json:"dependent,omitempty" protobuf:"bytes,2,opt,name=dependent"`

	// Ready says whether the dependent serves.
	// +optional
	Ready bool `json:"ready,omitempty" protobuf:"varint,3,opt,name=ready"`

	// Reason is a CamelCase word for the current state.
	// +optional
	Reason string `json:"reason,omitempty" protobuf:"bytes,4,opt,name=reason"`

	// Action is what the controller last did to the dependent.
	// +optional
	Action string `json:"action,omitempty" protobuf:"bytes,5,opt,name=action"`

	// Note is a human-readable explanation.
	// +optional
	Note string `json:"note,omitempty" protobuf:"bytes,6,opt,name=note"`

	// Type is Normal or Warning.
	// +optional
	Type string `json:"type,omitempty" protobuf:"bytes,7,opt,name=type"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PauseRequest is the body of a POST to a job's pause subresource.
type PauseRequest struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ResumeRequest is the body of a POST to a job's resume subresource.
type ResumeRequest struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DebugRequest is the body of a POST to a job's debug subresource.
type DebugRequest struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// ReplicaSpecs says how each replica type starts in debug mode.
	// +listType=map
	// +listMapKey=type
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +optional
	ReplicaSpecs []ReplicaDebugSpec `json:"replicaSpecs,omitempty" patchStrategy:"merge" patchMergeKey:"type" protobuf:"bytes,2,rep,name=replicaSpecs"`
}
