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

	// Checkpoint, when set, says where the job keeps its checkpoints. Every
	// replica then learns the checkpoint directory and the last good
	// checkpoint from its environment, and every stop the controller makes
	// (pause, Kueue eviction, elastic scale-down, RestartJob, a stall
	// restart) asks the job for a checkpoint and waits for it first. Unset,
	// stops remove the pods at once.
	// +optional
	Checkpoint *CheckpointPolicy `json:"checkpoint,omitempty" protobuf:"bytes,9,opt,name=checkpoint"`

	// ProgressDeadlineSeconds, when set, is how long the job may go without
	// a progress report that changes its step or epoch while every replica
	// runs, before it is Stalled. Time paused, queued or starting does not
	// count: the clock starts when the last replica runs. From 1 to
	// 315360000 (ten years).
	// +optional
	ProgressDeadlineSeconds *int64 `json:"progressDeadlineSeconds,omitempty" protobuf:"varint,10,opt,name=progressDeadlineSeconds"`

	// StallPolicy says what a Stalled job does: None records the condition
	// and an event, Restart restarts every replica (from the last checkpoint,
	// counted against backoffLimit), Fail fails the job. Before Restart or
	// Fail, the last lines of each replica's log are kept in status.stall.
	// Defaults to None; needs progressDeadlineSeconds.
	// +optional
	StallPolicy StallPolicy `json:"stallPolicy,omitempty" protobuf:"bytes,11,opt,name=stallPolicy,casttype=StallPolicy"`

	// NodeFailureExitCodes are exit codes of the training container that
	// blame its node rather than the program, such as the code a program
	// exits with when it finds a GPU broken. A replica that exits with one
	// makes its node suspect (status.suspectNodes), and the job's next pods
	// avoid it. Each from 1 to 255, without repeats.
	// +listType=set
	// +optional
	NodeFailureExitCodes []int32 `json:"nodeFailureExitCodes,omitempty" protobuf:"varint,12,rep,name=nodeFailureExitCodes"`

	// Preflight, when set, is a check every replica runs on its node before
	// it trains, as its first init container: an all-reduce bandwidth test
	// or a GPU health check, say. A replica whose check fails makes its node
	// suspect and is created again on another node; that costs one of the
	// job's restarts (backoffLimit) at most once per node.
	// +optional
	Preflight *Preflight `json:"preflight,omitempty" protobuf:"bytes,13,opt,name=preflight"`

	// RestartStrategy says how a restart of the whole job (a RestartJob
	// rule, a stall restart, a failure the replica's restartPolicy retries)
	// brings the replicas back. Recreate, the default, deletes every pod and
	// creates new ones. InPlace keeps every pod on its node and has the
	// kubelet restart its containers (a container restart rule): no
	// scheduling, no new sandbox, no image pull. Under InPlace every restart
	// the job counts restarts the whole job, and every pod holds its
	// training containers back until the old attempt has left every replica.
	// A restart falls back to Recreate, with an event and the Restarting
	// condition saying why, when a pod is gone or being deleted, its node is
	// lost, or the cluster dropped the restart rule. The pods need nodes
	// whose kubelet restarts all containers of a pod in place (Kubernetes
	// 1.36 or later), and a POSIX shell in the training container's image.
	// +optional
	RestartStrategy RestartStrategy `json:"restartStrategy,omitempty" protobuf:"bytes,14,opt,name=restartStrategy,casttype=RestartStrategy"`
}

// RestartStrategy is how a whole-job restart brings the replicas back.
// +enum
type RestartStrategy string

const (
	// RestartStrategyRecreate deletes every pod and creates them again.
	RestartStrategyRecreate RestartStrategy = "Recreate"
	// RestartStrategyInPlace restarts every pod's containers where the pod
	// is.
	RestartStrategyInPlace RestartStrategy = "InPlace"
)

// Preflight is a check a replica runs on its node before it trains. Its
// container gets the node's name in TENSORSTACK_NODE_NAME.
type Preflight struct {
	// Image runs the check; the training container's image when unset.
	// +optional
	Image string `json:"image,omitempty" protobuf:"bytes,1,opt,name=image"`

	// Command is the check, run without a shell; it passes by exiting 0.
	// At most 32 KiB, counted as the kernel counts an argument list.
	// +listType=atomic
	Command []string `json:"command" protobuf:"bytes,2,rep,name=command"`
}

// CheckpointPolicy says where a job keeps its checkpoints and how long a stop
// waits for one.
type CheckpointPolicy struct {
	// VolumeName names the pod volume that holds the checkpoints, typically
	// a PersistentVolumeClaim. Every replica type's template has it and its
	// training container mounts it, read-write and at the same path; that
	// path is TENSORSTACK_CHECKPOINT_DIR, and reported checkpoints lie under
	// it.
	VolumeName string `json:"volumeName" protobuf:"bytes,1,opt,name=volumeName"`

	// IntervalSeconds is how often the job means to write a checkpoint;
	// replicas see it as TENSORSTACK_CHECKPOINT_INTERVAL_SECONDS. From 1 to
	// 604800 (a week).
	// +optional
	IntervalSeconds *int32 `json:"intervalSeconds,omitempty" protobuf:"varint,2,opt,name=intervalSeconds"`

	// StopGraceSeconds is how long a stop waits, after it asked, for a
	// checkpoint report newer than its request before it removes the pods.
	// From 1 to 3600, and at most the terminationGracePeriodSeconds of every
	// replica type's template (30 when unset). Defaults to 30, or to the
	// shortest of those grace periods when that is shorter.
	// +optional
	StopGraceSeconds *int32 `json:"stopGraceSeconds,omitempty" protobuf:"varint,3,opt,name=stopGraceSeconds"`
}

// StallPolicy is what a Stalled job does.
// +enum
type StallPolicy string

const (
	// StallPolicyNone records the Stalled condition and an event only.
	StallPolicyNone StallPolicy = "None"
	// StallPolicyRestart restarts every replica, from the last checkpoint,
	// counted once against backoffLimit.
	StallPolicyRestart StallPolicy = "Restart"
	// StallPolicyFail fails the job with reason Stalled.
	StallPolicyFail StallPolicy = "Fail"
)

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
