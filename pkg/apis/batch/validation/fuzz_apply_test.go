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
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/endpoints/openapi"
	openapibuilder3 "k8s.io/kube-openapi/pkg/builder3"
	openapicommon "k8s.io/kube-openapi/pkg/common"
	openapiutil "k8s.io/kube-openapi/pkg/util"
	"sigs.k8s.io/yaml"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	generatedopenapi "tensorstack.dev/training/pkg/generated/openapi"
	"tensorstack.dev/training/pkg/patchcheck"
)

// applyTarget is a stored job and the field manager that applies to its kind.
type applyTarget struct {
	job          storedJob
	fieldManager *managedfields.FieldManager
	// empty is the live object of an apply that creates the job.
	empty runtime.Object
}

// FuzzApply takes arbitrary bytes through server-side apply as the server
// does: unmarshal the YAML or JSON into an unstructured object, then let the
// field manager check it against the kinds' OpenAPI schema, merge it into
// the live job (none, for a create, and a stored one) and convert the result
// into the typed job, which is then defaulted, converted and validated.
// Whatever the configuration, none of it may panic.
func FuzzApply(f *testing.F) {
	targets := applyTargets(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		configuration := map[string]any{}
		if err := yaml.Unmarshal(data, &configuration); err != nil {
			return
		}
		for _, target := range targets {
			// The server applies only a configuration of the URL's kind.
			applied := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(configuration)}
			applied.SetGroupVersionKind(target.job.kind)
			for _, live := range []runtime.Object{target.empty, target.job.internal} {
				// Guarded, as on the server, which answers a panic with 400.
				var obj runtime.Object
				if err := patchcheck.Guard(func() (err error) {
					obj, err = target.fieldManager.Apply(live.DeepCopyObject(), applied.DeepCopy(), "fuzz", true)
					return err
				}); err != nil || obj == nil {
					continue
				}
				versioned, err := testScheme.ConvertToVersion(obj, v1beta1.SchemeGroupVersion)
				if err != nil {
					t.Fatalf("an applied %s did not convert back: %v", target.job.kind.Kind, err)
				}
				exerciseUpdate(exercise(t, versioned), live)
			}
		}
	})
}

// applyTargets builds, for each stored job, a field manager on the schema
// the server computes managedFields on: the kinds' models from the same
// OpenAPI definitions and namer the server publishes them with.
func applyTargets(tb testing.TB) []applyTarget {
	tb.Helper()
	// Not genericapiserver's default config: importing the server would
	// triple what the fuzzing build instruments.
	config := &openapicommon.OpenAPIV3Config{
		GetDefinitions:    generatedopenapi.GetOpenAPIDefinitions,
		GetDefinitionName: openapi.NewDefinitionNamer(testScheme).GetDefinitionName,
	}
	definitions, err := openapibuilder3.BuildOpenAPIDefinitionsForResources(config,
		openapiutil.GetCanonicalTypeName(&v1beta1.TensorFlowTrainingJob{}),
		openapiutil.GetCanonicalTypeName(&v1beta1.PyTorchTrainingJob{}),
		openapiutil.GetCanonicalTypeName(&v1beta1.XGBoostTrainingJob{}),
		openapiutil.GetCanonicalTypeName(&v1beta1.GenericJob{}),
		openapiutil.GetCanonicalTypeName(&v1beta1.MPIJob{}))
	if err != nil {
		tb.Fatalf("building the OpenAPI models of the job kinds: %v", err)
	}
	typeConverter, err := managedfields.NewTypeConverter(definitions, false)
	if err != nil {
		tb.Fatalf("building the type converter: %v", err)
	}
	var targets []applyTarget
	for _, job := range storedJobs(tb) {
		fieldManager, err := managedfields.NewDefaultFieldManager(typeConverter, testScheme, testScheme, testScheme,
			job.kind, batch.SchemeGroupVersion, "", nil)
		if err != nil {
			tb.Fatalf("field manager of %s: %v", job.kind.Kind, err)
		}
		empty, err := testScheme.New(batch.SchemeGroupVersion.WithKind(job.kind.Kind))
		if err != nil {
			tb.Fatal(err)
		}
		targets = append(targets, applyTarget{job: job, fieldManager: fieldManager, empty: empty})
	}
	return targets
}

// TestFuzzedVerbsReachValidation checks that the patch and apply fuzzers do
// what they claim on known inputs: a change goes through to validation,
// which refuses a hostile value, and apply refuses a field the schema lacks.
func TestFuzzedVerbsReachValidation(t *testing.T) {
	jobs := storedJobs(t)
	tensorflow := jobs[0]
	expectRefused := func(what string, obj runtime.Object) {
		t.Helper()
		if obj == nil {
			t.Fatalf("%s: no job came out", what)
		}
		internal := exercise(t, obj)
		if errs, _ := validateCreate(internal); len(errs) == 0 {
			t.Errorf("%s: validation accepted backoffLimit 2147483647", what)
		}
	}

	patched, err := jsonpatch.MergePatch(tensorflow.json, []byte(`{"spec":{"runPolicy":{"backoffLimit":2147483647}}}`))
	if err != nil {
		t.Fatal(err)
	}
	decoded, _, err := testCodecs.UniversalDeserializer().Decode(patched, &tensorflow.kind, nil)
	if err != nil {
		t.Fatal(err)
	}
	expectRefused("merge patch", decoded)
	expectRefused("strategic merge patch", strategicMergePatch(tensorflow, []byte(`{"spec":{"runPolicy":{"backoffLimit":2147483647}}}`)))

	target := applyTargets(t)[0]
	configuration := func(extra string) *unstructured.Unstructured {
		applied := map[string]any{}
		source := "spec:\n  runPolicy:\n    backoffLimit: 2147483647\n" + extra
		if err := yaml.Unmarshal([]byte(source), &applied); err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{Object: applied}
		obj.SetGroupVersionKind(target.job.kind)
		return obj
	}
	applied, err := target.fieldManager.Apply(target.job.internal.DeepCopyObject(), configuration(""), "fuzz", true)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	versioned, err := testScheme.ConvertToVersion(applied, v1beta1.SchemeGroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	expectRefused("apply", versioned)
	_, err = target.fieldManager.Apply(target.job.internal.DeepCopyObject(), configuration("  bogus: 1\n"), "fuzz", true)
	if err == nil || !strings.Contains(err.Error(), ".spec.bogus: field not declared in schema") {
		t.Errorf("apply of an unknown field: %v, want the schema to refuse it", err)
	}
}
