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

package trainingjob

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

// TestKindsFollowTheTable: a storage for every row of batch.Kinds, in its
// order, each making the type of its kind.
func TestKindsFollowTheTable(t *testing.T) {
	if len(Kinds) != len(batch.Kinds) {
		t.Fatalf("%d storages, %d rows in batch.Kinds", len(Kinds), len(batch.Kinds))
	}
	for i, row := range batch.Kinds {
		if got := Kinds[i].KindInfo(); !reflect.DeepEqual(got, row) {
			t.Errorf("storage %d is of %+v, the table's row is %+v", i, got, row)
		}
	}
	check := func(info batch.KindInfo, job any) {
		if got := reflect.TypeOf(job).Elem().Name(); got != info.Kind {
			t.Errorf("the storage of %s makes a %s", info.Kind, got)
		}
	}
	check(tensorFlowKind.Info, tensorFlowKind.New())
	check(pyTorchKind.Info, pyTorchKind.New())
	check(xgboostKind.Info, xgboostKind.New())
	check(genericKind.Info, genericKind.New())
	check(mpiKind.Info, mpiKind.New())
}

func TestElasticWarning(t *testing.T) {
	job := &batch.PyTorchTrainingJob{}
	if w := pyTorchKind.Warnings(job); len(w) != 0 {
		t.Errorf("warnings for a job without elastic: %v", w)
	}
	job.Spec.Elastic = &batch.ElasticConfig{Enabled: false, MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](4)}
	if w := pyTorchKind.Warnings(job); len(w) != 0 {
		t.Errorf("warnings for a job with elastic switched off: %v", w)
	}
	job.Spec.Elastic.Enabled = true
	w := pyTorchKind.Warnings(job)
	if len(w) != 1 || !strings.HasPrefix(w[0], "spec.elastic: without spec.torchrunConfig.enabled") {
		t.Errorf("warnings = %v, want one saying the elastic job runs without torchrun", w)
	}
	job.Spec.TorchrunConfig = &batch.TorchrunConfig{Enabled: true}
	if w := pyTorchKind.Warnings(job); len(w) != 0 {
		t.Errorf("warnings for an elastic job with torchrun: %v", w)
	}
}
