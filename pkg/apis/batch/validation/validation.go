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

// Package validation checks training jobs and action requests against the
// rules of the batch.tensorstack.dev API, reporting each problem with its
// field path.
//
// The functions work on internal objects that have been defaulted and
// canonicalized (the registry strategy rewrites accepted alternative spellings
// before it validates), so only the stored spellings are accepted here. Where
// an optional field is still unset the default is assumed rather than
// reported.
package validation

import (
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch"
)

var (
	metadataPath = field.NewPath("metadata")
	specPath     = field.NewPath("spec")
	statusPath   = field.NewPath("status")
)

// ValidateTrainingJobStatusUpdate checks a write to the status subresource of either kind.
func ValidateTrainingJobStatusUpdate(job, old batch.TrainingJob) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaAccessorUpdate(job, old, metadataPath)
	allErrs = append(allErrs, validateStatus(job.JobStatus(), statusPath)...)
	allErrs = append(allErrs, validateQueueUpdate(job.GetLabels(), old.GetLabels(), job.CommonSpec(), old.CommonSpec(), old.JobStatus())...)
	return append(allErrs, validateStatusTransition(job.JobStatus(), old.JobStatus(), statusPath)...)
}

// ValidateDebugRequest checks the body of a POST to a job's debug
// subresource. It knows nothing of the job, so it checks only the request's
// own shape; whether the named types exist in the job is decided when the
// changed job is validated. Types are compared without regard to case,
// because Kubeflow's capitalised spellings are accepted and canonicalized
// together with the job.
func ValidateDebugRequest(request *batch.DebugRequest) field.ErrorList {
	var allErrs field.ErrorList
	fldPath := field.NewPath("replicaSpecs")
	seen := make(map[string]bool, len(request.ReplicaSpecs))
	for i, spec := range request.ReplicaSpecs {
		typePath := fldPath.Index(i).Child("type")
		if spec.Type == "" {
			allErrs = append(allErrs, field.Required(typePath, "the replica type to debug"))
			continue
		}
		folded := strings.ToLower(string(spec.Type))
		for _, msg := range utilvalidation.IsDNS1123Label(folded) {
			allErrs = append(allErrs, field.Invalid(typePath, string(spec.Type), msg))
		}
		if seen[folded] {
			allErrs = append(allErrs, field.Duplicate(typePath, string(spec.Type)))
		}
		seen[folded] = true
	}
	return allErrs
}

// validateJobCreate checks the metadata and the shared spec of a new job.
func validateJobCreate(meta *metav1.ObjectMeta, spec *batch.TrainingJobSpec, rules *kindRules) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(meta, true, apivalidation.NameIsDNS1035Label, metadataPath)
	if errs := validateReplicaTypeCount(spec.ReplicaSpecs, specPath.Child("replicaSpecs")); len(errs) > 0 {
		return append(allErrs, errs...)
	}
	allErrs = append(allErrs, validateDerivedNames(meta.Name, spec, metadataPath.Child("name"))...)
	allErrs = append(allErrs, validateTopologyRequests(meta.Annotations, spec.ReplicaSpecs,
		metadataPath.Child("annotations"), specPath.Child("replicaSpecs"))...)
	allErrs = append(allErrs, rules.validateControllerEnv(spec.ReplicaSpecs, nil, specPath.Child("replicaSpecs"))...)
	allErrs = append(allErrs, rules.validateRuntimeRequest(spec, specPath)...)
	return append(allErrs, rules.validateSpec(spec, specPath)...)
}

// validateJobUpdate checks a changed job: the metadata change, the new spec
// as a whole, and the parts of the spec that are fixed once the job exists or
// while it has pods, which oldStatus, the stored job's status, tells.
func validateJobUpdate(meta, oldMeta *metav1.ObjectMeta, spec, oldSpec *batch.TrainingJobSpec, oldStatus *batch.TrainingJobStatus, rules *kindRules) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(meta, oldMeta, metadataPath)
	if errs := validateReplicaTypeCount(spec.ReplicaSpecs, specPath.Child("replicaSpecs")); len(errs) > 0 {
		return append(allErrs, errs...)
	}
	// The name cannot change, but the spec decides which names are derived
	// from it: adding a TensorBoard to a job with a long name is refused here.
	allErrs = append(allErrs, validateDerivedNames(meta.Name, spec, metadataPath.Child("name"))...)
	allErrs = append(allErrs, validateTopologyRequests(meta.Annotations, spec.ReplicaSpecs,
		metadataPath.Child("annotations"), specPath.Child("replicaSpecs"))...)
	allErrs = append(allErrs, rules.validateControllerEnv(spec.ReplicaSpecs, oldSpec.ReplicaSpecs, specPath.Child("replicaSpecs"))...)
	allErrs = append(allErrs, rules.validateSpec(spec, specPath)...)
	allErrs = append(allErrs, validateQueueUpdate(meta.Labels, oldMeta.Labels, spec, oldSpec, oldStatus)...)
	allErrs = append(allErrs, validateRuntimeRequestUpdate(spec, oldSpec, specPath)...)
	return append(allErrs, validateSpecUpdate(spec, oldSpec, oldStatus, specPath)...)
}
