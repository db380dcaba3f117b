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
	"k8s.io/apimachinery/pkg/types"
)

// Bounds of status.attempts. Only the newest attempts list their failed
// replicas, each with a log tail, so that the whole history stays within
// 112 KiB at every bound (a test in v1beta1 measures it) however often a
// large job fails; a real one takes a few KiB.
const (
	// MaxAttempts is how many attempts status.attempts keeps.
	MaxAttempts = 20
	// MaxAttemptFailedReplicas is how many failed replicas an attempt
	// lists: the first, which usually tell the cause.
	MaxAttemptFailedReplicas = 4
	// MaxAttemptsWithFailedReplicas is how many of the newest attempts
	// list their failed replicas; older ones keep only the count.
	MaxAttemptsWithFailedReplicas = 4
	// MaxAttemptLogLines and MaxAttemptLogBytes bound a failed replica's
	// log tail.
	MaxAttemptLogLines = 20
	MaxAttemptLogBytes = 2048
	// MaxAttemptMessageBytes bounds an attempt's message.
	MaxAttemptMessageBytes = 512
	// MaxAttemptLogErrorBytes bounds why a log tail could not be read.
	MaxAttemptLogErrorBytes = 256
)

// Attempt is one start of a job's pods; see v1beta1.Attempt.
type Attempt struct {
	Number             int32              `json:"number"`
	StartTime          metav1.Time        `json:"startTime"`
	EndTime            *metav1.Time       `json:"endTime,omitempty"`
	Reason             string             `json:"reason,omitempty"`
	Message            string             `json:"message,omitempty"`
	ResumedFrom        *AttemptCheckpoint `json:"resumedFrom,omitempty"`
	LastCheckpoint     *AttemptCheckpoint `json:"lastCheckpoint,omitempty"`
	Steps              *int64             `json:"steps,omitempty"`
	FailedReplicas     []FailedReplica    `json:"failedReplicas,omitempty"`
	FailedReplicaCount int32              `json:"failedReplicaCount,omitempty"`
}

// AttemptCheckpoint names a checkpoint an attempt resumed from or wrote.
type AttemptCheckpoint struct {
	Path string `json:"path"`
	Step *int64 `json:"step,omitempty"`
}

// FailedReplica is a replica whose pod failed during an attempt.
type FailedReplica struct {
	Name     string      `json:"name"`
	UID      types.UID   `json:"uid,omitempty"`
	Node     string      `json:"node,omitempty"`
	ExitCode *int32      `json:"exitCode,omitempty"`
	Reason   string      `json:"reason,omitempty"`
	Time     metav1.Time `json:"time"`
	Logs     string      `json:"logs,omitempty"`
	LogError string      `json:"logError,omitempty"`
}
