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
	"k8s.io/apimachinery/pkg/types"
)

// Attempt is one start of a job's pods: the first start, or a start after
// a whole-job restart, a pause, a preemption, an elastic resize or a stall.
// A replica restarted alone stays within its attempt and is listed among
// its failed replicas.
type Attempt struct {
	// Number counts the job's attempts from 1.
	Number int32 `json:"number" protobuf:"varint,1,opt,name=number"`

	// StartTime is when the controller created the attempt's pods.
	StartTime metav1.Time `json:"startTime" protobuf:"bytes,2,opt,name=startTime"`

	// EndTime is when the attempt ended; unset while it runs.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty" protobuf:"bytes,3,opt,name=endTime"`

	// Reason is why the attempt ended, one word: the stop that ended it
	// (RestartJob, Stalled, Pause, Evicted, Resize) or, for the last one,
	// the job's outcome (Succeeded, or the reason of its Failed condition).
	// +optional
	Reason string `json:"reason,omitempty" protobuf:"bytes,4,opt,name=reason"`

	// Message says the same for people, in at most 512 bytes.
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,5,opt,name=message"`

	// ResumedFrom is the checkpoint the attempt's pods were given to resume
	// from: the job's latest when they were created.
	// +optional
	ResumedFrom *AttemptCheckpoint `json:"resumedFrom,omitempty" protobuf:"bytes,6,opt,name=resumedFrom"`

	// LastCheckpoint is the newest checkpoint the attempt reported.
	// +optional
	LastCheckpoint *AttemptCheckpoint `json:"lastCheckpoint,omitempty" protobuf:"bytes,7,opt,name=lastCheckpoint"`

	// Steps is how many steps the attempt made: its last reported step
	// minus the step it resumed from. Set when it ends, if it reported one.
	// +optional
	Steps *int64 `json:"steps,omitempty" protobuf:"varint,8,opt,name=steps"`

	// FailedReplicas are the first replicas that failed during the attempt,
	// at most 4 (MaxAttemptFailedReplicas), each with the end of its log,
	// read before its pod was deleted. Only the newest 4 attempts
	// (MaxAttemptsWithFailedReplicas) list them; older ones keep the count.
	// +listType=atomic
	// +optional
	FailedReplicas []FailedReplica `json:"failedReplicas,omitempty" protobuf:"bytes,9,rep,name=failedReplicas"`

	// FailedReplicaCount counts every replica failure of the attempt,
	// including those beyond failedReplicas.
	// +optional
	FailedReplicaCount int32 `json:"failedReplicaCount,omitempty" protobuf:"varint,10,opt,name=failedReplicaCount"`
}

// AttemptCheckpoint names a checkpoint an attempt resumed from or wrote.
type AttemptCheckpoint struct {
	// Path is where the checkpoint is, as its reporter gave it.
	Path string `json:"path" protobuf:"bytes,1,opt,name=path"`

	// Step is the training step it holds, when reported.
	// +optional
	Step *int64 `json:"step,omitempty" protobuf:"varint,2,opt,name=step"`
}

// FailedReplica is a replica whose pod failed during an attempt.
type FailedReplica struct {
	// Name is the failed pod's name.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`

	// UID is the failed pod's UID.
	// +optional
	UID types.UID `json:"uid,omitempty" protobuf:"bytes,2,opt,name=uid,casttype=k8s.io/apimachinery/pkg/types.UID"`

	// Node is the node the pod ran on.
	// +optional
	Node string `json:"node,omitempty" protobuf:"bytes,3,opt,name=node"`

	// ExitCode is the training container's exit code, when it is known.
	// +optional
	ExitCode *int32 `json:"exitCode,omitempty" protobuf:"varint,4,opt,name=exitCode"`

	// Reason is how it ended, in the kubelet's or the eviction's word:
	// Error, OOMKilled, Evicted, DeletedWhileRunning, ...
	// +optional
	Reason string `json:"reason,omitempty" protobuf:"bytes,5,opt,name=reason"`

	// Time is when the controller saw the failure.
	Time metav1.Time `json:"time" protobuf:"bytes,6,opt,name=time"`

	// Logs are the last lines of the training container's log, at most 20
	// lines and 2048 bytes (MaxAttemptLogLines, MaxAttemptLogBytes).
	// +optional
	Logs string `json:"logs,omitempty" protobuf:"bytes,7,opt,name=logs"`

	// LogError says why the log could not be read, in at most 256 bytes.
	// +optional
	LogError string `json:"logError,omitempty" protobuf:"bytes,8,opt,name=logError"`
}
