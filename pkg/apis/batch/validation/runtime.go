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

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch"
)

// templateJobName stands in for the name of the jobs a runtime will make,
// which its template's spec is checked with.
const templateJobName = "runtime-template"

// templateKind is one job kind a runtime's template may hold: its field
// and how a job of the kind made from the template is checked.
type templateKind struct {
	field    string
	spec     func(t *batch.TrainingJobTemplate) bool
	validate func(meta metav1.ObjectMeta, t *batch.TrainingJobTemplate) field.ErrorList
}

var templateKinds = []templateKind{
	{"pytorch", func(t *batch.TrainingJobTemplate) bool { return t.Pytorch != nil },
		func(m metav1.ObjectMeta, t *batch.TrainingJobTemplate) field.ErrorList {
			return ValidatePyTorchTrainingJob(&batch.PyTorchTrainingJob{ObjectMeta: m, Spec: *t.Pytorch})
		}},
	{"tensorflow", func(t *batch.TrainingJobTemplate) bool { return t.Tensorflow != nil },
		func(m metav1.ObjectMeta, t *batch.TrainingJobTemplate) field.ErrorList {
			return ValidateTensorFlowTrainingJob(&batch.TensorFlowTrainingJob{ObjectMeta: m, Spec: *t.Tensorflow})
		}},
	{"xgboost", func(t *batch.TrainingJobTemplate) bool { return t.Xgboost != nil },
		func(m metav1.ObjectMeta, t *batch.TrainingJobTemplate) field.ErrorList {
			return ValidateXGBoostTrainingJob(&batch.XGBoostTrainingJob{ObjectMeta: m, Spec: *t.Xgboost})
		}},
	{"mpi", func(t *batch.TrainingJobTemplate) bool { return t.MPI != nil },
		func(m metav1.ObjectMeta, t *batch.TrainingJobTemplate) field.ErrorList {
			return ValidateMPIJob(&batch.MPIJob{ObjectMeta: m, Spec: *t.MPI})
		}},
	{"generic", func(t *batch.TrainingJobTemplate) bool { return t.Generic != nil },
		func(m metav1.ObjectMeta, t *batch.TrainingJobTemplate) field.ErrorList {
			return ValidateGenericJob(&batch.GenericJob{ObjectMeta: m, Spec: *t.Generic})
		}},
}

// ValidateClusterTrainingRuntime checks a ClusterTrainingRuntime being
// created or changed.
func ValidateClusterTrainingRuntime(r *batch.ClusterTrainingRuntime) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&r.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, metadataPath)
	return append(allErrs, validateTrainingRuntimeSpec(&r.Spec, specPath)...)
}

// ValidateTrainingRuntime checks a TrainingRuntime being created or
// changed.
func ValidateTrainingRuntime(r *batch.TrainingRuntime) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&r.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, metadataPath)
	return append(allErrs, validateTrainingRuntimeSpec(&r.Spec, specPath)...)
}

// validateTrainingRuntimeSpec checks the template: exactly one kind, and
// its spec as a job of that kind made from it would be checked, errors
// named by their place in the runtime.
func validateTrainingRuntimeSpec(spec *batch.TrainingRuntimeSpec, fldPath *field.Path) field.ErrorList {
	tmplPath := fldPath.Child("template")
	t := &spec.Template
	// The labels and annotations are checked as the jobs' own, below.
	var allErrs field.ErrorList
	var set []templateKind
	var names []string
	for _, k := range templateKinds {
		names = append(names, k.field)
		if k.spec(t) {
			set = append(set, k)
		}
	}
	switch len(set) {
	case 0:
		return append(allErrs, field.Required(tmplPath, "one job kind's spec: one of "+strings.Join(names, ", ")))
	case 1:
	default:
		return append(allErrs, field.Forbidden(tmplPath.Child(set[1].field),
			"a runtime makes jobs of one kind; it already has "+set[0].field))
	}
	meta := metav1.ObjectMeta{Name: templateJobName, Labels: t.Labels, Annotations: t.Annotations}
	for _, err := range set[0].validate(meta, t) {
		if path, ok := templatePath(err.Field, tmplPath, set[0].field); ok {
			err.Field = path
			allErrs = append(allErrs, err)
		}
	}
	return allErrs
}

// templatePath names a job's error by its place in the runtime: the job's
// spec is the template's kind field, its labels and annotations the
// template's. Errors of the stand-in job's other metadata are dropped.
func templatePath(jobField string, tmplPath *field.Path, kind string) (string, bool) {
	for _, m := range []struct{ job, runtime string }{
		{"spec", tmplPath.Child(kind).String()},
		{"metadata.labels", tmplPath.Child("labels").String()},
		{"metadata.annotations", tmplPath.Child("annotations").String()},
	} {
		if rest, ok := strings.CutPrefix(jobField, m.job); ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
			return m.runtime + rest, true
		}
	}
	return "", false
}
