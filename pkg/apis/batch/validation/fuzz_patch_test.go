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
	"fmt"
	"sync/atomic"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	kjson "sigs.k8s.io/json"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/patchcheck"
)

// The server's bounds on JSON patches (k8s.io/apiserver's patch handler and
// its default JSONPatchMaxCopyBytes): without them a few copy operations
// would double the document again and again.
const (
	maxJSONPatchOperations = 10000
	maxJSONPatchCopyBytes  = 3 * 1024 * 1024
)

// storedJobSources are the jobs the patch and apply fuzzers change: one of
// each kind, with keyed lists, run modes and a status, as stored jobs have.
var storedJobSources = []string{
	`{"apiVersion":"batch.tensorstack.dev/v1beta1","kind":"TensorFlowTrainingJob",
	  "metadata":{"name":"mnist","namespace":"default","resourceVersion":"7","generation":2,"labels":{"team":"a"}},
	  "spec":{"replicaSpecs":[
	    {"type":"chief","template":{"spec":{"containers":[{"name":"tensorflow","image":"tf:2","ports":[{"name":"tfjob-port","containerPort":2222}]}]}}},
	    {"type":"ps","replicas":2,"template":{"spec":{"containers":[{"name":"tensorflow","image":"tf:2","resources":{"limits":{"cpu":"1"}}}]}}},
	    {"type":"worker","replicas":4,"template":{"spec":{"nodeSelector":{"gpu":"a100"},
	      "tolerations":[{"key":"gpu","operator":"Exists","effect":"NoSchedule"}],
	      "containers":[{"name":"tensorflow","image":"tf:2","env":[{"name":"A","value":"1"}],"resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}}],
	  "runPolicy":{"backoffLimit":3,"activeDeadlineSeconds":3600},
	  "runMode":{"pause":{"enabled":false,"resumeSpecs":[{"type":"worker","skipInitContainer":true}]},"debug":{"enabled":true,"replicaSpecs":[{"type":"chief"}]}}},
	  "status":{"phase":"Running","conditions":[{"type":"Running","status":"True"}],"tasks":[{"type":"worker","replicaStatus":[{"name":"w-0","phase":"Running"}]}]}}`,
	`{"apiVersion":"batch.tensorstack.dev/v1beta1","kind":"PyTorchTrainingJob",
	  "metadata":{"name":"resnet","namespace":"default","resourceVersion":"9","generation":1},
	  "spec":{"replicaSpecs":[
	    {"type":"master","template":{"spec":{"containers":[{"name":"pytorch","image":"pt:2"}]}}},
	    {"type":"worker","replicas":3,"restartPolicy":"ExitCode","template":{"spec":{"containers":[{"name":"pytorch","image":"pt:2"}]}}}],
	  "torchrunConfig":{"enabled":true,"procPerNode":"1","rdzvBackend":"c10d"},
	  "elastic":{"enabled":true,"minReplicas":1,"maxReplicas":4}}}`,
	`{"apiVersion":"batch.tensorstack.dev/v1beta1","kind":"XGBoostTrainingJob",
	  "metadata":{"name":"boost","namespace":"default","resourceVersion":"3","generation":1},
	  "spec":{"replicaSpecs":[
	    {"type":"master","template":{"spec":{"containers":[{"name":"xgboost","image":"xgb:2"}]}}},
	    {"type":"worker","replicas":2,"template":{"spec":{"containers":[{"name":"xgboost","image":"xgb:2"}]}}}]}}`,
	`{"apiVersion":"batch.tensorstack.dev/v1beta1","kind":"GenericJob",
	  "metadata":{"name":"any","namespace":"default","resourceVersion":"4","generation":1},
	  "spec":{"replicaSpecs":[
	    {"type":"coordinator","template":{"spec":{"containers":[{"name":"main","image":"app:1","ports":[{"name":"rpc","containerPort":7000}]}]}}},
	    {"type":"worker","replicas":3,"template":{"spec":{"containers":[{"name":"main","image":"app:1"}]}}}],
	  "successRules":[{"replicas":[{"type":"coordinator","index":0}]}],
	  "failureRules":[{"replicas":[{"type":"worker","index":2}]}]}}`,
	`{"apiVersion":"batch.tensorstack.dev/v1beta1","kind":"MPIJob",
	  "metadata":{"name":"horovod","namespace":"default","resourceVersion":"5","generation":1},
	  "spec":{"slotsPerWorker":2,"mpiImplementation":"OpenMPI","sshAuthMountPath":"/root/.ssh","replicaSpecs":[
	    {"type":"launcher","template":{"spec":{"containers":[{"name":"main","image":"mpi:1","command":["mpirun","python3","train.py"]}]}}},
	    {"type":"worker","replicas":2,"template":{"spec":{"containers":[{"name":"main","image":"mpi:1"}]}}}]}}`,
}

