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
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// fuzzSeeds are request bodies beyond the examples: both encodings, the
// accepted alternative spellings, and values at and past the limits.
var fuzzSeeds = []string{
	`{"apiVersion":"batch.tensorstack.dev/v1beta1","kind":"TensorFlowTrainingJob","metadata":{"name":"a","namespace":"n"},
	  "spec":{"replicaSpecs":[{"type":"Chief","template":{"spec":{"containers":[{"name":"tensorflow","image":"i"}]}}},
	  {"type":"PS","replicas":2,"template":{"spec":{"containers":[{"name":"tensorflow","image":"i","ports":[{"name":"tfjob-port","containerPort":2222}]}]}}}],
	  "runPolicy":{"cleanUpPolicy":"all","backoffLimit":0},"runMode":{"debug":{"enable":true,"replicaSpecs":[{"type":"Chief"}]}}}}`,
	`{"apiVersion":"batch.tensorstack.dev/v1beta1","kind":"PyTorchTrainingJob","metadata":{"name":"b","namespace":"n"},
	  "spec":{"replicaSpecs":[{"type":"node","replicas":4,"restartPolicy":"ExitCode","template":{"spec":{"containers":[{"name":"pytorch","image":"i",
	  "resources":{"limits":{"nvidia.com/gpu":"8"},"requests":{"cpu":"-1"}}}]}}}],
	  "torchrunConfig":{"enabled":true,"procPerNode":"gpu","rdzvBackend":"C10D","extraOptions":[""]},
	  "elastic":{"enabled":true,"minReplicas":3,"maxReplicas":2,"expectedReplicas":9}}}`,
	`{"apiVersion":"batch.tensorstack.dev/v1beta1","kind":"PyTorchTrainingJob","metadata":{"name":"c","namespace":"n"},
	  "spec":{"replicaSpecs":[{"type":"Master","replicas":-1},{"type":"","replicas":2147483647}],
	  "runMode":{"pause":{"enable":true,"resumeSpecs":[{"type":"worker"},{"type":"worker"}]},"debug":{"enabled":true}},
	  "scheduler":{"t9kScheduler":{"queue":"","priority":-2147483648}},
	  "tensorboardSpec":{"image":" ","trainingLogFilesets":["t9k://pvc/","t9k://pvc/x/../..","t9k://pvc//"],"resources":{"limits":{"memory":"1Ki"},"requests":{"memory":"1Mi"}}}},
	  "status":{"phase":"Succeeded","conditions":[{"type":"Completed"}],"aggregate":{"failed":-1}}}`,
	`{"apiVersion":"batch.tensorstack.dev/v1beta1","kind":"TensorFlowTrainingJob","metadata":{"name":"e","namespace":"n"},
	  "spec":{"replicaSpecs":[{"type":"Master","template":{"spec":{"containers":[{"name":"tensorflow","image":"i"}]}}},
	  {"type":"Worker","replicas":2,"template":{"spec":{"initContainers":[{"name":"setup","image":"i"}],"containers":[{"name":"tensorflow","image":"i"}]}}}],
	  "runPolicy":{"successPolicy":"AllWorkers","failurePolicy":{"rules":[
	  {"action":"RestartJob","replicaTypes":["Worker","Chief","chief",""],"onExitCodes":{"containerName":"setup","operator":"In","values":[0,137,137,-1,256]}},
	  {"action":"","onPodConditions":[{"type":"DisruptionTarget"},{"type":"","status":"Maybe"}],"onReasons":["OOMKilled","",""]},
	  {"onExitCodes":{"containerName":"","operator":"","values":[]}}]}}},
	  "status":{"phase":"Running","tasks":[{"type":"worker","replicaStatus":[{"name":"e-worker-0","uid":"u","restartAt":"2026-01-01T00:00:00Z","restartCount":-1,"reason":"BackOff"}]}]}}`,
	`{"apiVersion":"batch.tensorstack.dev/v1beta1","kind":"DebugRequest","replicaSpecs":[{"type":"Worker"},{"type":"worker"},{}]}`,
	"apiVersion: batch.tensorstack.dev/v1beta1\nkind: TensorFlowTrainingJob\nmetadata:\n  name: yaml-job\nspec:\n  replicaSpecs:\n  - type: worker\n    template:\n      spec:\n        containers: []\n",
	// No apiVersion and kind: the fuzz function decodes these as each kind in turn.
	`{"metadata":{"name":"d"},"spec":{"replicaSpecs":[{"type":"worker","replicas":0}],"runPolicy":{"activeDeadlineSeconds":0,"ttlSecondsAfterFinished":-1}}}`,
	"spec:\n  replicaSpecs:\n  - type: master\n    template: {spec: {containers: [{name: x, image: img, env: [{name: 'A=B', valueFrom: {}}]}]}}\n",
	`{}`,
	``,
}

