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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TensorFlowTrainingJob runs a distributed TensorFlow training program: a set
// of replicas (chief, parameter servers, workers, evaluator) that find each
// other through TF_CONFIG.
type TensorFlowTrainingJob struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired behaviour of the job.
	Spec TensorFlowTrainingJobSpec `json:"spec,omitempty"`

	// Status is what the controller last observed of the job.
	Status TrainingJobStatus `json:"status,omitempty"`
}

// TensorFlowTrainingJobSpec is the desired behaviour of a TensorFlowTrainingJob.
type TensorFlowTrainingJobSpec struct {
	TrainingJobSpec `json:",inline"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TensorFlowTrainingJobList is a list of TensorFlowTrainingJobs.
type TensorFlowTrainingJobList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the jobs in the list.
	Items []TensorFlowTrainingJob `json:"items"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PyTorchTrainingJob runs a distributed PyTorch training program: replicas
// that rendezvous through MASTER_ADDR/MASTER_PORT, or through torchrun.
type PyTorchTrainingJob struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired behaviour of the job.
	Spec PyTorchTrainingJobSpec `json:"spec,omitempty"`

	// Status is what the controller last observed of the job.
	Status TrainingJobStatus `json:"status,omitempty"`
}

// PyTorchTrainingJobSpec is the desired behaviour of a PyTorchTrainingJob.
type PyTorchTrainingJobSpec struct {
	TrainingJobSpec `json:",inline"`

	// TorchrunConfig, when enabled, starts the training container through
	// torchrun, which spawns procPerNode workers on each replica.
	TorchrunConfig *TorchrunConfig `json:"torchrunConfig,omitempty"`

	// Elastic declares the range of replicas an elastic job may run with.
	// It is validated and stored; scaling within the range is not yet done.
	Elastic *ElasticConfig `json:"elastic,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PyTorchTrainingJobList is a list of PyTorchTrainingJobs.
type PyTorchTrainingJobList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the jobs in the list.
	Items []PyTorchTrainingJob `json:"items"`
}

// TrainingJobSpec is the part of the spec every training job kind shares.
type TrainingJobSpec struct {
	// ReplicaSpecs lists the groups of replicas, one per type. The order
	// matters: ranks and the default master follow it. At most
	// MaxReplicaTypes types and MaxTotalReplicas replicas in all (limits.go).
	ReplicaSpecs []ReplicaSpec `json:"replicaSpecs"`

	// RunMode switches the job into debug or pause mode. Absent, the job runs
	// immediately.
	RunMode *RunMode `json:"runMode,omitempty"`

	// RunPolicy bounds how long and how often the job may run, and what is
	// kept when it finishes.
	RunPolicy RunPolicy `json:"runPolicy,omitempty"`

	// Scheduler selects the scheduler that places the replicas. Absent, the
	// cluster's default scheduler is used.
	Scheduler *SchedulePolicy `json:"scheduler,omitempty"`

	// TensorboardSpec asks for a TensorBoard that shows the job's training logs.
	TensorboardSpec *TensorBoardSpec `json:"tensorboardSpec,omitempty"`
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
	Type ReplicaType `json:"type"`

	// Replicas is how many pods this group runs. Defaults to 1. The replicas
	// of all types together are at most MaxTotalReplicas.
	Replicas *int32 `json:"replicas,omitempty"`

	// Template is the pod each replica runs. Its restartPolicy is ignored:
	// pods are created with Never and replaced by the controller.
	Template corev1.PodTemplateSpec `json:"template"`

	// RestartPolicy says when a failed pod of this group is replaced: Never
	// (the default), OnFailure, Always or ExitCode.
	RestartPolicy RestartPolicy `json:"restartPolicy,omitempty"`
}

// CleanUpPolicy says which pods are deleted once the job has finished.
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
	// Resuming a paused job starts the count again.
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// BackoffLimit is how many pod replacements the whole job may need
	// (all replicas together) before it fails. Defaults to 3.
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`

	// CleanUpPolicy says which pods are deleted when the job finishes: All,
	// Unfinished (the default) or None. The lower-case spellings are accepted.
	CleanUpPolicy CleanUpPolicy `json:"cleanUpPolicy,omitempty"`

	// TTLSecondsAfterFinished, when set, deletes the job itself that many
	// seconds after it finished.
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// FailurePolicy adds rules, tried in order before the replicas' restart
	// policies, that decide what a failed pod does to the job.
	FailurePolicy *FailurePolicy `json:"failurePolicy,omitempty"`

	// SuccessPolicy says which replicas decide that the job succeeded:
	// Default (the kind's own rule), AllWorkers or AnyWorker. Empty means
	// Default. AllWorkers and AnyWorker need a replica type named worker.
	SuccessPolicy SuccessPolicy `json:"successPolicy,omitempty"`

	// StartTimeoutSeconds, when set, is how long a replica's pod may stay
	// unstarted, counted from its creation, before the job fails with the
	// reason the pod cannot start.
	StartTimeoutSeconds *int64 `json:"startTimeoutSeconds,omitempty"`

	// StartupPolicy says whether every replica starts at once (AnyOrder,
	// also when unset) or the other replicas' containers wait for the
	// job's leaders to be ready (InOrder).
	StartupPolicy StartupPolicy `json:"startupPolicy,omitempty"`
}

