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
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"tensorstack.dev/training/pkg/apis/batch"
)

// TestFieldLabelsOfEveryKind: every kind of the table is registered, with
// its list, by its own file, and may be listed by its phase, and by no field
// it does not have.
func TestFieldLabelsOfEveryKind(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, row := range batch.Kinds {
		kind := row.Kind
		for _, name := range []string{kind, kind + "List"} {
			if !scheme.Recognizes(SchemeGroupVersion.WithKind(name)) {
				t.Errorf("%s is not registered in %s", name, SchemeGroupVersion)
			}
		}
		gvk := SchemeGroupVersion.WithKind(kind)
		if label, value, err := scheme.ConvertFieldLabel(gvk, FieldStatusPhase, "Running"); err != nil || label != FieldStatusPhase || value != "Running" {
			t.Errorf("%s: %s=Running converts to %s=%s, %v", kind, FieldStatusPhase, label, value, err)
		}
		if _, _, err := scheme.ConvertFieldLabel(gvk, "spec.runPolicy", "x"); err == nil {
			t.Errorf("%s: spec.runPolicy accepted as a field label", kind)
		}
	}
}