// storedJob is a job as the storage holds it, in the forms a patch needs.
type storedJob struct {
	kind      schema.GroupVersionKind
	internal  runtime.Object
	versioned runtime.Object
	// json is the versioned job as the JSON and merge patches see it.
	json []byte
}

func storedJobs(tb testing.TB) []storedJob {
	tb.Helper()
	codec := testCodecs.LegacyCodec(v1beta1.SchemeGroupVersion)
	var jobs []storedJob
	for _, source := range storedJobSources {
		versioned, kind, err := testCodecs.UniversalDeserializer().Decode([]byte(source), nil, nil)
		if err != nil {
			tb.Fatalf("decoding a stored job: %v", err)
		}
		internal, err := toInternal(versioned)
		if err != nil {
			tb.Fatal(err)
		}
		if errs, err := validateCreate(internal); err != nil || len(errs) > 0 {
			tb.Fatalf("stored %s is invalid: %v %v", kind.Kind, err, errs)
		}
		data, err := runtime.Encode(codec, internal)
		if err != nil {
			tb.Fatalf("encoding a stored job: %v", err)
		}
		versioned, err = testScheme.ConvertToVersion(internal, v1beta1.SchemeGroupVersion)
		if err != nil {
			tb.Fatal(err)
		}
		jobs = append(jobs, storedJob{kind: *kind, internal: internal, versioned: versioned, json: data})
	}
	return jobs
}

// FuzzPatch applies arbitrary bytes to stored jobs of both kinds as the
// server applies a PATCH of each type: a JSON merge patch and a JSON patch
// (RFC 6902) to the job's JSON, a strategic merge patch to its map with the
// versioned type's merge keys, and then decodes, defaults, converts and
// validates the result, as an update of the stored job. Whatever the
// patch, none of it may panic.
func FuzzPatch(f *testing.F) {
	atomic.StoreInt64(&jsonpatch.AccumulatedCopySizeLimit, maxJSONPatchCopyBytes)
	jobs := storedJobs(f)
	f.Fuzz(func(t *testing.T, patch []byte) {
		for _, job := range jobs {
			if patched := mergePatch(job, patch); patched != nil {
				exercisePatched(t, job, patched)
			}
			if patched := jsonPatch(job, patch); patched != nil {
				exercisePatched(t, job, patched)
			}
			if patched := strategicMergePatch(job, patch); patched != nil {
				exerciseUpdate(exercise(t, patched), job.internal)
			}
		}
	})
}

// The patch libraries run guarded, as on the server, which answers a
// patch that makes one panic with 400. Each returns nil where the server
// would refuse the patch.

func mergePatch(job storedJob, patch []byte) []byte {
	var patched []byte
	if err := patchcheck.Guard(func() (err error) {
		patched, err = jsonpatch.MergePatch(job.json, patch)
		return err
	}); err != nil {
		return nil
	}
	return patched
}

func jsonPatch(job storedJob, patch []byte) []byte {
	// The server refuses these before the library sees them.
	if patchcheck.MissingValue(patch) != nil {
		return nil
	}
	var patched []byte
	if err := patchcheck.Guard(func() error {
		operations, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return err
		}
		if len(operations) > maxJSONPatchOperations {
			return fmt.Errorf("%d operations, more than the server's %d", len(operations), maxJSONPatchOperations)
		}
		patched, err = operations.Apply(job.json)
		return err
	}); err != nil {
		return nil
	}
	return patched
}

// exercisePatched decodes a patched job's JSON as the job's kind, as the
// server does, and validates it as an update of the stored job.
func exercisePatched(t *testing.T, job storedJob, patched []byte) {
	into, err := testScheme.New(job.kind)
	if err != nil {
		t.Fatal(err)
	}
	obj, _, err := testCodecs.UniversalDeserializer().Decode(patched, &job.kind, into)
	if err != nil {
		return
	}
	exerciseUpdate(exercise(t, obj), job.internal)
}

// strategicMergePatch patches the job's map as the server does, with the
// merge keys and strategies of the versioned type, and converts the result
// back into that type; nil where the server would refuse the patch.
func strategicMergePatch(job storedJob, patch []byte) runtime.Object {
	patchMap := map[string]any{}
	if _, err := kjson.UnmarshalStrict(patch, &patchMap); err != nil {
		return nil
	}
	original, err := runtime.DefaultUnstructuredConverter.ToUnstructured(job.versioned)
	if err != nil {
		return nil
	}
	schemaReference, err := testScheme.New(job.kind)
	if err != nil {
		return nil
	}
	var patchedMap map[string]any
	if err := patchcheck.Guard(func() (err error) {
		patchedMap, err = strategicpatch.StrategicMergeMapPatch(original, patchMap, schemaReference)
		return err
	}); err != nil {
		return nil
	}
	patched, err := testScheme.New(job.kind)
	if err != nil {
		return nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(patchedMap, patched, false); err != nil {
		return nil
	}
	return patched
}