// FailurePolicy holds the rules that decide what a failed pod does to the
// job. The first rule that matches decides; when none does, the replica's
// restartPolicy does, as it does without a failure policy.
type FailurePolicy struct {
	// Rules are tried in order; the first that matches a failed pod decides.
	// At most MaxFailurePolicyRules (limits.go).
	Rules []FailurePolicyRule `json:"rules,omitempty"`
}

// FailurePolicyAction is what a matching rule does.
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
	Action FailurePolicyAction `json:"action"`

	// ReplicaTypes limits the rule to pods of these replica types, each a
	// type listed in replicaSpecs; empty, the rule applies to every type.
	ReplicaTypes []ReplicaType `json:"replicaTypes,omitempty"`

	// OnExitCodes matches on the exit codes of the pod's terminated
	// containers.
	OnExitCodes *FailurePolicyOnExitCodes `json:"onExitCodes,omitempty"`

	// OnPodConditions matches when the pod has any of these conditions, for
	// example DisruptionTarget for pods lost to eviction or preemption. At
	// most MaxFailurePolicyPodConditions.
	OnPodConditions []FailurePolicyOnPodCondition `json:"onPodConditions,omitempty"`

	// OnReasons matches when a container of the pod terminated with one of
	// these reasons (OOMKilled, Error, ContainerCannotRun, ...), or the pod
	// itself failed with one (Evicted, DeadlineExceeded, ...). At most
	// MaxFailurePolicyReasons, each at most MaxFailurePolicyReasonLength
	// characters.
	OnReasons []string `json:"onReasons,omitempty"`
}

// FailurePolicyOnExitCodesOperator says how exit codes are compared with the
// rule's values.
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
	ContainerName *string `json:"containerName,omitempty"`

	// Operator is In or NotIn.
	Operator FailurePolicyOnExitCodesOperator `json:"operator"`

	// Values are the exit codes compared: at least one and at most
	// MaxFailurePolicyExitCodes, without duplicates; 0 is not allowed with In.
	Values []int32 `json:"values"`
}

// FailurePolicyOnPodCondition matches a pod condition by type and status.
type FailurePolicyOnPodCondition struct {
	// Type is the pod condition type, for example DisruptionTarget.
	Type corev1.PodConditionType `json:"type"`

	// Status is the status the condition must have; defaults to True.
	Status corev1.ConditionStatus `json:"status,omitempty"`
}

// StartupPolicy says in which order a job's replicas start.
type StartupPolicy string

const (
	// StartupPolicyAnyOrder starts every replica at once.
	StartupPolicyAnyOrder StartupPolicy = "AnyOrder"
	// StartupPolicyInOrder holds the containers of every other replica
	// until the leaders are ready: the master (PyTorch), or the chief and
	// every ps (TensorFlow). The pods are still created, and gang-placed,
	// together.
	StartupPolicyInOrder StartupPolicy = "InOrder"
)

// SuccessPolicy says which replicas decide that a job succeeded.
type SuccessPolicy string

const (
	// SuccessPolicyDefault applies the kind's own rule: a TensorFlow job
	// succeeds with its chief (else worker 0), a PyTorch job with its master
	// (else with every pod). An empty successPolicy means the same.
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
	Debug *DebugMode `json:"debug,omitempty"`

	// Pause removes the job's pods while keeping the job and its Service.
	Pause *PauseMode `json:"pause,omitempty"`
}

// DebugMode starts replicas with a debug command instead of training.
type DebugMode struct {
	// Enabled switches debug mode on.
	Enabled bool `json:"enabled,omitempty"`

	// ReplicaSpecs says how each replica type is started in debug mode; types
	// not listed use the defaults.
	ReplicaSpecs []ReplicaDebugSpec `json:"replicaSpecs,omitempty"`
}

// ReplicaDebugSpec says how one replica type starts in debug mode.
type ReplicaDebugSpec struct {
	// Type is the replica type this applies to.
	Type ReplicaType `json:"type"`

	// SkipInitContainer drops the pod template's init containers.
	SkipInitContainer bool `json:"skipInitContainer,omitempty"`

	// Command replaces the training container's command. Defaults to
	// ["sleep", "inf"].
	Command []string `json:"command,omitempty"`
}

