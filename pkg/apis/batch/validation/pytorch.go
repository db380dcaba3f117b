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

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
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
	if spec.Elastic != nil {
		allErrs = append(allErrs, validateElastic(spec.Elastic, fldPath.Child("elastic"))...)
		if spec.Elastic.Enabled {
			allErrs = append(allErrs, validateElasticJob(spec, fldPath)...)
			allErrs = append(allErrs, validateElasticRendezvous(spec, fldPath)...)
		}
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

// validateElasticJob checks the replica types around an elastic range. The
// range counts every replica of the job; the last type in rank order is the
// one scaled, the others keep their counts, which must fit under
// minReplicas. The rendezvous host, replica 0 of the first type, is never
// scaled away. The master's count is fixed, so it cannot be the scaled type.
func validateElasticJob(spec *batch.PyTorchTrainingJobSpec, fldPath *field.Path) field.ErrorList {
	scaled, fixed := batch.ElasticScaledType(spec.ReplicaSpecs)
	if scaled < 0 {
		return nil
	}
	typePath := fldPath.Child("replicaSpecs").Index(scaled).Child("type")
	if spec.ReplicaSpecs[scaled].Type == batch.ReplicaTypeMaster {
		return field.ErrorList{field.Invalid(typePath, string(batch.ReplicaTypeMaster),
			"an elastic job scales its last replica type, and a master is always one replica: add a worker type to scale")}
	}
	if m := spec.Elastic.MinReplicas; m != nil && *m >= 1 && int64(*m) < fixed {
		return field.ErrorList{field.Invalid(fldPath.Child("elastic", "minReplicas"), *m, fmt.Sprintf(
			"must be at least %d, the replicas of the types that are not scaled (all but %s)", fixed, spec.ReplicaSpecs[scaled].Type))}
	}
	return nil
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

// validateElastic checks the range of replicas an elastic job may run with.
// An enabled range needs both ends; a range given but not enabled must still
// make sense.
func validateElastic(e *batch.ElasticConfig, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	minPath, maxPath := fldPath.Child("minReplicas"), fldPath.Child("maxReplicas")
	if e.Enabled && e.MinReplicas == nil {
		allErrs = append(allErrs, field.Required(minPath, "an elastic job needs the fewest replicas it may run with"))
	}
	if e.Enabled && e.MaxReplicas == nil {
		allErrs = append(allErrs, field.Required(maxPath, "an elastic job needs the most replicas it may run with"))
	}
	minOK := e.MinReplicas != nil && *e.MinReplicas >= 1
	if e.MinReplicas != nil && !minOK {
		allErrs = append(allErrs, field.Invalid(minPath, *e.MinReplicas, "must be at least 1"))
	}
	maxOK := e.MaxReplicas != nil && *e.MaxReplicas >= 1
	switch {
	case e.MaxReplicas == nil:
	case !maxOK:
		allErrs = append(allErrs, field.Invalid(maxPath, *e.MaxReplicas, "must be at least 1"))
	case minOK && *e.MaxReplicas < *e.MinReplicas:
		maxOK = false
		allErrs = append(allErrs, field.Invalid(maxPath, *e.MaxReplicas,
			fmt.Sprintf("must be greater than or equal to minReplicas (%d)", *e.MinReplicas)))
	}
	if x := e.ExpectedReplicas; x != nil {
		switch {
		case minOK && *x < *e.MinReplicas:
			allErrs = append(allErrs, field.Invalid(fldPath.Child("expectedReplicas"), *x,
				fmt.Sprintf("must be greater than or equal to minReplicas (%d)", *e.MinReplicas)))
		case maxOK && *x > *e.MaxReplicas:
			allErrs = append(allErrs, field.Invalid(fldPath.Child("expectedReplicas"), *x,
				fmt.Sprintf("must be less than or equal to maxReplicas (%d)", *e.MaxReplicas)))
		case *x < 1:
			allErrs = append(allErrs, field.Invalid(fldPath.Child("expectedReplicas"), *x, "must be at least 1"))
		}
	}
	// The job may scale up to any of these, so each must fit the cap.
	for _, bound := range []struct {
		name  string
		value *int32
	}{{"minReplicas", e.MinReplicas}, {"maxReplicas", e.MaxReplicas}, {"expectedReplicas", e.ExpectedReplicas}} {
		if bound.value != nil && *bound.value > batch.MaxTotalReplicas {
			allErrs = append(allErrs, field.Invalid(fldPath.Child(bound.name), *bound.value, fmt.Sprintf(
				"must be less than or equal to %d, the most replicas a job may have", batch.MaxTotalReplicas)))
		}
	}
	return allErrs
}

// validateElasticUpdate keeps the ends of the elastic range as they were when
// the job was created.
func validateElasticUpdate(e, old *batch.ElasticConfig, fldPath *field.Path) field.ErrorList {
	var newMin, newMax, oldMin, oldMax *int32
	if e != nil {
		newMin, newMax = e.MinReplicas, e.MaxReplicas
	}
	if old != nil {
		oldMin, oldMax = old.MinReplicas, old.MaxReplicas
	}
	allErrs := apivalidation.ValidateImmutableField(newMin, oldMin, fldPath.Child("minReplicas"))
	return append(allErrs, apivalidation.ValidateImmutableField(newMax, oldMax, fldPath.Child("maxReplicas"))...)
}
