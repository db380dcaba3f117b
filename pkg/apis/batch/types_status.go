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
// evicted; False with ReasonAdmitted while it may run. A job that names no
// queue in a namespace where Kueue manages such jobs waits with
// ReasonQueueNameRequired. kubectl get shows the reason of a True condition
// after the phase.
const (
	ConditionQueued           = "Queued"
	ReasonWaitingForAdmission = "WaitingForAdmission"
	ReasonAdmitted            = "Admitted"
	ReasonQueueNameRequired   = "QueueNameRequired"
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
	// Progress is the job's last stored progress report.
	Progress *ProgressStatus `json:"progress,omitempty"`

	// Checkpoint is the job's last good checkpoint, the ones before it, and
	// the controller's standing request for a new one.
	Checkpoint *CheckpointStatus `json:"checkpoint,omitempty"`

	// Accounting is where the job's time went and the work its
	// interruptions lost.
	Accounting *Accounting `json:"accounting,omitempty"`

	// Stall is what the controller saw when it last found the job Stalled.
	Stall *StallStatus `json:"stall,omitempty"`

	// Attempts are the job's last starts of its pods, oldest first.
	Attempts []Attempt `json:"attempts,omitempty"`

	// AttemptCount is how many attempts the job made in all.
	AttemptCount int32 `json:"attemptCount,omitempty"`

	// SuspectNodes are nodes the job's next pods avoid.
	SuspectNodes []SuspectNode `json:"suspectNodes,omitempty"`

	// Runtime is the runtime the job was made from, as it was applied
	// when the job was created; nil for a job without spec.runtimeRef.
	Runtime *AppliedRuntime `json:"runtime,omitempty"`
}

// SuspectNode is a node the job's next pods avoid, and why.
type SuspectNode struct {
	Name    string      `json:"name"`
	Reason  string      `json:"reason"`
	Message string      `json:"message,omitempty"`
	Time    metav1.Time `json:"time"`
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
