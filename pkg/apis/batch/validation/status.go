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

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch"
)

var (
	supportedJobPhases = []batch.JobPhase{
		batch.JobPending, batch.JobRunning, batch.JobPaused, batch.JobResuming,
		batch.JobSucceeded, batch.JobFailed, batch.JobUnknown,
	}
	supportedReplicaPhases = []batch.ReplicaPhase{
		batch.ReplicaCreating, batch.ReplicaPending, batch.ReplicaRunning, batch.ReplicaSucceeded,
		batch.ReplicaFailed, batch.ReplicaUnknown, batch.ReplicaDeleted,
	}
	supportedDependentTypes = []string{"Normal", "Warning"}
)

// validateStatus checks a status on its own. An empty phase is accepted: it
// is what a job has before the controller first reports on it.
func validateStatus(status *batch.TrainingJobStatus, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if status.ObservedGeneration < 0 {
		allErrs = append(allErrs, nonNegative(fldPath.Child("observedGeneration"), status.ObservedGeneration))
	}
	if p := status.Phase; p != "" && !contains(supportedJobPhases, p) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("phase"), string(p), supportedJobPhases))
	}
	allErrs = append(allErrs, metav1validation.ValidateConditions(status.Conditions, fldPath.Child("conditions"))...)
	allErrs = append(allErrs, validateTasks(status.Tasks, fldPath.Child("tasks"))...)

	aggPath := fldPath.Child("aggregate")
	agg := &status.Aggregate
	for _, count := range []struct {
		name  string
		value int32
	}{
		{"creating", agg.Creating}, {"pending", agg.Pending}, {"running", agg.Running},
		{"succeeded", agg.Succeeded}, {"failed", agg.Failed}, {"unknown", agg.Unknown}, {"deleted", agg.Deleted},
	} {
		if count.value < 0 {
			allErrs = append(allErrs, nonNegative(aggPath.Child(count.name), int64(count.value)))
		}
	}
	if status.BackoffCount < 0 {
		allErrs = append(allErrs, nonNegative(fldPath.Child("backoffCount"), int64(status.BackoffCount)))
	}
	if tb := status.Tensorboard; tb != nil && tb.Type != "" && !contains(supportedDependentTypes, tb.Type) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("tensorboard", "type"), tb.Type, supportedDependentTypes))
	}
	if start, end := status.StartTime, status.CompletionTime; start != nil && end != nil && end.Before(start) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("completionTime"), end.String(),
			fmt.Sprintf("must not be before status.startTime (%s)", start.String())))
	}
	return allErrs
}

// validateTasks checks the per-type reports: one per type, with counts that
// cannot be negative and known replica phases.
func validateTasks(tasks []batch.TaskStatus, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := make(map[batch.ReplicaType]bool, len(tasks))
	for i, task := range tasks {
		taskPath := fldPath.Index(i)
		switch {
		case task.Type == "":
			allErrs = append(allErrs, field.Required(taskPath.Child("type"), ""))
		case seen[task.Type]:
			allErrs = append(allErrs, field.Duplicate(taskPath.Child("type"), string(task.Type)))
		}
		seen[task.Type] = true
		if task.RestartCount < 0 {
			allErrs = append(allErrs, nonNegative(taskPath.Child("restartCount"), int64(task.RestartCount)))
		}
		for j, replica := range task.ReplicaStatus {
			if p := replica.Phase; p != "" && !contains(supportedReplicaPhases, p) {
				allErrs = append(allErrs, field.NotSupported(taskPath.Child("replicaStatus").Index(j).Child("phase"), string(p), supportedReplicaPhases))
			}
		}
	}
	return allErrs
}

// validateStatusTransition keeps a finished job finished: once Succeeded or
// Failed, the phase never changes again.
func validateStatusTransition(status, old *batch.TrainingJobStatus, fldPath *field.Path) field.ErrorList {
	if old.Phase.IsFinished() && status.Phase != old.Phase {
		return field.ErrorList{field.Invalid(fldPath.Child("phase"), string(status.Phase), fmt.Sprintf(
			"cannot change once the job has %s: a finished job's phase is final", old.Phase))}
	}
	return nil
}

func nonNegative(fldPath *field.Path, value int64) *field.Error {
	return field.Invalid(fldPath, value, "must be greater than or equal to 0")
}
