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

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ClusterTrainingRuntime is one way of training that a platform team
// publishes for the whole cluster.
type ClusterTrainingRuntime struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec TrainingRuntimeSpec `json:"spec,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ClusterTrainingRuntimeList is a list of ClusterTrainingRuntimes.
type ClusterTrainingRuntimeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []ClusterTrainingRuntime `json:"items"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TrainingRuntime is one way of training that a team publishes for its
// namespace.
type TrainingRuntime struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec TrainingRuntimeSpec `json:"spec,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TrainingRuntimeList is a list of TrainingRuntimes.
type TrainingRuntimeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []TrainingRuntime `json:"items"`
}

// TrainingRuntimeSpec is what a runtime decides for the jobs made from it.
type TrainingRuntimeSpec struct {
	// Template is the job that a job naming the runtime starts from.
	Template TrainingJobTemplate `json:"template"`
}

// TrainingJobTemplate is the spec of exactly one job kind, and the labels
// and annotations of the jobs made from it.
type TrainingJobTemplate struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`

	Pytorch    *PyTorchTrainingJobSpec    `json:"pytorch,omitempty"`
	Tensorflow *TensorFlowTrainingJobSpec `json:"tensorflow,omitempty"`
	Xgboost    *XGBoostTrainingJobSpec    `json:"xgboost,omitempty"`
	MPI        *MPIJobSpec                `json:"mpi,omitempty"`
	Generic    *GenericJobSpec            `json:"generic,omitempty"`
}

func init() {
	runtimeTypes = append(runtimeTypes,
		&ClusterTrainingRuntime{}, &ClusterTrainingRuntimeList{}, &TrainingRuntime{}, &TrainingRuntimeList{})
}
