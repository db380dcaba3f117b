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
)

// TestServesEveryKind: the server makes a storage for every row of the
// table of kinds, in its order, and for nothing else.
func TestServesEveryKind(t *testing.T) {
	if len(kindStorages) != len(batch.Kinds) {
		t.Fatalf("%d storages, %d rows in batch.Kinds", len(kindStorages), len(batch.Kinds))
	}
	for i, row := range batch.Kinds {
		if kindStorages[i].resource != row.Resource {
			t.Errorf("storage %d serves %s, the table's row is %s", i, kindStorages[i].resource, row.Resource)
		}
	}
}
