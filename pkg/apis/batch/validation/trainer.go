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
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch"
)

// runtimeKinds are the kinds spec.runtimeRef may name.
var runtimeKinds = []string{batch.ClusterTrainingRuntimeKind, batch.TrainingRuntimeKind}

// rulesByKind are the rules of each job kind, by its API kind. Each kind
// registers its own (validation/<kind>.go).
var rulesByKind = map[string]*kindRules{}

// ValidateRuntimeRequest checks what a new job of the given kind asks of a
// runtime (spec.runtimeRef and spec.trainer) on its own. The apiserver
// checks it before it looks the runtime up, so that the errors name these
// fields rather than the replica specs the trainer is applied to.
func ValidateRuntimeRequest(kind string, spec *batch.TrainingJobSpec) field.ErrorList {
	rules, ok := rulesByKind[kind]
	if !ok {
		return field.ErrorList{field.InternalError(specPath, fmt.Errorf("no validation of %s", kind))}
	}
	return rules.validateRuntimeRequest(spec, specPath)
}

// validateRuntimeRequest checks spec.runtimeRef and spec.trainer.
func (k *kindRules) validateRuntimeRequest(spec *batch.TrainingJobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if ref := spec.RuntimeRef; ref != nil {
		refPath := fldPath.Child("runtimeRef")
		if ref.Name == "" {
			allErrs = append(allErrs, field.Required(refPath.Child("name"), "the runtime's name"))
		}
		for _, msg := range apivalidation.NameIsDNSSubdomain(ref.Name, false) {
			allErrs = append(allErrs, field.Invalid(refPath.Child("name"), ref.Name, msg))
		}
		if ref.Kind != "" && !contains(runtimeKinds, ref.Kind) {
			allErrs = append(allErrs, field.NotSupported(refPath.Child("kind"), ref.Kind, runtimeKinds))
		}
	}
	if spec.Trainer != nil {
		allErrs = append(allErrs, k.validateTrainer(spec.Trainer, fldPath.Child("trainer"))...)
	}
	return allErrs
}

// validateTrainer checks the trainer's own fields. What it sets in the
// replica specs is checked again there once it is applied.
func (k *kindRules) validateTrainer(t *batch.Trainer, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if t.Image != "" {
		allErrs = append(allErrs, validateImage(t.Image, fldPath.Child("image"))...)
	}
	allErrs = append(allErrs, validateCommandBytes(append(append([]string(nil), t.Command...), t.Args...),
		fldPath.Child("args"))...)
	envPath := fldPath.Child("env")
	if len(t.Env) > batch.MaxTrainerEnv {
		allErrs = append(allErrs, field.TooMany(envPath, len(t.Env), batch.MaxTrainerEnv))
	} else {
		allErrs = append(allErrs, validateEnv(t.Env, envPath)...)
		seen := make(map[string]bool, len(t.Env))
		for i, v := range t.Env {
			namePath := envPath.Index(i).Child("name")
			switch {
			case seen[v.Name]:
				allErrs = append(allErrs, field.Duplicate(namePath, v.Name))
			case k.isControllerEnv(v.Name):
				allErrs = append(allErrs, field.Invalid(namePath, v.Name,
					fmt.Sprintf("may not be set: the controller sets it in every container of a %s job's pods", k.framework)))
			}
			seen[v.Name] = true
		}
	}
	if n := t.NumNodes; n != nil && (*n < 1 || *n > batch.MaxTotalReplicas) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("numNodes"), *n,
			fmt.Sprintf("must be between 1 and %d", batch.MaxTotalReplicas)))
	}
	if r := t.ResourcesPerNode; r != nil {
		allErrs = append(allErrs, validateResources(r, fldPath.Child("resourcesPerNode"))...)
	}
	if s := t.Script; s != nil {
		allErrs = append(allErrs, validateScript(s, fldPath.Child("script"))...)
	}
	return allErrs
}

// validateScript checks a trainer's script: a file name that can be a
// ConfigMap key and a path in one directory, and a source within
// batch.MaxScriptBytes.
func validateScript(s *batch.TrainerScript, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	namePath := fldPath.Child("name")
	switch {
	case s.Name == "":
		allErrs = append(allErrs, field.Required(namePath, "the script's file name, e.g. train.py"))
	case strings.HasPrefix(s.Name, "."):
		allErrs = append(allErrs, field.Invalid(namePath, s.Name, "may not start with '.'"))
	default:
		for _, msg := range utilvalidation.IsConfigMapKey(s.Name) {
			allErrs = append(allErrs, field.Invalid(namePath, s.Name, msg))
		}
	}
	sourcePath := fldPath.Child("source")
	switch n := len(s.Source); {
	case n == 0:
		allErrs = append(allErrs, field.Required(sourcePath, "the script's text"))
	case n > batch.MaxScriptBytes:
		err := field.TooLong(sourcePath, "", batch.MaxScriptBytes)
		err.Detail = fmt.Sprintf("may not be more than %d bytes (256 KiB); this script has %d: "+
			"put a larger program in an image or a volume", batch.MaxScriptBytes, n)
		allErrs = append(allErrs, err)
	}
	return allErrs
}

// validateRuntimeRequestUpdate keeps spec.runtimeRef and spec.trainer as
// they were when the job was created: they were applied then, and
// changing them afterwards would change nothing but the record.
func validateRuntimeRequestUpdate(spec, old *batch.TrainingJobSpec, fldPath *field.Path) field.ErrorList {
	allErrs := apivalidation.ValidateImmutableField(spec.RuntimeRef, old.RuntimeRef, fldPath.Child("runtimeRef"))
	return append(allErrs, apivalidation.ValidateImmutableField(spec.Trainer, old.Trainer, fldPath.Child("trainer"))...)
}
