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

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	supportedContainerStates = []batch.ContainerState{
		batch.ContainerStateWaiting, batch.ContainerStateRunning, batch.ContainerStateTerminated,
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
	if p := status.Progress; p != nil {
		allErrs = append(allErrs, validateProgressValues(&p.ProgressValues, fldPath.Child("progress"))...)
		if p.CoalescedReports < 0 {
			allErrs = append(allErrs, nonNegative(fldPath.Child("progress", "coalescedReports"), p.CoalescedReports))
		}
		allErrs = append(allErrs, validateProgressHistory(p.History, fldPath.Child("progress", "history"))...)
	}
	allErrs = append(allErrs, validateCheckpointStatusBounds(status, fldPath)...)
	allErrs = append(allErrs, validateAttempts(status, fldPath)...)
	allErrs = append(allErrs, validateSuspectNodes(status.SuspectNodes, fldPath.Child("suspectNodes"))...)
	if start, end := status.StartTime, status.CompletionTime; start != nil && end != nil && end.Before(start) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("completionTime"), end.String(),
			fmt.Sprintf("must not be before status.startTime (%s)", start.String())))
	}
	return append(allErrs, validateTerminalMarkers(status, fldPath)...)
}

// validateTerminalMarkers keeps the signs of a finished job consistent with
// its phase, because clients such as kubectl wait --for=condition=Completed
// trust the conditions alone: Completed is True only on a finished job, with
// the phase as its reason; Failed is True only on a failed one; and only a
// finished job has a completionTime.
func validateTerminalMarkers(status *batch.TrainingJobStatus, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	finished := status.Phase.IsFinished()
	for i, c := range status.Conditions {
		if c.Status != metav1.ConditionTrue {
			continue
		}
		condPath := fldPath.Child("conditions").Index(i)
		switch c.Type {
		case batch.ConditionCompleted:
			if !finished {
				allErrs = append(allErrs, field.Invalid(condPath.Child("status"), c.Status,
					fmt.Sprintf("Completed may be True only when status.phase is %s or %s, not %q", batch.JobSucceeded, batch.JobFailed, status.Phase)))
			} else if c.Reason != string(status.Phase) {
				allErrs = append(allErrs, field.Invalid(condPath.Child("reason"), c.Reason,
					fmt.Sprintf("must be the job's phase, %q", status.Phase)))
			}
		case batch.ConditionFailed:
			if status.Phase != batch.JobFailed {
				allErrs = append(allErrs, field.Invalid(condPath.Child("status"), c.Status,
					fmt.Sprintf("Failed may be True only when status.phase is %s, not %q", batch.JobFailed, status.Phase)))
			}
		}
	}
	if status.CompletionTime != nil && !finished {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("completionTime"), status.CompletionTime.String(),
			fmt.Sprintf("may be set only when status.phase is %s or %s, not %q", batch.JobSucceeded, batch.JobFailed, status.Phase)))
	}
	return allErrs
}

// validateTasks checks the per-type reports: one per type, with counts that
// cannot be negative (the type's and each replica's restarts) and known
// replica phases.
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
			replicaPath := taskPath.Child("replicaStatus").Index(j)
			if p := replica.Phase; p != "" && !contains(supportedReplicaPhases, p) {
				allErrs = append(allErrs, field.NotSupported(replicaPath.Child("phase"), string(p), supportedReplicaPhases))
			}
			if replica.RestartCount < 0 {
				allErrs = append(allErrs, nonNegative(replicaPath.Child("restartCount"), int64(replica.RestartCount)))
			}
			if len(replica.Reason) > batch.MaxReplicaStatusReasonLength {
				allErrs = append(allErrs, field.TooLong(replicaPath.Child("reason"), "", batch.MaxReplicaStatusReasonLength))
			}
			allErrs = append(allErrs, validateContainerStatuses(replica.Containers, replicaPath.Child("containers"))...)
		}
	}
	return allErrs
}

// validateContainerStatuses keeps what a replica's status says of its
// containers as small as the controller writes it.
func validateContainerStatuses(containers []batch.ContainerStatus, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, c := range containers {
		path := fldPath.Index(i)
		if c.State != "" && !contains(supportedContainerStates, c.State) {
			allErrs = append(allErrs, field.NotSupported(path.Child("state"), string(c.State), supportedContainerStates))
		}
		if len(c.Reason) > batch.MaxContainerReasonLength {
			allErrs = append(allErrs, field.TooLong(path.Child("reason"), "", batch.MaxContainerReasonLength))
		}
		if t := c.LastTermination; t != nil {
			if len(t.Reason) > batch.MaxContainerReasonLength {
				allErrs = append(allErrs, field.TooLong(path.Child("lastTermination", "reason"), "", batch.MaxContainerReasonLength))
			}
			if len(t.Message) > batch.MaxTerminationMessageBytes {
				allErrs = append(allErrs, field.TooLong(path.Child("lastTermination", "message"), "", batch.MaxTerminationMessageBytes))
			}
		}
	}
	return allErrs
}

// validateStatusTransition keeps a finished job finished: once Succeeded or
// Failed, the phase never changes again, and neither do the terminal
// conditions nor the completion time.
func validateStatusTransition(status, old *batch.TrainingJobStatus, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if old.Phase.IsFinished() && status.Phase != old.Phase {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("phase"), string(status.Phase), fmt.Sprintf(
			"cannot change once the job has %s: a finished job's phase is final", old.Phase)))
	}
	for _, conditionType := range []string{batch.ConditionCompleted, batch.ConditionFailed} {
		was := meta.FindStatusCondition(old.Conditions, conditionType)
		if was == nil || was.Status != metav1.ConditionTrue {
			continue
		}
		if now := meta.FindStatusCondition(status.Conditions, conditionType); now == nil || now.Status != was.Status || now.Reason != was.Reason {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("conditions"), fmt.Sprintf(
				"the %s condition (True, reason %s) cannot be removed or changed once set", conditionType, was.Reason)))
		}
	}
	if old.CompletionTime != nil && (status.CompletionTime == nil || !status.CompletionTime.Equal(old.CompletionTime)) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("completionTime"), fmt.Sprint(status.CompletionTime),
			fmt.Sprintf("cannot change once set (was %s)", old.CompletionTime.String())))
	}
	return allErrs
}

func nonNegative(fldPath *field.Path, value int64) *field.Error {
	return field.Invalid(fldPath, value, "must be greater than or equal to 0")
}
