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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Bounds of the checkpoint contract, the stall record and the accounting,
// so that a job's status stays small.
const (
	// MaxCheckpointHistory is how many checkpoints before the latest
	// status.checkpoint.history keeps.
	MaxCheckpointHistory = 10
	// MaxCheckpointPathBytes bounds a reported checkpoint's path.
	MaxCheckpointPathBytes = 1024
	// MaxCheckpointIntervalSeconds is a week.
	MaxCheckpointIntervalSeconds = 7 * 24 * 3600
	// MaxStopGraceSeconds bounds how long a stop waits for a checkpoint.
	MaxStopGraceSeconds = 3600
	// DefaultStopGraceSeconds is the wait when the job names none (or the
	// pods' shortest termination grace period, when that is shorter).
	DefaultStopGraceSeconds = 30
	// MaxRecentInterruptions is how many interruptions
	// status.accounting.recent keeps.
	MaxRecentInterruptions = 10
	// MaxStallLogReplicas is how many replicas' log tails a stall records.
	MaxStallLogReplicas = 16
	// MaxStallLogLines and MaxStallLogBytes bound each replica's tail.
	MaxStallLogLines = 10
	MaxStallLogBytes = 2048
)

// CheckpointPolicy says where a job keeps its checkpoints and how long a
// stop waits for one.
type CheckpointPolicy struct {
	// VolumeName names the pod volume that holds the checkpoints; every
	// replica type's training container mounts it, at the same path.
	VolumeName string `json:"volumeName"`
	// IntervalSeconds is how often the job means to write a checkpoint.
	IntervalSeconds *int32 `json:"intervalSeconds,omitempty"`
	// StopGraceSeconds is how long a stop waits for a checkpoint newer
	// than its request before it removes the pods.
	StopGraceSeconds *int32 `json:"stopGraceSeconds,omitempty"`
}

// StallPolicy is what a Stalled job does.
type StallPolicy string

const (
	StallPolicyNone    StallPolicy = "None"
	StallPolicyRestart StallPolicy = "Restart"
	StallPolicyFail    StallPolicy = "Fail"
)

// CheckpointValues describe one checkpoint, as the job reports it.
type CheckpointValues struct {
	Path      string `json:"path"`
	Step      *int64 `json:"step,omitempty"`
	Epoch     *int32 `json:"epoch,omitempty"`
	SizeBytes *int64 `json:"sizeBytes,omitempty"`
}

// CheckpointRecord is a stored checkpoint report.
type CheckpointRecord struct {
	CheckpointValues `json:",inline"`
	Reporter         string           `json:"reporter,omitempty"`
	ReportTime       metav1.MicroTime `json:"reportTime"`
	Node             string           `json:"node,omitempty"`
}

// CheckpointStatus is the job's checkpoints and the controller's request
// for a new one.
type CheckpointStatus struct {
	Latest        *CheckpointRecord  `json:"latest,omitempty"`
	History       []CheckpointRecord `json:"history,omitempty"`
	RequestTime   *metav1.MicroTime  `json:"requestTime,omitempty"`
	RequestReason string             `json:"requestReason,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// CheckpointReport is the body of a POST to a job's checkpoint
// subresource, and the answer to it.
type CheckpointReport struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	CheckpointValues  `json:",inline"`
	// ReportTime, in an answer, is when the server stored the report.
	ReportTime *metav1.MicroTime `json:"reportTime,omitempty"`
}

// AccountingState is what a job spends its time on.
type AccountingState string

const (
	AccountingQueued   AccountingState = "Queued"
	AccountingStarting AccountingState = "Starting"
	AccountingRunning  AccountingState = "Running"
	AccountingPaused   AccountingState = "Paused"
)

// Accounting is where a job's time went, and the work it lost.
type Accounting struct {
	QueuedSeconds      int64           `json:"queuedSeconds,omitempty"`
	StartingSeconds    int64           `json:"startingSeconds,omitempty"`
	RunningSeconds     int64           `json:"runningSeconds,omitempty"`
	PausedSeconds      int64           `json:"pausedSeconds,omitempty"`
	State              AccountingState `json:"state,omitempty"`
	StateSince         *metav1.Time    `json:"stateSince,omitempty"`
	Interruptions      int32           `json:"interruptions,omitempty"`
	LostReplicaSeconds int64           `json:"lostReplicaSeconds,omitempty"`
	LostSteps          int64           `json:"lostSteps,omitempty"`
	Recent             []Interruption  `json:"recent,omitempty"`
}

// Interruption is one stop of a running job and the work it lost.
type Interruption struct {
	Time               metav1.Time `json:"time"`
	Reason             string      `json:"reason"`
	Replicas           int32       `json:"replicas"`
	LostSeconds        int64       `json:"lostSeconds"`
	LostReplicaSeconds int64       `json:"lostReplicaSeconds"`
	LostSteps          *int64      `json:"lostSteps,omitempty"`
	ResumeStep         *int64      `json:"resumeStep,omitempty"`
	CheckpointAnswered *bool       `json:"checkpointAnswered,omitempty"`
}

// StallStatus is what the controller saw when it found the job Stalled.
type StallStatus struct {
	Time     metav1.Time      `json:"time"`
	Reporter string           `json:"reporter,omitempty"`
	Step     *int64           `json:"step,omitempty"`
	Epoch    *int32           `json:"epoch,omitempty"`
	Logs     []ReplicaLogTail `json:"logs,omitempty"`
}

// ReplicaLogTail is the end of one replica's log.
type ReplicaLogTail struct {
	Name  string `json:"name"`
	Lines string `json:"lines,omitempty"`
	Error string `json:"error,omitempty"`
}
