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
	// ConditionStalled, on a job with spec.runPolicy.progressDeadlineSeconds,
	// is True with reason ProgressDeadlineExceeded once every replica ran
	// that long without a report that changed the step or epoch, and False
	// again once one does or the pods are replaced.
	ConditionStalled = "Stalled"
	// ConditionRestartedInPlace, on a job with restartStrategy InPlace,
	// says how its last whole-job restart went: True with reason
	// RestartingInPlace when every pod was restarted where it was, False
	// with reason RecreatingInstead, and why, when the pods had to be
	// recreated. False with reason NoNodeRestartsInPlace, for the rest of
	// the job's life, when its pods may only run on nodes that cannot
	// restart them in place, and are made and restarted as under Recreate.
	ConditionRestartedInPlace = "RestartedInPlace"
)

// Reasons of the RestartedInPlace condition.
const (
	ReasonRestartingInPlace     = "RestartingInPlace"
	ReasonRecreatingInstead     = "RecreatingInstead"
	ReasonNoNodeRestartsInPlace = "NoNodeRestartsInPlace"
)

// Reasons of the Stalled condition.
const (
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	ReasonProgressing              = "Progressing"
)

// ReasonWaitingForGang is the reason of a False GangScheduled condition
// while the job's pods wait for room for the whole gang; kubectl get shows
// it after a Pending or Resuming phase.
const ReasonWaitingForGang = "WaitingForGang"

// ConditionQueued, on a job in a Kueue queue (spec.scheduler.t9kScheduler.queue
// or the label kueue.x-k8s.io/queue-name), says whether it waits for
// admission: True with ReasonWaitingForAdmission before it is admitted, or
// with Kueue's eviction reason (Preempted, InactiveWorkload, ...) once it was
// evicted; False with ReasonAdmitted while it may run, or with
// ReasonUnqueued when the controller runs with --queueing=none and the job
// runs outside any quota. A job never runs without its queue's admission
// otherwise: it waits (True) with ReasonQueueingUnavailable while Kueue is
// not served or may not be used, with ReasonQueueNameRemoved when its queue
// name was removed while it waited, with ReasonQueueNameRequired when it
// names no queue in a namespace where Kueue manages such jobs, and with
// ReasonPrebuiltWorkloadMismatch when the Workload it names was not built
// for it. The message says why. A job whose pods met its success policy
// while an eviction waited for their checkpoint turns it False with reason
// Succeeded: the eviction did not take effect. kubectl get shows the reason
// of a True condition after the phase.
const (
	ConditionQueued                = "Queued"
	ReasonWaitingForAdmission      = "WaitingForAdmission"
	ReasonAdmitted                 = "Admitted"
	ReasonUnqueued                 = "Unqueued"
	ReasonQueueingUnavailable      = "QueueingUnavailable"
	ReasonQueueNameRemoved         = "QueueNameRemoved"
	ReasonQueueNameRequired        = "QueueNameRequired"
	ReasonPrebuiltWorkloadMismatch = "PrebuiltWorkloadMismatch"
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

	// Progress is how far the job has come, as its pods last reported
	// through the progress subresource. Status writes leave it as it is.
	// +optional
	Progress *ProgressStatus `json:"progress,omitempty" protobuf:"bytes,13,opt,name=progress"`

	// Checkpoint is the job's last good checkpoint and the ones before it,
	// as its pods reported them through the checkpoint subresource, and the
	// controller's request for a new one while a stop waits. Status writes
	// leave the reports as they are.
	// +optional
	Checkpoint *CheckpointStatus `json:"checkpoint,omitempty" protobuf:"bytes,14,opt,name=checkpoint"`

	// Accounting is where the job's time went (queued, starting, running,
	// paused) and the work its interruptions lost.
	// +optional
	Accounting *Accounting `json:"accounting,omitempty" protobuf:"bytes,15,opt,name=accounting"`

	// Stall is what the controller saw when it last found the job Stalled:
	// the last report and the end of each replica's log.
	// +optional
	Stall *StallStatus `json:"stall,omitempty" protobuf:"bytes,16,opt,name=stall"`

	// Attempts are the job's last starts of its pods, oldest first, at most
	// 20 (MaxAttempts): when each started and ended and why, the checkpoint
	// it resumed from and the last it wrote, the steps it made and the
	// replicas that failed in it. They outlive the attempts' pods.
	// +listType=atomic
	// +optional
	Attempts []Attempt `json:"attempts,omitempty" protobuf:"bytes,17,rep,name=attempts"`

	// AttemptCount is how many attempts the job made in all, including
	// those no longer in attempts.
	// +optional
	AttemptCount int32 `json:"attemptCount,omitempty" protobuf:"varint,18,opt,name=attemptCount"`

	// SuspectNodes are nodes where a replica of the job failed for a reason
	// that blames the node: the node was lost, the kubelet evicted the pod,
	// a device failed at admission, the training container exited with one
	// of runPolicy.nodeFailureExitCodes, or the preflight check failed. The
	// job's next pods avoid them; other jobs still use them, and the
	// controller never cordons or taints a node. At most 16
	// (MaxSuspectNodes), the oldest dropped first; cleared when the job
	// finishes, and by writing the list empty (kubectl training
	// clear-suspect-nodes).
	// +listType=map
	// +listMapKey=name
	// +optional
	SuspectNodes []SuspectNode `json:"suspectNodes,omitempty" protobuf:"bytes,19,rep,name=suspectNodes"`

	// Runtime is the runtime the job was made from, as the apiserver
	// applied it when the job was created; absent for a job without
	// spec.runtimeRef. Status writes cannot change it.
	// +optional
	Runtime *AppliedRuntime `json:"runtime,omitempty" protobuf:"bytes,20,opt,name=runtime"`
}

// SuspectNode is a node the job's next pods avoid, and why.
type SuspectNode struct {
	// Name is the node's name.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`

	// Reason is NodeLost, Evicted, DeviceFailure, NodeFailureExitCode or
	// PreflightFailed.
	Reason string `json:"reason" protobuf:"bytes,2,opt,name=reason"`

	// Message says what happened, naming the replica.
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,3,opt,name=message"`

	// Time is when the controller found the node suspect.
	Time metav1.Time `json:"time" protobuf:"bytes,4,opt,name=time"`
}

// The reasons a node becomes suspect.
const (
	SuspectNodeLost            = "NodeLost"
	SuspectNodeEvicted         = "Evicted"
	SuspectNodeDeviceFailure   = "DeviceFailure"
	SuspectNodeFailureExitCode = "NodeFailureExitCode"
	SuspectNodePreflightFailed = "PreflightFailed"
)

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
