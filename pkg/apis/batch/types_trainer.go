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
	corev1 "k8s.io/api/core/v1"
)

// The runtime kinds a job's spec.runtimeRef may name.
const (
	ClusterTrainingRuntimeKind = "ClusterTrainingRuntime"
	TrainingRuntimeKind        = "TrainingRuntime"
)

// RuntimeRef names the runtime a job starts from.
type RuntimeRef struct {
	Name string `json:"name"`
	// Kind is ClusterTrainingRuntimeKind or TrainingRuntimeKind; canonical
	// jobs always carry it.
	Kind string `json:"kind,omitempty"`
}

// Trainer is what the person who trains gives a job made from a runtime.
type Trainer struct {
	Image            string                       `json:"image,omitempty"`
	Command          []string                     `json:"command,omitempty"`
	Args             []string                     `json:"args,omitempty"`
	Env              []corev1.EnvVar              `json:"env,omitempty"`
	NumNodes         *int32                       `json:"numNodes,omitempty"`
	ResourcesPerNode *corev1.ResourceRequirements `json:"resourcesPerNode,omitempty"`
	Script           *TrainerScript               `json:"script,omitempty"`
}

// TrainerScript is a program the job carries to its pods.
type TrainerScript struct {
	Name   string `json:"name"`
	Source string `json:"source"`
}

// AppliedRuntime records the runtime a job was made from.
type AppliedRuntime struct {
	Kind            string `json:"kind"`
	Name            string `json:"name"`
	UID             string `json:"uid"`
	ResourceVersion string `json:"resourceVersion"`
	Hash            string `json:"hash"`
}
