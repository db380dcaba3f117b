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
	"sort"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch"
)

// templateJobName stands in for the name of the jobs a runtime will make,
// which its template's spec is checked with.
const templateJobName = "runtime-template"

// templateValidators check a job of each kind made from a runtime's
// template. Each kind registers its own (validation/<kind>.go), so a new
// kind adds no case here.
var templateValidators = map[string]func(meta metav1.ObjectMeta, t *batch.TrainingJobTemplate) field.ErrorList{}

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
	kind, allErrs := validateTemplateKind(t, tmplPath, "a runtime makes jobs of one kind")
	if kind == "" {
		return allErrs
	}
	if common := t.CommonSpec(); common.RuntimeRef != nil || common.Trainer != nil {
		child := "trainer"
		if common.RuntimeRef != nil {
			child = "runtimeRef"
		}
		return append(allErrs, field.Forbidden(tmplPath.Child(batch.TemplateKinds()[kind]).Child(child),
			"a runtime's template is where a job starts; it cannot name a runtime or give a trainer"))
	}
	return append(allErrs, validateKindTemplate(kind, templateJobName, t, tmplPath)...)
}

// validateTemplateKind checks that a template holds exactly one kind's
// spec, and returns that kind ("" when it does not). oneKind says why a
// second kind is refused.
func validateTemplateKind(t *batch.TrainingJobTemplate, tmplPath *field.Path, oneKind string) (string, field.ErrorList) {
	fields := batch.TemplateKinds()
	kinds := t.Kinds()
	switch len(kinds) {
	case 0:
		names := make([]string, 0, len(fields))
		for _, f := range fields {
			names = append(names, f)
		}
		sort.Strings(names)
		return "", field.ErrorList{field.Required(tmplPath, "one job kind's spec: one of "+strings.Join(names, ", "))}
	case 1:
		if _, ok := templateValidators[kinds[0]]; !ok {
			return "", field.ErrorList{field.InternalError(tmplPath.Child(fields[kinds[0]]), fmt.Errorf("no validation of %s", kinds[0]))}
		}
		return kinds[0], nil
	default:
		return "", field.ErrorList{field.Forbidden(tmplPath.Child(fields[kinds[1]]), oneKind+"; it already has "+fields[kinds[0]])}
	}
}

// validateKindTemplate checks the template's spec, labels and annotations
// as those of a job of its kind named jobName, errors named by their place
// in the template.
func validateKindTemplate(kind, jobName string, t *batch.TrainingJobTemplate, tmplPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	meta := metav1.ObjectMeta{Name: jobName, Labels: t.Labels, Annotations: t.Annotations}
	for _, err := range templateValidators[kind](meta, t) {
		if path, ok := templatePath(err.Field, tmplPath, batch.TemplateKinds()[kind]); ok {
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
