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
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch"
)

// validateReplicaLimits keeps a job within the replicas its status can
// report (batch.MaxTotalReplicas).
// Negative counts are reported on their own field and count as none here.
func validateReplicaLimits(specs []batch.ReplicaSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if total := batch.TotalReplicas(specs); total > batch.MaxTotalReplicas {
		allErrs = append(allErrs, field.Invalid(fldPath, total, fmt.Sprintf(
			"the replicas of all types add up to %d, over the maximum of %d per job (the job's status lists every replica and must stay well under etcd's request size limit)",
			total, batch.MaxTotalReplicas)))
	}
	return allErrs
}

// validateReplicaTypeCount refuses a job that lists more replica specs than
// batch.MaxReplicaTypes. The caller then judges nothing else of the spec: a
// list of thousands would otherwise answer with an error for each entry,
// and cost the server as much to find them.
func validateReplicaTypeCount(specs []batch.ReplicaSpec, fldPath *field.Path) field.ErrorList {
	if len(specs) <= batch.MaxReplicaTypes {
		return nil
	}
	return field.ErrorList{field.TooMany(fldPath, len(specs), batch.MaxReplicaTypes)}
}

// validateAtMost reports a value over an upper bound, naming the bound.
func validateAtMost[T int32 | int64](value, limit T, fldPath *field.Path) field.ErrorList {
	if value <= limit {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, value, fmt.Sprintf("must be less than or equal to %d", limit))}
}

// validateCommandBytes keeps an argument list that is copied into every pod
// of a replica type within batch.MaxCommandBytes.
func validateCommandBytes(args []string, fldPath *field.Path) field.ErrorList {
	n := batch.CommandBytes(args)
	if n <= batch.MaxCommandBytes {
		return nil
	}
	err := field.TooLong(fldPath, "", batch.MaxCommandBytes)
	err.Detail = fmt.Sprintf("may not be more than %d bytes, counting each entry's length plus one; this list has %d",
		batch.MaxCommandBytes, n)
	return field.ErrorList{err}
}

// validateTemplateBytes keeps a pod template, which every pod of its type
// copies, within batch.MaxPodTemplateBytes: the pods then stay far from
// the size the cluster's etcd refuses, whatever the controller adds, which
// does not grow with the job.
func validateTemplateBytes(template *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	raw, err := json.Marshal(template)
	if err != nil || len(raw) <= batch.MaxPodTemplateBytes {
		return nil
	}
	tooLong := field.TooLong(fldPath, "", batch.MaxPodTemplateBytes)
	tooLong.Detail = fmt.Sprintf("may not be more than %d bytes encoded as JSON, as each of the type's pods copies it; "+
		"this template has %d (large data belongs in a ConfigMap or a volume)", batch.MaxPodTemplateBytes, len(raw))
	return field.ErrorList{tooLong}
}
