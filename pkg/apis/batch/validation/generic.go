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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch"
)

// genericRules are the rules the shared validation applies to a GenericJob.
var genericRules = kindRules{
	framework: "generic",
	envNames:  batch.GenericEnvNames(),
	envPrefix: batch.GenericEnvPrefix,
}

// ValidateGenericJob checks a GenericJob being created.
func ValidateGenericJob(job *batch.GenericJob) field.ErrorList {
	allErrs := validateJobCreate(&job.ObjectMeta, &job.Spec.TrainingJobSpec, &genericRules)
	allErrs = append(allErrs, validateElasticSpec(job.Spec.Elastic, job.Spec.ReplicaSpecs, false, specPath)...)
	return append(allErrs, validateGenericRules(&job.Spec)...)
}

// ValidateGenericJobUpdate checks a change of a GenericJob's spec and metadata.
// old is the stored job, status included, as for ValidateTensorFlowTrainingJobUpdate.
func ValidateGenericJobUpdate(job, old *batch.GenericJob) field.ErrorList {
	allErrs := validateJobUpdate(&job.ObjectMeta, &old.ObjectMeta, &job.Spec.TrainingJobSpec, &old.Spec.TrainingJobSpec, &old.Status, &genericRules)
	allErrs = append(allErrs, validateElasticSpec(job.Spec.Elastic, job.Spec.ReplicaSpecs, false, specPath)...)
	allErrs = append(allErrs, validateElasticChange(job, old)...)
	allErrs = append(allErrs, validateAdmittedScaleOut(job, old)...)
	return append(allErrs, validateGenericRules(&job.Spec)...)
}

func init() {
	rulesByKind[batch.GenericJobKind] = &genericRules
	templateValidators[batch.GenericJobKind] = func(m metav1.ObjectMeta, t *batch.TrainingJobTemplate) field.ErrorList {
		return ValidateGenericJob(&batch.GenericJob{ObjectMeta: m, Spec: *t.Generic})
	}
}
