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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch"
)

// runtimeOf is a TrainingRuntime in namespace team-a whose template holds
// a valid PyTorch job's spec, changed by mod.
func runtimeOf(mod func(*batch.TrainingJobTemplate)) *batch.TrainingRuntime {
	r := &batch.TrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Name: "torch-distributed", Namespace: "team-a"},
		Spec:       batch.TrainingRuntimeSpec{Template: batch.TrainingJobTemplate{Pytorch: &ptJob().Spec}},
	}
	if mod != nil {
		mod(&r.Spec.Template)
	}
	return r
}

func TestValidateTrainingRuntime(t *testing.T) {
	tests := []struct {
		name string
		r    *batch.TrainingRuntime
		want []wantErr
	}{
		{name: "a PyTorch template", r: runtimeOf(nil)},
		{name: "each kind", r: runtimeOf(func(tmpl *batch.TrainingJobTemplate) {
			tmpl.Pytorch, tmpl.Tensorflow = nil, &tfJob().Spec
		})},
		{name: "labels and annotations for the jobs", r: runtimeOf(func(tmpl *batch.TrainingJobTemplate) {
			tmpl.Labels = map[string]string{"team": "vision"}
			tmpl.Annotations = map[string]string{"owner": "platform"}
		})},
		{
			name: "no kind",
			r:    runtimeOf(func(tmpl *batch.TrainingJobTemplate) { tmpl.Pytorch = nil }),
			want: []wantErr{required("spec.template")},
		},
		{
			name: "two kinds",
			r:    runtimeOf(func(tmpl *batch.TrainingJobTemplate) { tmpl.Tensorflow = &tfJob().Spec }),
			want: []wantErr{forbidden("spec.template.tensorflow")},
		},
		{
			name: "the kind's spec is checked where it is",
			r: runtimeOf(func(tmpl *batch.TrainingJobTemplate) {
				tmpl.Pytorch.ReplicaSpecs[1].Template.Spec.Containers[0].Image = ""
			}),
			want: []wantErr{required("spec.template.pytorch.replicaSpecs[1].template.spec.containers[0].image")},
		},
		{
			name: "a label that is no label",
			r:    runtimeOf(func(tmpl *batch.TrainingJobTemplate) { tmpl.Labels = map[string]string{"a b": "c"} }),
			want: []wantErr{invalid("spec.template.labels")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectErrors(t, ValidateTrainingRuntime(tt.r), tt.want...)
		})
	}
}

func TestValidateRuntimeScope(t *testing.T) {
	namespaced := runtimeOf(nil)
	namespaced.Namespace = ""
	expectErrors(t, ValidateTrainingRuntime(namespaced), required("metadata.namespace"))

	cluster := &batch.ClusterTrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "mpi", Namespace: "team-a"}, Spec: runtimeOf(nil).Spec}
	expectErrors(t, ValidateClusterTrainingRuntime(cluster), forbidden("metadata.namespace"))
}

// TestEveryKindMayBeTemplated: each kind of the table has its field in a
// runtime's template and its check, so a new kind cannot be left out of
// the runtimes.
func TestEveryKindMayBeTemplated(t *testing.T) {
	fields := batch.TemplateKinds()
	for _, k := range batch.Kinds {
		if fields[k.Kind] == "" {
			t.Errorf("%s has no field in a runtime's template (types_<kind>.go registers it)", k.Kind)
		}
		if templateValidators[k.Kind] == nil {
			t.Errorf("%s has no check of a runtime's template (validation/<kind>.go registers it)", k.Kind)
		}
	}
	if len(fields) != len(batch.Kinds) {
		t.Errorf("the template holds %d kinds, the table has %d", len(fields), len(batch.Kinds))
	}
}
