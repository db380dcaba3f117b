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

// CheckpointValues describe one checkpoint, as the training code reports it.
type CheckpointValues struct {
	// Path is where the checkpoint lies: absolute, or relative to the
	// checkpoint directory (TENSORSTACK_CHECKPOINT_DIR), and inside it in
	// either case. At most 1024 bytes.
	Path string `json:"path" protobuf:"bytes,1,opt,name=path"`

	// Step is the training step the checkpoint holds the state after; a
	// new pod resumes at step + 1.
	// +optional
	Step *int64 `json:"step,omitempty" protobuf:"varint,2,opt,name=step"`

	// Epoch is the number of passes over the data the checkpoint holds.
	// +optional
	Epoch *int32 `json:"epoch,omitempty" protobuf:"varint,3,opt,name=epoch"`

	// SizeBytes is the checkpoint's size.
	// +optional
	SizeBytes *int64 `json:"sizeBytes,omitempty" protobuf:"varint,4,opt,name=sizeBytes"`
}

// CheckpointRecord is a checkpoint the server accepted.
type CheckpointRecord struct {
	CheckpointValues `json:",inline" protobuf:"bytes,1,opt,name=checkpointValues"`

	// Reporter is who sent the report: the name of the job's pod, or the
	// user name of anyone else allowed to report.
	// +optional
	Reporter string `json:"reporter,omitempty" protobuf:"bytes,2,opt,name=reporter"`

	// ReportTime is when the server received the report.
	ReportTime metav1.MicroTime `json:"reportTime" protobuf:"bytes,3,opt,name=reportTime"`

	// Node is the node the reporting pod ran on. A checkpoint written to
	// the node's own disk (a hostPath volume) is only there, so the job's
	// next pods prefer that node.
	// +optional
	Node string `json:"node,omitempty" protobuf:"bytes,4,opt,name=node"`
}

