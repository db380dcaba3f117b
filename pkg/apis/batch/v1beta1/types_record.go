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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// +genclient
// +genclient:onlyVerbs=get,list,watch,delete,deleteCollection
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TrainingJobRecord is what the server keeps of a training job once the job
// is deleted, by a user, its TTL or its namespace's deletion: the job as it
// was last stored, its progress history thinned to a bound, and its last
// events. The server writes it; users read it and may delete it. Each
// namespace keeps a bounded number of records for a bounded time (the
// apiserver's --job-records-per-namespace and --job-record-retention), the
// oldest dropped first, and a record's size is bounded
// (1,507,328 bytes as stored, etcd's
// largest write less its overhead).
type TrainingJobRecord struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata. The name is the job's, a dash and the
	// first eight characters of its UID, so that jobs of the same name
	// deleted one after another each keep a record. The labels are the
	// job's, with job-name and job-kind.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// JobKind is the kind of the deleted job, for example PyTorchTrainingJob.
	JobKind string `json:"jobKind" protobuf:"bytes,2,opt,name=jobKind"`

	// JobName is the deleted job's name.
	JobName string `json:"jobName" protobuf:"bytes,3,opt,name=jobName"`

	// JobUID is the deleted job's UID.
	JobUID types.UID `json:"jobUID" protobuf:"bytes,4,opt,name=jobUID,casttype=k8s.io/apimachinery/pkg/types.UID"`

	// Phase is the job's phase when it was deleted.
	// +optional
	Phase JobPhase `json:"phase,omitempty" protobuf:"bytes,5,opt,name=phase,casttype=JobPhase"`

	// JobCreationTime is when the job was created.
	JobCreationTime metav1.Time `json:"jobCreationTime" protobuf:"bytes,6,opt,name=jobCreationTime"`

	// DeletionTime is when the job was deleted.
	DeletionTime metav1.Time `json:"deletionTime" protobuf:"bytes,7,opt,name=deletionTime"`

	// Job is the deleted job as last stored: its metadata (without
	// managedFields and kubectl's last-applied-configuration), spec and
	// status, with its apiVersion and kind. A record that would be too large
	// leaves out status.progress.history and the attempts' log lines.
	// +kubebuilder:pruning:PreserveUnknownFields
	Job runtime.RawExtension `json:"job" protobuf:"bytes,8,opt,name=job"`

	// Progress is the job's progress history (its progresshistory
	// subresource), oldest first, thinned to at most
	// MaxRecordProgressSamples by dropping every other older sample.
	// +listType=atomic
	// +optional
	Progress []ProgressSample `json:"progress,omitempty" protobuf:"bytes,9,rep,name=progress"`

	// ThinnedSamples counts the progress samples left out.
	// +optional
	ThinnedSamples int64 `json:"thinnedSamples,omitempty" protobuf:"varint,10,opt,name=thinnedSamples"`

	// Events are the job's last events, newest first, at most
	// MaxRecordEvents, each message cut to MaxRecordEventMessageBytes.
	// +listType=atomic
	// +optional
	Events []RecordedEvent `json:"events,omitempty" protobuf:"bytes,11,rep,name=events"`

	// LeftOut names what the record does not keep so as to stay within its
	// size: "progress" (thinned further), "events", "job.status" (all but
	// the phase, conditions and attempts), "job.spec".
	// +listType=atomic
	// +optional
	LeftOut []string `json:"leftOut,omitempty" protobuf:"bytes,12,rep,name=leftOut"`

	// StartTime is when the job first ran (its status.startTime).
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty" protobuf:"bytes,13,opt,name=startTime"`

	// CompletionTime is when the job finished (its status.completionTime).
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty" protobuf:"bytes,14,opt,name=completionTime"`
}

// RecordedEvent is one of a deleted job's events.
type RecordedEvent struct {
	// Type is Normal or Warning.
	Type string `json:"type" protobuf:"bytes,1,opt,name=type"`
	// Reason is the event's reason, for example SuccessfulCreate.
	Reason string `json:"reason" protobuf:"bytes,2,opt,name=reason"`
	// Message is what the event says.
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,3,opt,name=message"`
	// Count is how many times it happened.
	// +optional
	Count int32 `json:"count,omitempty" protobuf:"varint,4,opt,name=count"`
	// FirstTime is when it first happened.
	// +optional
	FirstTime metav1.Time `json:"firstTime,omitempty" protobuf:"bytes,5,opt,name=firstTime"`
	// LastTime is when it last happened.
	// +optional
	LastTime metav1.Time `json:"lastTime,omitempty" protobuf:"bytes,6,opt,name=lastTime"`
	// Source is the component that reported it.
	// +optional
	Source string `json:"source,omitempty" protobuf:"bytes,7,opt,name=source"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TrainingJobRecordList is a list of TrainingJobRecords.
type TrainingJobRecordList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Items are the records in the list.
	Items []TrainingJobRecord `json:"items" protobuf:"bytes,2,rep,name=items"`
}

func init() {
	recordTypes = append(recordTypes, &TrainingJobRecord{}, &TrainingJobRecordList{})
}
