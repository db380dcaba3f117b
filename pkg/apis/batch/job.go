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
)

// TrainingJob is the view of a job that code shared by every kind works on:
// the registry, validation and defaults reach the common spec and the status
// through it, and each kind adds only what is its own.
type TrainingJob interface {
	runtime.Object
	metav1.Object
	// CommonSpec returns the part of the spec every kind shares.
	CommonSpec() *TrainingJobSpec
	// JobStatus returns the job's status.
	JobStatus() *TrainingJobStatus
	// TrainingContainerName is the name of the container that runs the
	// training program (TrainingContainer picks the first without one).
	TrainingContainerName() string
}

// ElasticJob is a job of a kind that may change its replica count while it
// runs: PyTorch, and GenericJob by opt-in. MPI workers, TensorFlow and
// XGBoost replicas cannot.
type ElasticJob interface {
	TrainingJob
	// ElasticSpec is the job's spec.elastic, nil when it has none; the
	// scale subresource writes its expectedReplicas.
	ElasticSpec() *ElasticConfig
}

// IsFinished says whether the phase is final: a Succeeded or Failed job never
// runs again.
func (p JobPhase) IsFinished() bool { return p == JobSucceeded || p == JobFailed }