// PauseMode removes a job's pods until it is resumed.
type PauseMode struct {
	// Enabled switches pause mode on.
	Enabled bool `json:"enabled,omitempty"`

	// ResumeSpecs says how each replica type is started again on resume;
	// types not listed restart from their template. Fixed once the job exists.
	ResumeSpecs []ResumeSpec `json:"resumeSpecs,omitempty"`
}

// ResumeSpec says how one replica type starts again after a pause.
type ResumeSpec struct {
	// Type is the replica type this applies to.
	Type ReplicaType `json:"type"`

	// SkipInitContainer drops the pod template's init containers.
	SkipInitContainer bool `json:"skipInitContainer,omitempty"`

	// Command replaces the training container's command.
	Command []string `json:"command,omitempty"`

	// Args replaces the training container's arguments.
	Args []string `json:"args,omitempty"`
}

// SchedulePolicy selects the scheduler of a job's replicas.
type SchedulePolicy struct {
	// T9kScheduler places the replicas as one group in a T9k scheduler queue.
	T9kScheduler *T9kScheduler `json:"t9kScheduler,omitempty"`
}

// T9kScheduler is the placement of a job by the T9k scheduler.
type T9kScheduler struct {
	// Queue is the scheduler queue the job is placed in.
	Queue string `json:"queue"`

	// Priority orders jobs within the queue, from 0 (the default) to 100.
	Priority int32 `json:"priority,omitempty"`
}

