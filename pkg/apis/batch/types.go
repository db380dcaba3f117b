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
)

// TrainingJobSpec is the part of the spec every training job kind shares.
type TrainingJobSpec struct {
	// ReplicaSpecs lists the groups of replicas, one per type. The order
	// matters: ranks and the default master follow it. At most
	// MaxReplicaTypes types and MaxTotalReplicas replicas in all (limits.go).
	ReplicaSpecs []ReplicaSpec `json:"replicaSpecs,omitempty"`

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

	// ManagedBy names the controller that runs the job; empty is ours.
	ManagedBy *string `json:"managedBy,omitempty"`

	// RuntimeRef names the runtime the job was made from; Trainer is what
	// the job gave on top of it. Both were applied when the job was
	// created.
	RuntimeRef *RuntimeRef `json:"runtimeRef,omitempty"`
	Trainer    *Trainer    `json:"trainer,omitempty"`
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
	// ReplicaTypeLauncher is an MPI job's replica that runs mpirun.
	ReplicaTypeLauncher ReplicaType = "launcher"
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
	// pods are created with Never and replaced by the controller. Encoded as
	// JSON it takes at most 128 KiB, since every pod of the type copies it.
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
	// RendezvousBackendStatic: every replica is told its node rank and the
	// fixed number of replicas, and the agents meet in a store on the first
	// rank. The default of a job that is not elastic.
	RendezvousBackendStatic RendezvousBackend = "static"
	// RendezvousBackendC10d: the agents form the group through a store on
	// the first rank, and form it again as replicas join and leave. The
	// default of an elastic job.
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

	// RdzvBackend is how the replicas' torchrun agents meet: static, c10d,
	// etcd or etcd-v2. Defaults to static for a job that is not elastic, and
	// to c10d for an elastic one. With static, each replica runs torchrun
	// with its own --node-rank and --nnodes set to the job's replicas, and
	// the agents meet at MASTER_ADDR:MASTER_PORT, the first rank, without
	// polling: the fastest start. Its group is fixed, so an elastic job
	// cannot use it. With c10d the agents form the group at the same
	// address and form it again as replicas join and leave.
	RdzvBackend RendezvousBackend `json:"rdzvBackend,omitempty"`

	// ExtraOptions are passed to torchrun before the training arguments.
	ExtraOptions []string `json:"extraOptions,omitempty"`
}

// ElasticConfig is the range of replicas an elastic job may run with.
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
