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

package validation

import (
	"testing"

	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

// TestTopologyRequests: the topology annotations Kueue's TAS reads, on the
// job (every pod together) or on a replica type's template, with the field
// path of each refusal.
func TestTopologyRequests(t *testing.T) {
	const (
		required  = batch.AnnotationRequiredTopology
		preferred = batch.AnnotationPreferredTopology
		rack      = "topology.example.com/rack"
		jobKey    = "metadata.annotations[" + required + "]"
		workerKey = "spec.replicaSpecs[1].template.metadata.annotations["
	)
	onJob := func(kv ...string) func(*batch.PyTorchTrainingJob) {
		return func(j *batch.PyTorchTrainingJob) {
			j.Annotations = map[string]string{}
			for i := 0; i < len(kv); i += 2 {
				j.Annotations[kv[i]] = kv[i+1]
			}
		}
	}
	onWorker := func(kv ...string) func(*batch.PyTorchTrainingJob) {
		return func(j *batch.PyTorchTrainingJob) {
			w := worker(&j.Spec.TrainingJobSpec)
			w.Template.Annotations = map[string]string{}
			for i := 0; i < len(kv); i += 2 {
				w.Template.Annotations[kv[i]] = kv[i+1]
			}
		}
	}
	cases := []struct {
		name string
		mods []func(*batch.PyTorchTrainingJob)
		want []wantErr
	}{
		{"the whole job, master and workers", []func(*batch.PyTorchTrainingJob){onJob(required, rack)}, nil},
		{"the whole job, preferred", []func(*batch.PyTorchTrainingJob){onJob(preferred, rack)}, nil},
		{"one replica type", []func(*batch.PyTorchTrainingJob){onWorker(required, rack)}, nil},
		{"not a label key", []func(*batch.PyTorchTrainingJob){onJob(required, "no spaces allowed")}, []wantErr{invalid(jobKey)}},
		{"empty", []func(*batch.PyTorchTrainingJob){onWorker(preferred, "")}, []wantErr{invalid(workerKey + preferred + "]")}},
		{"required and preferred", []func(*batch.PyTorchTrainingJob){onWorker(required, rack, preferred, rack)},
			[]wantErr{forbidden(workerKey + preferred + "]")}},
		{"job and replica type", []func(*batch.PyTorchTrainingJob){onJob(required, rack), onWorker(preferred, rack)},
			[]wantErr{forbidden(workerKey + preferred + "]")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidatePyTorchTrainingJob(ptJob(tc.mods...)), tc.want...)
		})
	}
	// Kueue places two pod sets together, one of a single pod: not three,
	// nor two of several pods; a type without replicas has no pod set.
	wholeTF := func(replicas map[batch.ReplicaType]int32) *batch.TensorFlowTrainingJob {
		return tfJob(func(j *batch.TensorFlowTrainingJob) {
			j.Annotations = map[string]string{required: rack}
			for i := range j.Spec.ReplicaSpecs {
				if n, ok := replicas[j.Spec.ReplicaSpecs[i].Type]; ok {
					j.Spec.ReplicaSpecs[i].Replicas = ptr.To(n)
				}
			}
		})
	}
	expectErrors(t, ValidateTensorFlowTrainingJob(wholeTF(nil)), invalid(jobKey))
	expectErrors(t, ValidateTensorFlowTrainingJob(wholeTF(map[batch.ReplicaType]int32{batch.ReplicaTypeChief: 0, batch.ReplicaTypePS: 2})),
		invalid(jobKey))
	expectErrors(t, ValidateTensorFlowTrainingJob(wholeTF(map[batch.ReplicaType]int32{batch.ReplicaTypePS: 0})))
	tfPerType := tfJob(func(j *batch.TensorFlowTrainingJob) {
		for i := range j.Spec.ReplicaSpecs {
			j.Spec.ReplicaSpecs[i].Template.Annotations = map[string]string{required: rack}
		}
	})
	expectErrors(t, ValidateTensorFlowTrainingJob(tfPerType))
}
