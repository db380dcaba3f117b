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

	"k8s.io/apimachinery/pkg/util/validation/field"

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
