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
	"os"
	"path/filepath"
	"testing"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// examplesDir holds the example manifests, relative to this package.
const examplesDir = "../../../../artifacts/examples"

// kwokAnnotations make a pod simulated by the test stack's kwok terminate; the
// end-to-end tests rely on every example carrying them.
var kwokAnnotations = []string{"kwok.tensorstack.dev/exit-code", "kwok.tensorstack.dev/run-duration"}

func exampleFiles(t testing.TB) []string {
	files, err := filepath.Glob(filepath.Join(examplesDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no examples found in %s", examplesDir)
	}
	return files
}

// TestExamples takes every example manifest through the steps the API server
// takes (decode, default, convert, canonicalize) and validates it: each must
// be accepted as it is.
func TestExamples(t *testing.T) {
	for _, file := range exampleFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			versioned, gvk, err := testCodecs.UniversalDeserializer().Decode(data, nil, nil)
			if err != nil {
				t.Fatalf("decoding: %v", err)
			}
			if gvk.GroupVersion() != v1beta1.SchemeGroupVersion {
				t.Errorf("apiVersion is %s, want %s", gvk.GroupVersion(), v1beta1.SchemeGroupVersion)
			}
			obj, err := toInternal(versioned)
			if err != nil {
				t.Fatal(err)
			}
			job, ok := obj.(batch.TrainingJob)
			if !ok {
				t.Fatalf("%s is a %s, not a training job", file, gvk.Kind)
			}
			// kubectl fills in the namespace from its context.
			if job.GetNamespace() == "" {
				job.SetNamespace("default")
			}
			errs, err := validateCreate(obj)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range errs {
				t.Errorf("invalid: %v", e)
			}

			for i, replica := range job.CommonSpec().ReplicaSpecs {
				for _, key := range kwokAnnotations {
					if _, found := replica.Template.Annotations[key]; !found {
						t.Errorf("replica spec %d (%s): pod template lacks the annotation %s", i, replica.Type, key)
					}
				}
			}
		})
	}
}
