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
	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch"
)

// validateAttempts keeps status.attempts within its bounds, whoever writes
// it, so that a job's history cannot grow its stored object: the count of
// attempts and of failed replicas in each, the sizes of the texts, and
// which attempts may list failed replicas.
func validateAttempts(status *batch.TrainingJobStatus, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	attempts := status.Attempts
	path := fldPath.Child("attempts")
	if len(attempts) > batch.MaxAttempts {
		return append(allErrs, field.TooMany(path, len(attempts), batch.MaxAttempts))
	}
	if status.AttemptCount < int32(len(attempts)) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("attemptCount"), status.AttemptCount,
			"must be at least the number of entries in status.attempts"))
	}
	for i := range attempts {
		a := &attempts[i]
		aPath := path.Index(i)
		if a.Number < 1 {
			allErrs = append(allErrs, field.Invalid(aPath.Child("number"), a.Number, "must be greater than or equal to 1"))
		}
		if i > 0 && a.Number <= attempts[i-1].Number {
			allErrs = append(allErrs, field.Invalid(aPath.Child("number"), a.Number, "must be greater than the number of the attempt before it"))
		}
		if a.EndTime != nil && a.EndTime.Before(&a.StartTime) {
			allErrs = append(allErrs, field.Invalid(aPath.Child("endTime"), a.EndTime.String(), "must not be before startTime"))
		}
		if len(a.Reason) > batch.MaxContainerReasonLength {
			allErrs = append(allErrs, field.TooLong(aPath.Child("reason"), "", batch.MaxContainerReasonLength))
		}
		if len(a.Message) > batch.MaxAttemptMessageBytes {
			allErrs = append(allErrs, field.TooLong(aPath.Child("message"), "", batch.MaxAttemptMessageBytes))
		}
		if a.Steps != nil && *a.Steps < 0 {
			allErrs = append(allErrs, nonNegative(aPath.Child("steps"), *a.Steps))
		}
		if a.FailedReplicaCount < int32(len(a.FailedReplicas)) {
			allErrs = append(allErrs, field.Invalid(aPath.Child("failedReplicaCount"), a.FailedReplicaCount,
				"must be at least the number of entries in failedReplicas"))
		}
		listsFailed := i >= len(attempts)-batch.MaxAttemptsWithFailedReplicas
		allErrs = append(allErrs, validateFailedReplicas(a.FailedReplicas, listsFailed, aPath.Child("failedReplicas"))...)
	}
	return allErrs
}

func validateFailedReplicas(failed []batch.FailedReplica, listsFailed bool, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if !listsFailed && len(failed) > 0 {
		return append(allErrs, field.Forbidden(path,
			"only the newest attempts list their failed replicas (MaxAttemptsWithFailedReplicas)"))
	}
	if len(failed) > batch.MaxAttemptFailedReplicas {
		return append(allErrs, field.TooMany(path, len(failed), batch.MaxAttemptFailedReplicas))
	}
	for j := range failed {
		f := &failed[j]
		fPath := path.Index(j)
		if len(f.Reason) > batch.MaxContainerReasonLength {
			allErrs = append(allErrs, field.TooLong(fPath.Child("reason"), "", batch.MaxContainerReasonLength))
		}
		if len(f.LogError) > batch.MaxAttemptLogErrorBytes {
			allErrs = append(allErrs, field.TooLong(fPath.Child("logError"), "", batch.MaxAttemptLogErrorBytes))
		}
		if len(f.Logs) > batch.MaxAttemptLogBytes {
			allErrs = append(allErrs, field.TooLong(fPath.Child("logs"), "", batch.MaxAttemptLogBytes))
		}
	}
	return allErrs
}
