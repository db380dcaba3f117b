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

	"tensorstack.dev/training/pkg/apis/batch"
)

// TrainingJob is the view of a versioned job that clients shared by every
// kind, such as the controller, work on.
type TrainingJob interface {
	runtime.Object
	metav1.Object
	// CommonSpec returns the part of the spec every kind shares.
	CommonSpec() *TrainingJobSpec
	// JobStatus returns the job's status.
	JobStatus() *TrainingJobStatus
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

// SuspectNodeNames are the names in status.suspectNodes, in order.
func (s *TrainingJobStatus) SuspectNodeNames() []string {
	names := make([]string, 0, len(s.SuspectNodes))
	for _, n := range s.SuspectNodes {
		names = append(names, n.Name)
	}
	return names
}

// IsFinished says whether the phase is final: a Succeeded or Failed job never
// runs again.
func (p JobPhase) IsFinished() bool { return p == JobSucceeded || p == JobFailed }

// PauseEnabled says whether the spec asks for the job to be paused, the
// deprecated enable deciding as batch.ModeEnabled says.
func PauseEnabled(spec *TrainingJobSpec) bool {
	m := spec.RunMode
	return m != nil && m.Pause != nil && batch.ModeEnabled(m.Pause.Enabled, m.Pause.Enable)
}

// DebugEnabled says whether the spec asks for debug mode, the deprecated
// enable deciding as batch.ModeEnabled says.
func DebugEnabled(spec *TrainingJobSpec) bool {
	m := spec.RunMode
	return m != nil && m.Debug != nil && batch.ModeEnabled(m.Debug.Enabled, m.Debug.Enable)
}
