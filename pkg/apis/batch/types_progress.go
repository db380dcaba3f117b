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

// Bounds of a progress report, so that a job's status stays small whatever
// its training code sends.
const (
	MaxProgressMetrics         = 8
	MaxProgressMetricNameChars = 63
	MaxProgressMetricValueLen  = 32
	MaxProgressMessageBytes    = 256
	// MaxProgressRemainingSeconds is ten years.
	MaxProgressRemainingSeconds = 10 * 365 * 24 * 3600
	// MaxProgressHistory is how many stored reports status.progress.history
	// keeps the metrics of: enough for a chart of the recent trend, at most
	// a few kilobytes.
	MaxProgressHistory = 30
	// MaxProgressHistorySamples is how many samples a job's progresshistory
	// subresource keeps; beyond it, the oldest are thinned.
	MaxProgressHistorySamples = 4096
)

// ProgressValues is how far a job has come, as its training code reports it.
type ProgressValues struct {
	Percent          *int32           `json:"percent,omitempty"`
	Step             *int64           `json:"step,omitempty"`
	TotalSteps       *int64           `json:"totalSteps,omitempty"`
	Epoch            *int32           `json:"epoch,omitempty"`
	TotalEpochs      *int32           `json:"totalEpochs,omitempty"`
	RemainingSeconds *int64           `json:"remainingSeconds,omitempty"`
	Metrics          []ProgressMetric `json:"metrics,omitempty"`
	Message          string           `json:"message,omitempty"`
}

// ProgressMetric is one named figure of a report.
type ProgressMetric struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// ProgressStatus is the last stored report and what the server made of it.
type ProgressStatus struct {
	ProgressValues      `json:",inline"`
	EstimatedFinishTime *metav1.Time      `json:"estimatedFinishTime,omitempty"`
	Reporter            string            `json:"reporter,omitempty"`
	ReportTime          *metav1.MicroTime `json:"reportTime,omitempty"`
	CoalescedReports    int64             `json:"coalescedReports,omitempty"`
	// AdvanceTime is when a stored report last changed the step or epoch.
	AdvanceTime *metav1.MicroTime `json:"advanceTime,omitempty"`
	History     []ProgressSample  `json:"history,omitempty"`
}

// ProgressSample is the metrics of one stored report, with the step and
// epoch the job was at.
type ProgressSample struct {
	ReportTime metav1.MicroTime `json:"reportTime"`
	Step       *int64           `json:"step,omitempty"`
	Epoch      *int32           `json:"epoch,omitempty"`
	Metrics    []ProgressMetric `json:"metrics"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ProgressReport is the body of a POST to a job's progress subresource, and
// the answer to it.
type ProgressReport struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	ProgressValues    `json:",inline"`
	Status            ProgressReportStatus `json:"status,omitempty"`
}

// ProgressReportStatus says whether a report was stored at once or held back.
type ProgressReportStatus struct {
	Stored    bool         `json:"stored,omitempty"`
	StoreTime *metav1.Time `json:"storeTime,omitempty"`
	Replaced  bool         `json:"replaced,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ProgressHistory is the answer to a GET of a job's progresshistory
// subresource: the metrics of all its stored reports.
type ProgressHistory struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Samples           []ProgressSample `json:"samples,omitempty"`
	ThinnedSamples    int64            `json:"thinnedSamples,omitempty"`
}