// TensorBoardSpec describes the TensorBoard run for a job.
type TensorBoardSpec struct {
	// Image is the TensorBoard container image.
	Image string `json:"image"`

	// TrainingLogFilesets are the log directories to show, each written
	// t9k://pvc/<pvc-name>/<path>.
	TrainingLogFilesets []string `json:"trainingLogFilesets"`

	// Resources are the compute resources of the TensorBoard container.
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// RendezvousBackend is the torchrun rendezvous implementation.
type RendezvousBackend string

const (
	RendezvousBackendC10d   RendezvousBackend = "c10d"
	RendezvousBackendEtcd   RendezvousBackend = "etcd"
	RendezvousBackendEtcdV2 RendezvousBackend = "etcd-v2"
)

// TorchrunConfig starts the training container through torchrun.
type TorchrunConfig struct {
	// Enabled starts the training container as `torchrun <options> <args>`.
	Enabled bool `json:"enabled,omitempty"`

	// MaxRestarts is how often torchrun restarts the workers before failing.
	// Defaults to 0.
	MaxRestarts *int32 `json:"maxRestarts,omitempty"`

	// ProcPerNode is the number of worker processes per replica: a positive
	// integer, or "gpu" for one per GPU. Defaults to "1".
	ProcPerNode string `json:"procPerNode,omitempty"`

	// RdzvBackend is the rendezvous backend: c10d (the default), etcd or etcd-v2.
	RdzvBackend RendezvousBackend `json:"rdzvBackend,omitempty"`

	// ExtraOptions are passed to torchrun before the training arguments.
	ExtraOptions []string `json:"extraOptions,omitempty"`
}

// ElasticConfig is the range of replicas an elastic PyTorch job may run with.
type ElasticConfig struct {
	// Enabled marks the job as elastic.
	Enabled bool `json:"enabled,omitempty"`

	// MinReplicas is the fewest replicas the job runs with. Immutable.
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// MaxReplicas is the most replicas the job runs with. Immutable.
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`

	// ExpectedReplicas is the number of replicas to aim for, between
	// minReplicas and maxReplicas.
	ExpectedReplicas *int32 `json:"expectedReplicas,omitempty"`
}

// JobPhase is the coarse state of a job.
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
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase is the coarse state of the job: Pending, Running, Paused,
	// Resuming, Succeeded, Failed or Unknown. Succeeded and Failed are final.
	Phase JobPhase `json:"phase,omitempty"`

	// Conditions are the latest observations of the job's state: Initialized,
	// Running, ReplicaFailure, Paused, Completed and Failed; GangScheduled
	// on a job with spec.scheduler.t9kScheduler; Queued on a job in a queue.
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Tasks reports each replica type and its replicas.
	Tasks []TaskStatus `json:"tasks,omitempty"`

	// Aggregate counts the job's replicas by phase.
	Aggregate Aggregate `json:"aggregate,omitempty"`

	// BackoffCount is how many pod replacements the job has used.
	BackoffCount int32 `json:"backoffCount,omitempty"`

	// Tensorboard reports the job's TensorBoard, when one is requested.
	Tensorboard *DependentStatus `json:"tensorboard,omitempty"`

	// StartTime is when the job's current run started; the active deadline
	// counts from here.
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the job finished.
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Replicas is, for an elastic job, how many of its replicas have a pod.
	Replicas *int32 `json:"replicas,omitempty"`

	// Selector is, for an elastic job, its pods' label selector as a string.
	Selector string `json:"selector,omitempty"`

	// LastScaleTime is when an elastic job's replica count last changed.
	LastScaleTime *metav1.Time `json:"lastScaleTime,omitempty"`
}

// TaskStatus reports one replica type.
type TaskStatus struct {
	// Type is the replica type.
	Type ReplicaType `json:"type"`

	// RestartCount is how many pods of this type were replaced.
	RestartCount int32 `json:"restartCount,omitempty"`

	// ReplicaStatus reports each replica of this type, by index.
	ReplicaStatus []ReplicaStatus `json:"replicaStatus,omitempty"`
}

// ReplicaPhase is the state of one replica: a pod phase, or Creating before
// its pod exists, or Deleted after its pod was removed.
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
	Name string `json:"name"`

	// UID is the UID of the replica's current pod.
	UID types.UID `json:"uid,omitempty"`

	// Phase is the replica's state.
	Phase ReplicaPhase `json:"phase,omitempty"`

	// Containers reports the pod's containers.
	Containers []ContainerStatus `json:"containers,omitempty"`

	// Reason says why the replica is in its phase, for example BackOff while
	// it waits to be started again.
	Reason string `json:"reason,omitempty"`

	// RestartAt is when the replica's next pod is created, while it waits
	// out the restart backoff after its pod exited.
	RestartAt *metav1.Time `json:"restartAt,omitempty"`

	// RestartCount is how many times in a row the replica was started again
	// after its pod exited; the restart delay doubles with each. It returns
	// to 0 once a pod of the replica has run for 10 minutes.
	RestartCount int32 `json:"restartCount,omitempty"`
}

// ContainerState is the state of a replica's container, as the kubelet
// reports it.
type ContainerState string

const (
	ContainerStateWaiting    ContainerState = "Waiting"
	ContainerStateRunning    ContainerState = "Running"
	ContainerStateTerminated ContainerState = "Terminated"
)

// ContainerStatus reports one container of a replica.
type ContainerStatus struct {
	// Name is the container name.
	Name string `json:"name"`

	// State is Waiting, Running or Terminated.
	State ContainerState `json:"state,omitempty"`

	// ExitCode is the container's exit code once it terminated.
	ExitCode int32 `json:"exitCode,omitempty"`

	// Reason is the kubelet's word for the container's state.
	Reason string `json:"reason,omitempty"`

	// LastTermination is how the container last ended, kept after its pod
	// is gone.
	LastTermination *ContainerTermination `json:"lastTermination,omitempty"`
}

// ContainerTermination is how a container ended.
type ContainerTermination struct {
	ExitCode   int32        `json:"exitCode"`
	Signal     int32        `json:"signal,omitempty"`
	Reason     string       `json:"reason,omitempty"`
	Message    string       `json:"message,omitempty"`
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
}

// Aggregate counts a job's replicas by phase.
type Aggregate struct {
	Creating  int32 `json:"creating"`
	Pending   int32 `json:"pending"`
	Running   int32 `json:"running"`
	Succeeded int32 `json:"succeeded"`
	Failed    int32 `json:"failed"`
	Unknown   int32 `json:"unknown"`
	Deleted   int32 `json:"deleted"`
}

// DependentStatus reports an object the controller runs for the job, such as
// its TensorBoard.
type DependentStatus struct {
	// Name identifies the dependent within the job.
	Name string `json:"name,omitempty"`

	// Dependent refers to the Kubernetes object.
	Dependent *corev1.ObjectReference `json:"dependent,omitempty"`

	// Ready says whether the dependent serves.
	Ready bool `json:"ready,omitempty"`

	// Reason is a CamelCase word for the current state.
	Reason string `json:"reason,omitempty"`

	// Action is what the controller last did to the dependent.
	Action string `json:"action,omitempty"`

	// Note is a human-readable explanation.
	Note string `json:"note,omitempty"`

	// Type is Normal or Warning.
	Type string `json:"type,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PauseRequest is the body of a POST to a job's pause subresource.
type PauseRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ResumeRequest is the body of a POST to a job's resume subresource.
type ResumeRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DebugRequest is the body of a POST to a job's debug subresource.
type DebugRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// ReplicaSpecs says how each replica type starts in debug mode.
	ReplicaSpecs []ReplicaDebugSpec `json:"replicaSpecs,omitempty"`
}
