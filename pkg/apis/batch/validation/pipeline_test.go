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

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/install"
)

// The steps the API server takes with a request body before it validates:
// decode, default, convert to the internal version, canonicalize. Shared by
// the examples test and the fuzz test.

var (
	testScheme = newTestScheme()
	testCodecs = serializer.NewCodecFactory(testScheme)
)

func newTestScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	return scheme
}

// toInternal defaults a decoded versioned object, converts it to the
// internal version and, for jobs, rewrites accepted spellings.
func toInternal(versioned runtime.Object) (runtime.Object, error) {
	testScheme.Default(versioned)
	internal, err := testScheme.ConvertToVersion(versioned, batch.SchemeGroupVersion)
	if err != nil {
		return nil, fmt.Errorf("converting to the internal version: %w", err)
	}
	switch obj := internal.(type) {
	case *batch.TensorFlowTrainingJob:
		batch.CanonicalizeTensorFlowJob(obj)
	case *batch.PyTorchTrainingJob:
		batch.CanonicalizePyTorchJob(obj)
	case *batch.XGBoostTrainingJob:
		batch.CanonicalizeXGBoostJob(obj)
	case *batch.GenericJob:
		batch.CanonicalizeGenericJob(obj)
	case *batch.MPIJob:
		batch.CanonicalizeMPIJob(obj)
	}
	return internal, nil
}

// validateCreate runs the create validation that fits the internal object.
func validateCreate(obj runtime.Object) (field.ErrorList, error) {
	switch obj := obj.(type) {
	case *batch.TensorFlowTrainingJob:
		return ValidateTensorFlowTrainingJob(obj), nil
	case *batch.PyTorchTrainingJob:
		return ValidatePyTorchTrainingJob(obj), nil
	case *batch.XGBoostTrainingJob:
		return ValidateXGBoostTrainingJob(obj), nil
	case *batch.GenericJob:
		return ValidateGenericJob(obj), nil
	case *batch.MPIJob:
		return ValidateMPIJob(obj), nil
	case *batch.DebugRequest:
		return ValidateDebugRequest(obj), nil
	default:
		return nil, fmt.Errorf("no validation for %T", obj)
	}
}
