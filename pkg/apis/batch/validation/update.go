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
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch"
)

// validateSpecUpdate checks the parts of the shared spec that are fixed once
// the job exists.
//
// The replica types and their order are fixed because pod names, hostnames,
// ranks and the cluster layout every replica was given are built from them.
// The replica counts and pod templates may change: they shape the pods
// created from then on. The resume settings are fixed as the API promises.
func validateSpecUpdate(spec, old *batch.TrainingJobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	replicasPath := fldPath.Child("replicaSpecs")
	if len(spec.ReplicaSpecs) != len(old.ReplicaSpecs) {
		allErrs = append(allErrs, field.Forbidden(replicasPath, fmt.Sprintf(
			"replica types cannot be added or removed once the job exists; they are [%s]", typeList(old.ReplicaSpecs))))
	} else {
		for i := range spec.ReplicaSpecs {
			if t, was := spec.ReplicaSpecs[i].Type, old.ReplicaSpecs[i].Type; t != was {
				allErrs = append(allErrs, field.Invalid(replicasPath.Index(i).Child("type"), string(t), fmt.Sprintf(
					"cannot change once the job exists (it was %q): replica types and their order are fixed", was)))
			}
		}
	}
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(resumeSpecsOf(spec), resumeSpecsOf(old),
		fldPath.Child("runMode", "pause", "resumeSpecs"))...)
	return allErrs
}

func resumeSpecsOf(spec *batch.TrainingJobSpec) []batch.ResumeSpec {
	if spec.RunMode == nil || spec.RunMode.Pause == nil {
		return nil
	}
	return spec.RunMode.Pause.ResumeSpecs
}

func typeList(specs []batch.ReplicaSpec) string {
	types := make([]string, len(specs))
	for i, s := range specs {
		types[i] = string(s.Type)
	}
	return strings.Join(types, ", ")
}
