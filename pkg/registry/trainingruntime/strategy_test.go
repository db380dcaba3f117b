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

package trainingruntime

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch"
)

func runtimeWith(image string) *batch.TrainingRuntime {
	return &batch.TrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Name: "xgb", Namespace: "team-a"},
		Spec: batch.TrainingRuntimeSpec{Template: batch.TrainingJobTemplate{Xgboost: &batch.XGBoostTrainingJobSpec{
			TrainingJobSpec: batch.TrainingJobSpec{ReplicaSpecs: []batch.ReplicaSpec{{
				Type:     "Master", // as Kubeflow spells it
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "xgboost", Image: image}}}},
			}}},
		}}},
	}
}

// TestGeneration: a runtime starts at generation 1, a change of its spec
// makes a new one, any other change does not; the stored spellings are the
// canonical ones.
func TestGeneration(t *testing.T) {
	s := strategy{scope: namespacedScope}
	ctx := context.Background()
	r := runtimeWith("train:1")
	s.PrepareForCreate(ctx, r)
	if r.Generation != 1 {
		t.Fatalf("generation on create %d, want 1", r.Generation)
	}
	if got := r.Spec.Template.Xgboost.ReplicaSpecs[0].Type; got != batch.ReplicaTypeMaster {
		t.Errorf("replica type stored as %q, want %q", got, batch.ReplicaTypeMaster)
	}

	relabelled := r.DeepCopy()
	relabelled.Labels = map[string]string{"team": "a"}
	s.PrepareForUpdate(ctx, relabelled, r)
	if relabelled.Generation != 1 {
		t.Errorf("generation after a label change %d, want 1", relabelled.Generation)
	}

	changed := r.DeepCopy()
	changed.Spec.Template.Xgboost.ReplicaSpecs[0].Template.Spec.Containers[0].Image = "train:2"
	s.PrepareForUpdate(ctx, changed, r)
	if changed.Generation != 2 {
		t.Errorf("generation after a spec change %d, want 2", changed.Generation)
	}
}

// TestTable: a row per runtime, with the kind it makes and the image of
// its first replica type; a runtime without a kind shows none.
func TestTable(t *testing.T) {
	c := tableConvertor{scope: namespacedScope}
	list := &batch.TrainingRuntimeList{Items: []batch.TrainingRuntime{*runtimeWith("train:1"), {ObjectMeta: metav1.ObjectMeta{Name: "empty"}}}}
	table, err := c.ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(table.ColumnDefinitions) != 4 || len(table.Rows) != 2 {
		t.Fatalf("%d columns, %d rows; want 4 and 2", len(table.ColumnDefinitions), len(table.Rows))
	}
	if cells := table.Rows[0].Cells; cells[0] != "xgb" || cells[1] != "XGBoostTrainingJob" || cells[2] != "train:1" {
		t.Errorf("row %v", cells)
	}
	if cells := table.Rows[1].Cells; cells[1] != "" || cells[2] != "" {
		t.Errorf("row of a runtime without a kind %v", cells)
	}
}
