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

package podbuilder

import (
	"testing"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// TestAdaptersFollowTheTable: one adapter per row of the table of kinds, in
// its order, answering with the row's names, and found by kind and by job.
func TestAdaptersFollowTheTable(t *testing.T) {
	if len(Adapters) != len(batch.Kinds) {
		t.Fatalf("%d adapters, %d rows in batch.Kinds", len(Adapters), len(batch.Kinds))
	}
	for i, row := range batch.Kinds {
		a := Adapters[i]
		if a.Kind() != row.Kind || a.Resource() != row.Resource || a.TrainingContainerName() != row.TrainingContainer {
			t.Errorf("adapter %d answers %s, %s, %q; the row is %+v", i, a.Kind(), a.Resource(), a.TrainingContainerName(), row)
		}
		if got, ok := AdapterOf(row.Kind); !ok || got != a {
			t.Errorf("AdapterOf(%s) = %v, %v", row.Kind, got, ok)
		}
	}
	if _, ok := AdapterOf("Pod"); ok {
		t.Error("AdapterOf(Pod) found an adapter")
	}
	for job, want := range map[v1beta1.TrainingJob]string{
		&v1beta1.TensorFlowTrainingJob{}: batch.TensorFlowTrainingJobKind,
		&v1beta1.MPIJob{}:                batch.MPIJobKind,
	} {
		if a, err := AdapterFor(job); err != nil || a.Kind() != want {
			t.Errorf("AdapterFor(%T) = %v, %v; want %s's", job, a, err, want)
		}
	}
	if _, err := AdapterFor(nil); err == nil {
		t.Error("AdapterFor(nil) found an adapter")
	}
}