// FuzzDecodeDefaultValidate feeds arbitrary bytes through the steps the API
// server takes with a request body (decode as JSON or YAML, default, convert
// to the internal version, canonicalize) and through every validation
// function. Whatever the input, none of it may panic.
func FuzzDecodeDefaultValidate(f *testing.F) {
	for _, file := range exampleFiles(f) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, seed := range fuzzSeeds {
		f.Add([]byte(seed))
	}

	deserializer := testCodecs.UniversalDeserializer()
	f.Fuzz(func(t *testing.T, data []byte) {
		// As the body says, then as each kind for a body without a type.
		if obj, _, err := deserializer.Decode(data, nil, nil); err == nil {
			exercise(t, obj)
		}
		for _, into := range []runtime.Object{&v1beta1.TensorFlowTrainingJob{}, &v1beta1.PyTorchTrainingJob{},
			&v1beta1.XGBoostTrainingJob{}, &v1beta1.GenericJob{}, &v1beta1.MPIJob{}, &v1beta1.PauseRequest{}, &v1beta1.ResumeRequest{}, &v1beta1.DebugRequest{}} {
			gvk := v1beta1.SchemeGroupVersion.WithKind(kindOf(into))
			if obj, _, err := deserializer.Decode(data, &gvk, into); err == nil {
				exercise(t, obj)
			}
		}
	})
}

func kindOf(obj runtime.Object) string {
	switch obj.(type) {
	case *v1beta1.TensorFlowTrainingJob:
		return "TensorFlowTrainingJob"
	case *v1beta1.PyTorchTrainingJob:
		return "PyTorchTrainingJob"
	case *v1beta1.XGBoostTrainingJob:
		return "XGBoostTrainingJob"
	case *v1beta1.GenericJob:
		return "GenericJob"
	case *v1beta1.MPIJob:
		return "MPIJob"
	case *v1beta1.PauseRequest:
		return "PauseRequest"
	case *v1beta1.ResumeRequest:
		return "ResumeRequest"
	default:
		return "DebugRequest"
	}
}

// exercise runs a decoded object through defaulting, conversion,
// canonicalization and each validation that applies to it: create, update
// against itself and against an empty object, and status update. It returns
// the internal object, or nil for a kind that is no job or action body.
func exercise(t *testing.T, versioned runtime.Object) runtime.Object {
	switch versioned.(type) {
	case *v1beta1.TensorFlowTrainingJob, *v1beta1.PyTorchTrainingJob, *v1beta1.XGBoostTrainingJob,
		*v1beta1.GenericJob, *v1beta1.MPIJob, *v1beta1.DebugRequest, *v1beta1.PauseRequest, *v1beta1.ResumeRequest:
	default:
		return nil // some other kind of the scheme, such as meta.k8s.io options
	}
	obj, err := toInternal(versioned)
	if err != nil {
		t.Fatalf("a decoded %T did not convert: %v", versioned, err)
	}
	switch obj.(type) {
	case *batch.PauseRequest, *batch.ResumeRequest:
		return obj // they carry nothing to validate
	}
	if _, err := validateCreate(obj); err != nil {
		t.Fatal(err)
	}
	if job, ok := obj.(batch.TrainingJob); ok {
		// Against itself, and an empty job of its kind both ways.
		empty := reflect.New(reflect.TypeOf(job).Elem()).Interface().(runtime.Object)
		exerciseUpdate(job, job.DeepCopyObject())
		exerciseUpdate(job, empty)
		exerciseUpdate(empty.DeepCopyObject(), job)
	}
	// Text that is not UTF-8 may come with it (a protobuf request).
	ValidateText(obj, field.NewPath("object"))
	return obj
}

// exerciseUpdate runs the update and status update validations of job
// replacing old; jobs of different kinds are left alone.
func exerciseUpdate(job, old runtime.Object) {
	switch job := job.(type) {
	case *batch.TensorFlowTrainingJob:
		if old, ok := old.(*batch.TensorFlowTrainingJob); ok {
			ValidateTensorFlowTrainingJobUpdate(job, old)
			ValidateTrainingJobStatusUpdate(job, old)
		}
	case *batch.PyTorchTrainingJob:
		if old, ok := old.(*batch.PyTorchTrainingJob); ok {
			ValidatePyTorchTrainingJobUpdate(job, old)
			ValidateTrainingJobStatusUpdate(job, old)
		}
	case *batch.XGBoostTrainingJob:
		if old, ok := old.(*batch.XGBoostTrainingJob); ok {
			ValidateXGBoostTrainingJobUpdate(job, old)
			ValidateTrainingJobStatusUpdate(job, old)
		}
	case *batch.GenericJob:
		if old, ok := old.(*batch.GenericJob); ok {
			ValidateGenericJobUpdate(job, old)
			ValidateTrainingJobStatusUpdate(job, old)
		}
	case *batch.MPIJob:
		if old, ok := old.(*batch.MPIJob); ok {
			ValidateMPIJobUpdate(job, old)
			ValidateTrainingJobStatusUpdate(job, old)
		}
	}
}
