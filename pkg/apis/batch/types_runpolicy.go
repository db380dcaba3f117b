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

	// Checkpoint, when set, says where the job keeps its checkpoints and
	// makes every stop ask for one first.
	Checkpoint *CheckpointPolicy `json:"checkpoint,omitempty"`

	// ProgressDeadlineSeconds, when set, is how long every replica may run
	// without a progress report that advances the step or epoch before the
	// job is Stalled.
	ProgressDeadlineSeconds *int64 `json:"progressDeadlineSeconds,omitempty"`

	// StallPolicy says what a Stalled job does: None (the default),
	// Restart or Fail.
	StallPolicy StallPolicy `json:"stallPolicy,omitempty"`

	// NodeFailureExitCodes are exit codes of the training container that
	// blame the node: the replica's node becomes suspect.
	NodeFailureExitCodes []int32 `json:"nodeFailureExitCodes,omitempty"`

	// Preflight is a check run on every replica's node before training.
	Preflight *Preflight `json:"preflight,omitempty"`

	// RestartStrategy says how a whole-job restart brings the replicas
	// back: Recreate (the default) or InPlace.
	RestartStrategy RestartStrategy `json:"restartStrategy,omitempty"`
}

// RestartStrategy is how a whole-job restart brings the replicas back.
type RestartStrategy string

const (
	// RestartStrategyRecreate deletes every pod and creates them again.
	RestartStrategyRecreate RestartStrategy = "Recreate"
	// RestartStrategyInPlace restarts every pod's containers where the pod
	// is.
	RestartStrategyInPlace RestartStrategy = "InPlace"
)

// Preflight is a check a replica runs on its node before it trains.
type Preflight struct {
	Image   string   `json:"image,omitempty"`
	Command []string `json:"command"`
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
