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

package kubeflow

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/install"
	"tensorstack.dev/training/pkg/apis/batch/validation"
)

// The steps the API server takes with a request body before it validates a
// new job: decode (strictly), default, convert to the internal version,
// canonicalize.

var (
	testScheme = newTestScheme()
	testCodecs = serializer.NewCodecFactory(testScheme, serializer.EnableStrict)
)

func newTestScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	return scheme
}

// serverErrors sends a converted job through those steps, as its JSON, and
// returns what create validation finds wrong with it.
func serverErrors(t *testing.T, obj runtime.Object) field.ErrorList {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("encoding the converted job: %v", err)
	}
	versioned, _, err := testCodecs.UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		t.Fatalf("decoding the converted job: %v", err)
	}
	testScheme.Default(versioned)
	internal, err := testScheme.ConvertToVersion(versioned, batch.SchemeGroupVersion)
	if err != nil {
		t.Fatalf("converting to the internal version: %v", err)
	}
	job, ok := internal.(batch.TrainingJob)
	if !ok {
		t.Fatalf("converted into %T, not a training job", internal)
	}
	if job.GetNamespace() == "" {
		job.SetNamespace("default") // kubectl fills it in from its context
	}
	if job.GetName() == "" && job.GetGenerateName() != "" {
		job.SetName(job.GetGenerateName() + "x7k2q") // the server generates the rest before it validates
	}
	switch job := internal.(type) {
	case *batch.TensorFlowTrainingJob:
		batch.CanonicalizeTensorFlowJob(job)
		return validation.ValidateTensorFlowTrainingJob(job)
	case *batch.PyTorchTrainingJob:
		batch.CanonicalizePyTorchJob(job)
		return validation.ValidatePyTorchTrainingJob(job)
	case *batch.XGBoostTrainingJob:
		batch.CanonicalizeXGBoostJob(job)
		return validation.ValidateXGBoostTrainingJob(job)
	case *batch.MPIJob:
		batch.CanonicalizeMPIJob(job)
		return validation.ValidateMPIJob(job)
	}
	t.Fatalf("no validation for %T", internal)
	return nil
}

// expectAccepted fails the test when our server would refuse the job.
func expectAccepted(t *testing.T, obj runtime.Object) {
	t.Helper()
	for _, err := range serverErrors(t, obj) {
		t.Errorf("refused by validation: %v", err)
	}
}

// Kubeflow manifests for the tests to change.
const (
	tfJobManifest = `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: mnist, namespace: team-a}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - {name: tensorflow, image: "tf:2.15", command: [python, train.py]}
`
	pyTorchJobManifest = `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: resnet, namespace: team-a}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - {name: pytorch, image: "torch:2.4", command: [python, train.py]}
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - {name: pytorch, image: "torch:2.4", command: [python, train.py]}
`
)

// manifest is base with each overlay merged into it: objects field by field,
// anything else replaced, a null removing the field.
func manifest(t *testing.T, base string, overlays ...string) string {
	t.Helper()
	var doc map[string]interface{}
	if err := yaml.Unmarshal([]byte(base), &doc); err != nil {
		t.Fatalf("base manifest: %v", err)
	}
	for _, overlay := range overlays {
		var o map[string]interface{}
		if err := yaml.Unmarshal([]byte(overlay), &o); err != nil {
			t.Fatalf("overlay %q: %v", overlay, err)
		}
		merge(doc, o)
	}
	data, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func merge(into, overlay map[string]interface{}) {
	for key, value := range overlay {
		sub, isObject := value.(map[string]interface{})
		existing, wasObject := into[key].(map[string]interface{})
		switch {
		case value == nil:
			delete(into, key)
		case isObject && wasObject:
			merge(existing, sub)
		default:
			into[key] = value
		}
	}
}

// convertOne converts a single-document manifest, failing the test on error.
func convertOne(t *testing.T, input string) Converted {
	t.Helper()
	out, err := Convert(strings.NewReader(input))
	if err != nil {
		t.Fatalf("Convert: %v\ninput:\n%s", err, input)
	}
	if len(out) != 1 {
		t.Fatalf("Convert returned %d jobs, want 1", len(out))
	}
	return out[0]
}

// fieldCase is a conversion that succeeds: the value the converted job has
// at path, and the warnings, exactly.
type fieldCase struct {
	name     string
	input    string
	path     string // dotted, with [i] to index a list and [*] for every element
	want     string // YAML
	warnings []string
}

func runFieldCases(t *testing.T, cases []fieldCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			converted := convertOne(t, tc.input)
			got := valueAt(t, converted.Object, tc.path)
			var want interface{}
			if err := yaml.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatalf("want: %v", err)
			}
			if diff := cmp.Diff(normalize(t, want), got); diff != "" {
				t.Errorf("%s differs (-want +got):\n%s", tc.path, diff)
			}
			expectWarnings(t, converted.Warnings, tc.warnings)
			expectAccepted(t, converted.Object)
		})
	}
}

func expectWarnings(t *testing.T, got []Warning, want []string) {
	t.Helper()
	gotStrings := make([]string, len(got))
	for i, w := range got {
		gotStrings[i] = w.String()
	}
	if diff := cmp.Diff(want, gotStrings, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("warnings differ (-want +got):\n%s", diff)
	}
}

// errorCase is a conversion that fails with exactly err.
type errorCase struct {
	name  string
	input string
	err   string
}

func runErrorCases(t *testing.T, cases []errorCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Convert(strings.NewReader(tc.input))
			if err == nil {
				t.Fatalf("Convert succeeded with %d jobs, want the error %q", len(out), tc.err)
			}
			if err.Error() != tc.err {
				t.Errorf("error differs\n got: %s\nwant: %s", err, tc.err)
			}
		})
	}
}

// normalize makes a value look as JSON decodes it, for comparison.
func normalize(t *testing.T, value interface{}) interface{} {
	t.Helper()
	data, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	var out interface{}
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// valueAt finds the value at a dotted path in an object's JSON form; a
// missing field is nil. [*] collects the rest of the path from every element.
func valueAt(t *testing.T, obj interface{}, path string) interface{} {
	t.Helper()
	value := normalize(t, obj)
	var walk func(value interface{}, steps []string) interface{}
	walk = func(value interface{}, steps []string) interface{} {
		if len(steps) == 0 || value == nil {
			return value
		}
		step := steps[0]
		if name, index, isIndex := strings.Cut(step, "["); isIndex {
			list, ok := walk(value, []string{name}).([]interface{})
			if !ok {
				t.Fatalf("%s: %s is not a list", path, name)
			}
			index = strings.TrimSuffix(index, "]")
			if index == "*" {
				all := make([]interface{}, len(list))
				for i, element := range list {
					all[i] = walk(element, steps[1:])
				}
				return all
			}
			i, err := strconv.Atoi(index)
			if err != nil || i >= len(list) {
				t.Fatalf("%s: no element %s in %s", path, index, name)
			}
			return walk(list[i], steps[1:])
		}
		object, ok := value.(map[string]interface{})
		if !ok {
			t.Fatalf("%s: %s is in %v, not an object", path, step, value)
		}
		return walk(object[step], steps[1:])
	}
	return walk(value, strings.Split(path, "."))
}

// jobOf returns the converted job's kind and name, for messages.
func jobOf(c Converted) string {
	kind := c.Object.GetObjectKind().GroupVersionKind().Kind
	if named, ok := c.Object.(interface{ GetName() string }); ok {
		return fmt.Sprintf("%s %s", kind, named.GetName())
	}
	return kind
}
