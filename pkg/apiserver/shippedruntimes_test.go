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

package apiserver

import (
	"testing"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/validation"
)

// TestShippedRuntimes: one runtime per kind, each valid as a runtime, on
// the image given, keeping the checkpoint contract, and marked as the
// server's.
func TestShippedRuntimes(t *testing.T) {
	runtimes, err := ShippedRuntimes("registry.example/train:7")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, rt := range runtimes {
		stored := rt.DeepCopy()
		Scheme.Default(stored)
		internal := &batch.ClusterTrainingRuntime{}
		if err := Scheme.Convert(stored, internal, nil); err != nil {
			t.Fatalf("%s: %v", rt.Name, err)
		}
		if errs := validation.ValidateClusterTrainingRuntime(internal); len(errs) > 0 {
			t.Errorf("%s is refused: %v", rt.Name, errs)
		}
		tmpl := &internal.Spec.Template
		kinds[tmpl.Kind()] = rt.Name
		common := tmpl.CommonSpec()
		if common.RunPolicy.Checkpoint == nil {
			t.Errorf("%s has no checkpoint contract", rt.Name)
		}
		for _, r := range common.ReplicaSpecs {
			for _, c := range r.Template.Spec.Containers {
				if c.Image != "registry.example/train:7" {
					t.Errorf("%s %s: image %q", rt.Name, r.Type, c.Image)
				}
			}
		}
		if rt.Annotations[AnnotationAutoUpdate] != "true" {
			t.Errorf("%s: annotations %v", rt.Name, rt.Annotations)
		}
	}
	for _, k := range batch.Kinds {
		if kinds[k.Kind] == "" {
			t.Errorf("no shipped runtime makes %ss (%v)", k.Kind, kinds)
		}
	}
	if kinds[batch.PyTorchTrainingJobKind] != "torch-distributed" || kinds[batch.MPIJobKind] != "mpi" {
		t.Errorf("runtimes by kind %v", kinds)
	}
}
