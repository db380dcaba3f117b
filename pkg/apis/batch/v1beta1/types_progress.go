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

// ProgressValues is how far a job has come, in the words of its own training
// code. Every field is optional; a report carries at least one.
type ProgressValues struct {
	// Percent is the share of the work done, from 0 to 100. Without it, the
	// server derives it from step and totalSteps, or from epoch and
	// totalEpochs.
	// +optional
	Percent *int32 `json:"percent,omitempty" protobuf:"varint,1,opt,name=percent"`

	// Step is the number of training steps done.
	// +optional
	Step *int64 `json:"step,omitempty" protobuf:"varint,2,opt,name=step"`

	// TotalSteps is the number of steps the job runs; at least step.
	// +optional
	TotalSteps *int64 `json:"totalSteps,omitempty" protobuf:"varint,3,opt,name=totalSteps"`

	// Epoch is the number of passes over the data done.
	// +optional
	Epoch *int32 `json:"epoch,omitempty" protobuf:"varint,4,opt,name=epoch"`

	// TotalEpochs is the number of passes the job makes; at least epoch.
	// +optional
	TotalEpochs *int32 `json:"totalEpochs,omitempty" protobuf:"varint,5,opt,name=totalEpochs"`

	// RemainingSeconds is the training code's own estimate of the time it
	// still needs. Without it, the server estimates from the rate of
	// progress between reports.
	// +optional
	RemainingSeconds *int64 `json:"remainingSeconds,omitempty" protobuf:"varint,6,opt,name=remainingSeconds"`

	// Metrics are named figures of the training, such as loss, accuracy or
	// samples/s, at most 8 (MaxProgressMetrics). kubectl get -o wide shows
	// the first.
	// +listType=map
	// +listMapKey=name
	// +optional
	Metrics []ProgressMetric `json:"metrics,omitempty" protobuf:"bytes,7,rep,name=metrics"`

	// Message is a short note for people, at most 256 bytes
	// (MaxProgressMessageBytes).
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,8,opt,name=message"`
}

// ProgressMetric is one named figure of a progress report.
type ProgressMetric struct {
	// Name of the metric: letters, digits and "_", "-", ".", "/", starting
	// with a letter; at most 63 characters.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`

	// Value is a decimal number, such as "0.0213" or "1.5e3"; at most 32
	// characters.
	Value string `json:"value" protobuf:"bytes,2,opt,name=value"`
}

// ProgressStatus is the last progress report that reached storage, and what
// the server made of it. A report of metrics or a message alone keeps the
// percent, steps, epochs and estimate of the report before it.
type ProgressStatus struct {
	ProgressValues `json:",inline" protobuf:"bytes,1,opt,name=values"`

	// EstimatedFinishTime is when the job is expected to finish: the report
	// time plus the reported remainingSeconds, or, without those, what the
	// rate of progress since the previous stored report predicts.
	// +optional
	EstimatedFinishTime *metav1.Time `json:"estimatedFinishTime,omitempty" protobuf:"bytes,2,opt,name=estimatedFinishTime"`

	// Reporter is who sent the report: the name of the job's pod, or the
	// user name of anyone else allowed to report.
	// +optional
	Reporter string `json:"reporter,omitempty" protobuf:"bytes,3,opt,name=reporter"`

	// ReportTime is when the server received the report.
	// +optional
	ReportTime *metav1.MicroTime `json:"reportTime,omitempty" protobuf:"bytes,4,opt,name=reportTime"`

	// CoalescedReports counts the reports the server accepted but never
	// stored, because a later one replaced them within the same write
	// interval. A job's progress reaches storage at most once per interval.
	// +optional
	CoalescedReports int64 `json:"coalescedReports,omitempty" protobuf:"varint,5,opt,name=coalescedReports"`

	// History holds the metrics of the last stored reports that carried
	// any, oldest first, at most 30 (MaxProgressHistory): the recent trend
	// of the loss, say, which kubectl training status draws. Reports held
	// back by the write interval are not in it.
	// +listType=atomic
	// +optional
	History []ProgressSample `json:"history,omitempty" protobuf:"bytes,6,rep,name=history"`

	// AdvanceTime is when a stored report last changed the step or epoch;
	// progressDeadlineSeconds counts from here.
	// +optional
	AdvanceTime *metav1.MicroTime `json:"advanceTime,omitempty" protobuf:"bytes,7,opt,name=advanceTime"`
}

// ProgressSample is the metrics of one stored progress report, with the
// step and epoch the job had reached.
type ProgressSample struct {
	// ReportTime is when the server received the report.
	ReportTime metav1.MicroTime `json:"reportTime" protobuf:"bytes,1,opt,name=reportTime"`

	// Step is the report's step, or the last one reported before it.
	// +optional
	Step *int64 `json:"step,omitempty" protobuf:"varint,2,opt,name=step"`

	// Epoch is the report's epoch, or the last one reported before it.
	// +optional
	Epoch *int32 `json:"epoch,omitempty" protobuf:"varint,3,opt,name=epoch"`

	// Metrics are the report's metrics.
	// +listType=map
	// +listMapKey=name
	Metrics []ProgressMetric `json:"metrics" protobuf:"bytes,4,rep,name=metrics"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ProgressReport is the body of a POST to a job's progress subresource, and
// the answer to it. The job's own pods may send one without any RBAC grant;
// anyone else needs create on <kind>/progress.
type ProgressReport struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	ProgressValues `json:",inline" protobuf:"bytes,2,opt,name=values"`

	// Status is what the server did with the report; it is ignored in a
	// request.
	// +optional
	Status ProgressReportStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// ProgressReportStatus says whether a report was stored at once or held back.
type ProgressReportStatus struct {
	// Stored is true when the report was written to the job with this
	// request, false when it was held back until the job's next write
	// interval.
	// +optional
	Stored bool `json:"stored,omitempty" protobuf:"varint,1,opt,name=stored"`

	// StoreTime is when a held-back report will be written, unless a later
	// report replaces it first.
	// +optional
	StoreTime *metav1.Time `json:"storeTime,omitempty" protobuf:"bytes,2,opt,name=storeTime"`

	// Replaced is true when the report replaced an earlier held-back one,
	// which will thus never be stored.
	// +optional
	Replaced bool `json:"replaced,omitempty" protobuf:"varint,3,opt,name=replaced"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ProgressHistory is the answer to a GET of a job's progresshistory
// subresource: the metrics of every stored progress report of the job, where
// status.progress.history holds only the last MaxProgressHistory. It is kept
// beside the job, not in it, so that lists and watches of jobs stay small,
// and it is deleted with the job.
type ProgressHistory struct {
	metav1.TypeMeta `json:",inline"`
	// ObjectMeta names the job.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Samples are the metrics of the stored reports that carried any,
	// oldest first. The newest are all there; when there are more than
	// MaxProgressHistorySamples (4096), older ones are thinned out, every
	// other one dropped, so that the whole run stays in view at a coarser
	// grain.
	// +listType=atomic
	// +optional
	Samples []ProgressSample `json:"samples,omitempty" protobuf:"bytes,2,rep,name=samples"`

	// ThinnedSamples counts the samples dropped by the thinning.
	// +optional
	ThinnedSamples int64 `json:"thinnedSamples,omitempty" protobuf:"varint,3,opt,name=thinnedSamples"`
}
