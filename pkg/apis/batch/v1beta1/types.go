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
)

// TrainingJobSpec is the part of the spec every training job kind shares.
type TrainingJobSpec struct {
	// ReplicaSpecs lists the groups of replicas, one per type. The order
	// matters: ranks and the default master follow it. A job lists at most
	// 32 types, and its replicas, summed over all types, are at most 1000:
	// the status reports every replica and must stay well under etcd's
	// request size limit. A job with a runtimeRef may leave it out, or give
	// only what it changes of the runtime's replica specs.
	// +listType=map
	// +listMapKey=type
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +optional
	ReplicaSpecs []ReplicaSpec `json:"replicaSpecs,omitempty" patchStrategy:"merge" patchMergeKey:"type" protobuf:"bytes,1,rep,name=replicaSpecs"`

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

	// ManagedBy names the controller that runs the job: empty or
	// batch.tensorstack.dev/training-controller for training-controller-manager,
	// or kueue.x-k8s.io/multikueue for Kueue's MultiKueue, which runs the job
	// in a worker cluster and copies its status back; training-controller-manager
	// then leaves the job alone. It cannot change once the job exists.
	// +optional
	ManagedBy *string `json:"managedBy,omitempty" protobuf:"bytes,6,opt,name=managedBy"`

	// RuntimeRef names the runtime the job starts from. The apiserver
	// applies the runtime's template, then the job's own fields, then
	// Trainer, when the job is created, and stores the whole job;
	// status.runtime records which version of the runtime it applied.
	// Changing or deleting the runtime later changes no job. It cannot
	// change once the job exists.
	// +optional
	RuntimeRef *RuntimeRef `json:"runtimeRef,omitempty" protobuf:"bytes,7,opt,name=runtimeRef"`

	// Trainer is the program, node count and per-node resources of a job
	// made from a runtime, applied with it when the job is created. It
	// cannot change once the job exists.
	// +optional
	Trainer *Trainer `json:"trainer,omitempty" protobuf:"bytes,8,opt,name=trainer"`
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
	// pods are created with Never and replaced by the controller. Encoded as
	// JSON it takes at most 128 KiB, since every pod of the type copies it.
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

	// RdzvBackend is how the replicas' torchrun agents meet: static, c10d,
	// etcd or etcd-v2. Defaults to static for a job that is not elastic, and
	// to c10d for an elastic one. With static, each replica runs torchrun
	// with its own --node-rank and --nnodes set to the job's replicas, and
	// the agents meet at MASTER_ADDR:MASTER_PORT, the first rank, without
	// polling: the fastest start. Its group is fixed, so an elastic job
	// cannot use it. With c10d the agents form the group at the same
	// address and form it again as replicas join and leave.
	// +optional
	RdzvBackend RendezvousBackend `json:"rdzvBackend,omitempty" protobuf:"bytes,4,opt,name=rdzvBackend,casttype=RendezvousBackend"`

	// ExtraOptions are passed to torchrun before the training arguments. At
	// most 32768 bytes, each entry counting its length plus one.
	// +listType=atomic
	// +optional
	ExtraOptions []string `json:"extraOptions,omitempty" protobuf:"bytes,5,rep,name=extraOptions"`
}

// ElasticConfig is the range of replicas an elastic job may run with.
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
