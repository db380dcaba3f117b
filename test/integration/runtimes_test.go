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

package integration

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/integration/framework"
)

// torchTemplate is a runtime's template of a PyTorch job: a master and a
// worker on the given image.
func torchTemplate(image string) v1beta1.TrainingJobTemplate {
	specs := replicaSpecs(v1beta1.PyTorchContainerName, []v1beta1.ReplicaType{v1beta1.ReplicaTypeMaster, v1beta1.ReplicaTypeWorker})
	for i := range specs {
		specs[i].Template.Spec.Containers[0].Image = image
	}
	return v1beta1.TrainingJobTemplate{
		Labels:  map[string]string{"runtime": "torch"},
		Pytorch: &v1beta1.PyTorchTrainingJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{ReplicaSpecs: specs}},
	}
}

// TestRuntimes stores, reads, lists as a table, changes and refuses
// runtimes of both scopes.
func TestRuntimes(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	namespaced := s.Client.BatchV1beta1().TrainingRuntimes("team-a")
	cluster := s.Client.BatchV1beta1().ClusterTrainingRuntimes()

	created, err := cluster.Create(ctx, &v1beta1.ClusterTrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Name: "torch-distributed"},
		Spec:       v1beta1.TrainingRuntimeSpec{Template: torchTemplate("registry.example/train:1")},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create a ClusterTrainingRuntime: %v", err)
	}
	if created.Generation != 1 || created.Namespace != "" {
		t.Errorf("created: generation %d namespace %q, want 1 and none", created.Generation, created.Namespace)
	}
	// Stored defaulted, as a job's spec is.
	if created.Spec.Template.Pytorch.RunPolicy.BackoffLimit == nil {
		t.Errorf("the template's run policy was not defaulted: %+v", created.Spec.Template.Pytorch.RunPolicy)
	}

	// A change of the spec is a new generation; of the labels, not.
	created.Spec.Template.Pytorch.ReplicaSpecs[1].Template.Spec.Containers[0].Image = "registry.example/train:2"
	updated, err := cluster.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if updated.Generation != 2 {
		t.Errorf("generation after a spec change %d, want 2", updated.Generation)
	}
	updated.Labels = map[string]string{"team": "platform"}
	if relabelled, err := cluster.Update(ctx, updated, metav1.UpdateOptions{}); err != nil || relabelled.Generation != 2 {
		t.Errorf("generation after a label change %v (%v), want 2", relabelled.Generation, err)
	}

	if _, err := namespaced.Create(ctx, &v1beta1.TrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Name: "tf-ps"},
		Spec: v1beta1.TrainingRuntimeSpec{Template: v1beta1.TrainingJobTemplate{Tensorflow: &v1beta1.TensorFlowTrainingJobSpec{
			TrainingJobSpec: v1beta1.TrainingJobSpec{ReplicaSpecs: replicaSpecs(v1beta1.TensorFlowContainerName, []v1beta1.ReplicaType{v1beta1.ReplicaTypeWorker})},
		}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create a TrainingRuntime: %v", err)
	}
	if list, err := namespaced.List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 1 {
		t.Errorf("list in team-a: %v, %v", list, err)
	}
	if list, err := s.Client.BatchV1beta1().TrainingRuntimes("team-b").List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
		t.Errorf("list in team-b: %v, %v", list, err)
	}

	// kubectl get's table: name, kind, image, age.
	table := &metav1.Table{}
	if err := restClient(t, s).Get().AbsPath("/apis/batch.tensorstack.dev/v1beta1/clustertrainingruntimes").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Into(table); err != nil {
		t.Fatalf("get as a table: %v", err)
	}
	var columns []string
	for _, c := range table.ColumnDefinitions {
		columns = append(columns, c.Name)
	}
	if strings.Join(columns, ",") != "Name,Kind,Image,Age" || len(table.Rows) != 1 {
		t.Fatalf("table columns %v, %d rows", columns, len(table.Rows))
	}
	if cells := table.Rows[0].Cells; cells[0] != "torch-distributed" || cells[1] != "PyTorchTrainingJob" || cells[2] != "registry.example/train:1" {
		t.Errorf("row %v", cells)
	}

	// Refused, with the field named, and nothing stored.
	bad := []struct {
		name     string
		template v1beta1.TrainingJobTemplate
		field    string
	}{
		{"no kind", v1beta1.TrainingJobTemplate{}, "spec.template"},
		{"two kinds", func() v1beta1.TrainingJobTemplate {
			tmpl := torchTemplate("registry.example/train:1")
			tmpl.Generic = &v1beta1.GenericJobSpec{TrainingJobSpec: tmpl.Pytorch.TrainingJobSpec}
			return tmpl
		}(), "spec.template.pytorch"}, // the first kind by name, generic, is the one it holds
		{"no image", torchTemplate(""), "spec.template.pytorch.replicaSpecs[0].template.spec.containers[0].image"},
	}
	for _, tc := range bad {
		_, err := namespaced.Create(ctx, &v1beta1.TrainingRuntime{
			ObjectMeta: metav1.ObjectMeta{Name: "bad"},
			Spec:       v1beta1.TrainingRuntimeSpec{Template: tc.template},
		}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: err %v, want a 422 naming %s", tc.name, err, tc.field)
		}
	}
	if _, err := namespaced.Get(ctx, "bad", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused runtime was stored: %v", err)
	}
}
