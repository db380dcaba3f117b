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
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch"
)

var supportedRendezvousBackends = []batch.RendezvousBackend{
	batch.RendezvousBackendStatic, batch.RendezvousBackendC10d, batch.RendezvousBackendEtcd, batch.RendezvousBackendEtcdV2,
}

// procPerNodeGPU asks torchrun for one worker process per GPU.
const procPerNodeGPU = "gpu"

// validatePyTorchExtras checks the fields only PyTorch jobs have.
func validatePyTorchExtras(spec *batch.PyTorchTrainingJobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.TorchrunConfig != nil {
		allErrs = append(allErrs, validateTorchrunConfig(spec.TorchrunConfig, fldPath.Child("torchrunConfig"))...)
	}
	allErrs = append(allErrs, validateElasticSpec(spec.Elastic, spec.ReplicaSpecs, true, fldPath)...)
	if batch.ElasticEnabled(spec.Elastic) {
		allErrs = append(allErrs, validateElasticRendezvous(spec, fldPath)...)
	}
	return allErrs
}

// validateElasticRendezvous refuses the static rendezvous for an elastic
// job: static fixes the group's size and every replica's rank when the
// agents start, so a replica added or removed could never join or leave.
func validateElasticRendezvous(spec *batch.PyTorchTrainingJobSpec, fldPath *field.Path) field.ErrorList {
	tc := spec.TorchrunConfig
	if tc == nil || tc.RdzvBackend != batch.RendezvousBackendStatic {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath.Child("torchrunConfig", "rdzvBackend"), string(tc.RdzvBackend), fmt.Sprintf(
		"an elastic job cannot use the static rendezvous, whose group cannot change: use %s (the default of an elastic job), %s or %s",
		batch.RendezvousBackendC10d, batch.RendezvousBackendEtcd, batch.RendezvousBackendEtcdV2))}
}

// validateTorchrunConfig checks the torchrun options. They are checked
// whether or not torchrun is enabled, so that enabling it later cannot
// surprise.
func validateTorchrunConfig(tc *batch.TorchrunConfig, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if r := tc.MaxRestarts; r != nil && *r < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxRestarts"), *r, "must be greater than or equal to 0"))
	} else if r != nil {
		allErrs = append(allErrs, validateAtMost(*r, batch.MaxTorchrunRestarts, fldPath.Child("maxRestarts"))...)
	}
	if p := tc.ProcPerNode; p != "" && p != procPerNodeGPU && !isPositiveDecimal(p) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("procPerNode"), p,
			fmt.Sprintf("must be a positive integer, such as \"1\" or \"8\", or %q for one process per GPU", procPerNodeGPU)))
	}
	if b := tc.RdzvBackend; b != "" && !contains(supportedRendezvousBackends, b) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("rdzvBackend"), string(b), supportedRendezvousBackends))
	}
	for i, opt := range tc.ExtraOptions {
		if opt == "" {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("extraOptions").Index(i), opt,
				"must not be empty: torchrun would take it for the training script"))
		}
	}
	return append(allErrs, validateCommandBytes(tc.ExtraOptions, fldPath.Child("extraOptions"))...)
}

// isPositiveDecimal reports whether s is written only with digits and
// stands for a number from 1 up to what an int32 holds.
func isPositiveDecimal(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	n, err := strconv.ParseInt(s, 10, 32)
	return err == nil && n > 0
}

// pyTorchRules are the rules the shared validation applies to a PyTorchTrainingJob.
var pyTorchRules = kindRules{
	framework: "PyTorch",
	bounds: map[batch.ReplicaType]replicaBounds{
		batch.ReplicaTypeMaster: {1, 1, "a PyTorch job has exactly one master"},
	},
	trainingContainer:  batch.PyTorchContainerName,
	rendezvousPorts:    batch.PyTorchPortNames(),
	envNames:           batch.PyTorchEnvNames(),
	validateReplicaSet: validatePyTorchReplicaSet,
}

// validatePyTorchReplicaSet makes sure the rendezvous master exists. With a
// master type it is the master replica (whose count the bounds fix at 1);
// without one it is replica 0 of the first listed type, which must therefore
// have a replica.
func validatePyTorchReplicaSet(specs []batch.ReplicaSpec, fldPath *field.Path) field.ErrorList {
	for _, spec := range specs {
		if spec.Type == batch.ReplicaTypeMaster {
			return nil
		}
	}
	if n := batch.ReplicasOf(&specs[0]); n < 1 {
		return field.ErrorList{field.Invalid(fldPath.Index(0).Child("replicas"), n,
			fmt.Sprintf("must be at least 1: without a %q replica type, replica 0 of the first listed type (%q) is the rendezvous master (MASTER_ADDR)",
				batch.ReplicaTypeMaster, specs[0].Type))}
	}
	return nil
}

// ValidatePyTorchTrainingJob checks a PyTorchTrainingJob being created.
func ValidatePyTorchTrainingJob(job *batch.PyTorchTrainingJob) field.ErrorList {
	allErrs := validateJobCreate(&job.ObjectMeta, &job.Spec.TrainingJobSpec, &pyTorchRules)
	return append(allErrs, validatePyTorchExtras(&job.Spec, specPath)...)
}

// ValidatePyTorchTrainingJobUpdate checks a change of a PyTorchTrainingJob's spec and metadata.
// old is the stored job, status included, as for ValidateTensorFlowTrainingJobUpdate.
func ValidatePyTorchTrainingJobUpdate(job, old *batch.PyTorchTrainingJob) field.ErrorList {
	allErrs := validateJobUpdate(&job.ObjectMeta, &old.ObjectMeta, &job.Spec.TrainingJobSpec, &old.Spec.TrainingJobSpec, &old.Status, &pyTorchRules)
	allErrs = append(allErrs, validatePyTorchExtras(&job.Spec, specPath)...)
	return append(allErrs, validateElasticChange(job, old)...)
}

func init() {
	rulesByKind[batch.PyTorchTrainingJobKind] = &pyTorchRules
	templateValidators[batch.PyTorchTrainingJobKind] = func(m metav1.ObjectMeta, t *batch.TrainingJobTemplate) field.ErrorList {
		return ValidatePyTorchTrainingJob(&batch.PyTorchTrainingJob{ObjectMeta: m, Spec: *t.Pytorch})
	}
}
