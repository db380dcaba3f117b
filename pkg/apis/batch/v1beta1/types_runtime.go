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

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ClusterTrainingRuntime is one way of training that a platform team
// publishes for the whole cluster: the job kind, images, launcher,
// resources, volumes, scheduling and policies that a job naming it in
// spec.runtimeRef starts from. A job copies what it takes when it is
// created, so changing or deleting a runtime changes no job that exists.
type ClusterTrainingRuntime struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Spec is what the runtime decides for the jobs made from it.
	// +optional
	Spec TrainingRuntimeSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ClusterTrainingRuntimeList is a list of ClusterTrainingRuntimes.
type ClusterTrainingRuntimeList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Items are the runtimes in the list.
	Items []ClusterTrainingRuntime `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TrainingRuntime is one way of training that a team publishes for the
// jobs of its namespace, as a ClusterTrainingRuntime does for the cluster's.
type TrainingRuntime struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Spec is what the runtime decides for the jobs made from it.
	// +optional
	Spec TrainingRuntimeSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TrainingRuntimeList is a list of TrainingRuntimes.
type TrainingRuntimeList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Items are the runtimes in the list.
	Items []TrainingRuntime `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// TrainingRuntimeSpec is what a runtime decides for the jobs made from it.
type TrainingRuntimeSpec struct {
	// Template is the job that a job naming the runtime starts from.
	Template TrainingJobTemplate `json:"template" protobuf:"bytes,1,opt,name=template"`
}

// TrainingJobTemplate is the spec of exactly one job kind, whose field
// names the kind of the jobs made from it, and the labels and annotations
// those jobs get.
type TrainingJobTemplate struct {
	// Labels are added to every job made from the runtime.
	// +optional
	Labels map[string]string `json:"labels,omitempty" protobuf:"bytes,1,rep,name=labels"`

	// Annotations are added to every job made from the runtime.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty" protobuf:"bytes,2,rep,name=annotations"`

	// Pytorch makes PyTorchTrainingJobs.
	// +optional
	Pytorch *PyTorchTrainingJobSpec `json:"pytorch,omitempty" protobuf:"bytes,3,opt,name=pytorch"`

	// Tensorflow makes TensorFlowTrainingJobs.
	// +optional
	Tensorflow *TensorFlowTrainingJobSpec `json:"tensorflow,omitempty" protobuf:"bytes,4,opt,name=tensorflow"`

	// Xgboost makes XGBoostTrainingJobs.
	// +optional
	Xgboost *XGBoostTrainingJobSpec `json:"xgboost,omitempty" protobuf:"bytes,5,opt,name=xgboost"`

	// MPI makes MPIJobs.
	// +optional
	MPI *MPIJobSpec `json:"mpi,omitempty" protobuf:"bytes,6,opt,name=mpi"`

	// Generic makes GenericJobs.
	// +optional
	Generic *GenericJobSpec `json:"generic,omitempty" protobuf:"bytes,7,opt,name=generic"`
}

func init() {
	runtimeTypes = append(runtimeTypes,
		&ClusterTrainingRuntime{}, &ClusterTrainingRuntimeList{}, &TrainingRuntime{}, &TrainingRuntimeList{})
}
