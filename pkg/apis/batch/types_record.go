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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TrainingJobRecord is what the server keeps of a deleted training job.
type TrainingJobRecord struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	JobKind         string      `json:"jobKind"`
	JobName         string      `json:"jobName"`
	JobUID          types.UID   `json:"jobUID"`
	Phase           JobPhase    `json:"phase,omitempty"`
	JobCreationTime metav1.Time `json:"jobCreationTime"`
	DeletionTime    metav1.Time `json:"deletionTime"`
	// Job is the deleted job, encoded as the group's served version.
	Job            runtime.RawExtension `json:"job"`
	Progress       []ProgressSample     `json:"progress,omitempty"`
	ThinnedSamples int64                `json:"thinnedSamples,omitempty"`
	Events         []RecordedEvent      `json:"events,omitempty"`
	LeftOut        []string             `json:"leftOut,omitempty"`
	StartTime      *metav1.Time         `json:"startTime,omitempty"`
	CompletionTime *metav1.Time         `json:"completionTime,omitempty"`
}

// RecordedEvent is one of a deleted job's events.
type RecordedEvent struct {
	Type      string      `json:"type"`
	Reason    string      `json:"reason"`
	Message   string      `json:"message,omitempty"`
	Count     int32       `json:"count,omitempty"`
	FirstTime metav1.Time `json:"firstTime,omitempty"`
	LastTime  metav1.Time `json:"lastTime,omitempty"`
	Source    string      `json:"source,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TrainingJobRecordList is a list of TrainingJobRecords.
type TrainingJobRecordList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TrainingJobRecord `json:"items"`
}

// The bounds of one record's parts.
const (
	// MaxRecordProgressSamples is the most progress samples a record keeps:
	// enough for a chart of the whole run.
	MaxRecordProgressSamples = 500
	// MaxRecordEvents is the most events a record keeps, the newest.
	MaxRecordEvents = 30
	// MaxRecordEventMessageBytes is the longest event message a record keeps.
	MaxRecordEventMessageBytes = 1024
	// MaxTrainingJobRecordBytes is the largest record, as JSON: well within
	// etcd's largest write, whatever the storage's encoding.
	MaxTrainingJobRecordBytes = 1 << 20
)

func init() {
	recordTypes = append(recordTypes, &TrainingJobRecord{}, &TrainingJobRecordList{})
}
