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
	"path"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

// validateMPIExtras checks what an MPI job adds to the shared spec: the
// slots per worker, the implementation and where the SSH keys go. The
// defaults have filled all three.
func validateMPIExtras(spec *batch.MPIJobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if s := spec.SlotsPerWorker; s == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("slotsPerWorker"), ""))
	} else if *s < 1 || *s > batch.MaxSlotsPerWorker {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("slotsPerWorker"), *s,
			fmt.Sprintf("must be between 1 and %d: the MPI processes each worker runs", batch.MaxSlotsPerWorker)))
	}
	if !slices.Contains(batch.MPIImplementations(), string(spec.MPIImplementation)) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("mpiImplementation"), string(spec.MPIImplementation),
			batch.MPIImplementations()))
	}
	p := spec.SSHAuthMountPath
	switch {
	case p == "":
		allErrs = append(allErrs, field.Required(fldPath.Child("sshAuthMountPath"), ""))
	case !path.IsAbs(p) || path.Clean(p) != p || p == "/":
		allErrs = append(allErrs, field.Invalid(fldPath.Child("sshAuthMountPath"), p,
			"must be an absolute, clean path other than /, such as /root/.ssh"))
	}
	return allErrs
}

// mpiRules are the rules the shared validation applies to an MPIJob.
var mpiRules = kindRules{
	framework:    "MPI",
	replicaTypes: []batch.ReplicaType{batch.ReplicaTypeLauncher, batch.ReplicaTypeWorker},
	bounds: map[batch.ReplicaType]replicaBounds{
		batch.ReplicaTypeLauncher: {1, 1, "an MPI job has exactly one launcher, which runs mpirun"},
	},
	envNames:           batch.MPIEnvNames(),
	leaderTypes:        []batch.ReplicaType{batch.ReplicaTypeWorker},
	validateReplicaSet: validateMPIReplicaSet,
}

// validateMPIReplicaSet asks for the launcher and at least one worker:
// mpirun starts the ranks on the workers.
func validateMPIReplicaSet(specs []batch.ReplicaSpec, fldPath *field.Path) field.ErrorList {
	var launcher, workers bool
	for i := range specs {
		switch specs[i].Type {
		case batch.ReplicaTypeLauncher:
			launcher = true
		case batch.ReplicaTypeWorker:
			workers = batch.ReplicasOf(&specs[i]) > 0
		}
	}
	if !launcher || !workers {
		return field.ErrorList{field.Required(fldPath,
			"an MPI job needs a launcher replica type and a worker type with at least one replica: mpirun, on the launcher, starts the ranks on the workers")}
	}
	return nil
}

// ValidateMPIJob checks an MPIJob being created.
func ValidateMPIJob(job *batch.MPIJob) field.ErrorList {
	allErrs := validateJobCreate(&job.ObjectMeta, &job.Spec.TrainingJobSpec, &mpiRules)
	return append(allErrs, validateMPIExtras(&job.Spec, specPath)...)
}

// ValidateMPIJobUpdate checks a change of an MPIJob's spec and metadata.
// old is the stored job, status included, as for ValidateTensorFlowTrainingJobUpdate.
func ValidateMPIJobUpdate(job, old *batch.MPIJob) field.ErrorList {
	allErrs := validateJobUpdate(&job.ObjectMeta, &old.ObjectMeta, &job.Spec.TrainingJobSpec, &old.Spec.TrainingJobSpec, &old.Status, &mpiRules)
	allErrs = append(allErrs, validateMPIExtras(&job.Spec, specPath)...)
	if ptr.Deref(job.Spec.SlotsPerWorker, 0) != ptr.Deref(old.Spec.SlotsPerWorker, 0) ||
		job.Spec.MPIImplementation != old.Spec.MPIImplementation {
		// The hostfile and the launcher's environment follow both.
		if refusal := topologyChangeRefusal(&job.Spec.TrainingJobSpec, &old.Spec.TrainingJobSpec, &old.Status); refusal != "" {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("slotsPerWorker"), "cannot change: "+refusal))
		}
	}
	return allErrs
}

func init() {
	rulesByKind[batch.MPIJobKind] = &mpiRules
	templateValidators[batch.MPIJobKind] = func(m metav1.ObjectMeta, t *batch.TrainingJobTemplate) field.ErrorList {
		return ValidateMPIJob(&batch.MPIJob{ObjectMeta: m, Spec: *t.MPI})
	}
}