// CheckpointStatus is a job's checkpoints and the controller's request for a
// new one.
type CheckpointStatus struct {
	// Latest is the last good checkpoint: the one new pods resume from
	// (TENSORSTACK_RESUME_FROM and TENSORSTACK_RESUME_STEP). Its path is
	// always absolute.
	// +optional
	Latest *CheckpointRecord `json:"latest,omitempty" protobuf:"bytes,1,opt,name=latest"`

	// History holds the checkpoints before latest, oldest first, at most 10
	// (MaxCheckpointHistory).
	// +listType=atomic
	// +optional
	History []CheckpointRecord `json:"history,omitempty" protobuf:"bytes,2,rep,name=history"`

	// RequestTime is when the controller asked the pods for a checkpoint
	// before it stops them; a report received after it answers the request.
	// Cleared once the stop is done.
	// +optional
	RequestTime *metav1.MicroTime `json:"requestTime,omitempty" protobuf:"bytes,3,opt,name=requestTime"`

	// RequestReason is the stop the request is for: Pause, Evicted,
	// ScaleDown, RestartJob or Stalled.
	// +optional
	RequestReason string `json:"requestReason,omitempty" protobuf:"bytes,4,opt,name=requestReason"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// CheckpointReport is the body of a POST to a job's checkpoint subresource,
// and the answer to it: a checkpoint the job finished writing. As with
// progress, the job's own pods may send one without any RBAC grant; anyone
// else needs create on <kind>/checkpoint. The step may not go below the
// latest checkpoint's unless the reporting pod started after it (the job
// was restarted without resuming).
type CheckpointReport struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	CheckpointValues `json:",inline" protobuf:"bytes,2,opt,name=checkpointValues"`

	// ReportTime, in the answer, is when the server stored the report; it
	// is ignored in a request.
	// +optional
	ReportTime *metav1.MicroTime `json:"reportTime,omitempty" protobuf:"bytes,3,opt,name=reportTime"`
}

// AccountingState is what a job spends its time on.
// +enum
type AccountingState string

const (
	// AccountingQueued: waiting for admission by its queue.
	AccountingQueued AccountingState = "Queued"
	// AccountingStarting: admitted, with replicas not yet running.
	AccountingStarting AccountingState = "Starting"
	// AccountingRunning: every replica runs.
	AccountingRunning AccountingState = "Running"
	// AccountingPaused: paused by a user, or evicted and stopped.
	AccountingPaused AccountingState = "Paused"
)

// Accounting is where a job's time went and the work it lost. The seconds
// count up to stateSince; the time since then belongs to state.
type Accounting struct {
	// QueuedSeconds is the time spent waiting for admission.
	// +optional
	QueuedSeconds int64 `json:"queuedSeconds,omitempty" protobuf:"varint,1,opt,name=queuedSeconds"`
	// StartingSeconds is the time spent with some replica not yet running.
	// +optional
	StartingSeconds int64 `json:"startingSeconds,omitempty" protobuf:"varint,2,opt,name=startingSeconds"`
	// RunningSeconds is the time every replica ran.
	// +optional
	RunningSeconds int64 `json:"runningSeconds,omitempty" protobuf:"varint,3,opt,name=runningSeconds"`
	// PausedSeconds is the time spent paused.
	// +optional
	PausedSeconds int64 `json:"pausedSeconds,omitempty" protobuf:"varint,4,opt,name=pausedSeconds"`

	// State is what the job does now: Queued, Starting, Running or Paused;
	// empty once it finished.
	// +optional
	State AccountingState `json:"state,omitempty" protobuf:"bytes,5,opt,name=state,casttype=AccountingState"`
	// StateSince is when the job entered state.
	// +optional
	StateSince *metav1.Time `json:"stateSince,omitempty" protobuf:"bytes,6,opt,name=stateSince"`

	// Interruptions counts every stop of running replicas that sent the
	// training back to its last checkpoint.
	// +optional
	Interruptions int32 `json:"interruptions,omitempty" protobuf:"varint,7,opt,name=interruptions"`
	// LostReplicaSeconds is the work all interruptions lost: for each, the
	// time since the last checkpoint (or since the replicas started, when
	// none is newer) times the replicas that ran.
	// +optional
	LostReplicaSeconds int64 `json:"lostReplicaSeconds,omitempty" protobuf:"varint,8,opt,name=lostReplicaSeconds"`
	// LostSteps is the steps all interruptions lost, as far as the job
	// reports steps.
	// +optional
	LostSteps int64 `json:"lostSteps,omitempty" protobuf:"varint,9,opt,name=lostSteps"`
	// Recent holds the last interruptions, oldest first, at most 10
	// (MaxRecentInterruptions).
	// +listType=atomic
	// +optional
	Recent []Interruption `json:"recent,omitempty" protobuf:"bytes,10,rep,name=recent"`
}

// Interruption is one stop of a job's running replicas and the work it lost.
type Interruption struct {
	// Time is when the replicas were stopped.
	Time metav1.Time `json:"time" protobuf:"bytes,1,opt,name=time"`
	// Reason is the stop: Paused, Evicted, ScaledDown, RestartJob,
	// ReplicaRestart or Stalled.
	Reason string `json:"reason" protobuf:"bytes,2,opt,name=reason"`
	// Replicas is how many replicas ran and were stopped.
	Replicas int32 `json:"replicas" protobuf:"varint,3,opt,name=replicas"`
	// LostSeconds is the time since the last checkpoint, or since the
	// replicas started when no checkpoint is newer.
	LostSeconds int64 `json:"lostSeconds" protobuf:"varint,4,opt,name=lostSeconds"`
	// LostReplicaSeconds is lostSeconds times replicas.
	LostReplicaSeconds int64 `json:"lostReplicaSeconds" protobuf:"varint,5,opt,name=lostReplicaSeconds"`
	// LostSteps is the last reported step minus the checkpoint's step, when
	// both are known.
	// +optional
	LostSteps *int64 `json:"lostSteps,omitempty" protobuf:"varint,6,opt,name=lostSteps"`
	// ResumeStep is the step of the checkpoint the job resumes from.
	// +optional
	ResumeStep *int64 `json:"resumeStep,omitempty" protobuf:"varint,7,opt,name=resumeStep"`
	// CheckpointAnswered says, for a stop that asked for a checkpoint,
	// whether one arrived within the grace period.
	// +optional
	CheckpointAnswered *bool `json:"checkpointAnswered,omitempty" protobuf:"varint,8,opt,name=checkpointAnswered"`
}

// StallStatus is what the controller saw when it found a job Stalled.
type StallStatus struct {
	// Time is when the job was found Stalled.
	Time metav1.Time `json:"time" protobuf:"bytes,1,opt,name=time"`
	// Reporter sent the last progress report that moved the step or epoch.
	// +optional
	Reporter string `json:"reporter,omitempty" protobuf:"bytes,2,opt,name=reporter"`
	// Step and Epoch are where the job stood.
	// +optional
	Step *int64 `json:"step,omitempty" protobuf:"varint,3,opt,name=step"`
	// +optional
	Epoch *int32 `json:"epoch,omitempty" protobuf:"varint,4,opt,name=epoch"`
	// Logs are the last lines of each replica's training container, at most
	// 16 replicas (MaxStallLogReplicas), 10 lines and 2048 bytes each; kept
	// only before a Restart or Fail.
	// +listType=atomic
	// +optional
	Logs []ReplicaLogTail `json:"logs,omitempty" protobuf:"bytes,5,rep,name=logs"`
}

// ReplicaLogTail is the end of one replica's log.
type ReplicaLogTail struct {
	// Name is the replica's pod name.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// Lines are the log's last lines.
	// +optional
	Lines string `json:"lines,omitempty" protobuf:"bytes,2,opt,name=lines"`
	// Error says why the log could not be read.
	// +optional
	Error string `json:"error,omitempty" protobuf:"bytes,3,opt,name=error"`
}
