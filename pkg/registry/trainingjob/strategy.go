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

package trainingjob

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/apis/batch/validation"
)

// jobStrategy is the create, update and delete behaviour of a job kind's main
// resource: users own the spec, the controller owns the status.
type jobStrategy[J batch.TrainingJob, S any] struct {
	runtime.ObjectTyper
	names.NameGenerator
	kind *Kind[J, S]
}

func newJobStrategy[J batch.TrainingJob, S any](typer runtime.ObjectTyper, kind *Kind[J, S]) jobStrategy[J, S] {
	return jobStrategy[J, S]{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator, kind: kind}
}

func (jobStrategy[J, S]) NamespaceScoped() bool { return true }

// GetResetFields names the fields a write to the main resource cannot set,
// so server-side apply does not record ownership of them.
func (jobStrategy[J, S]) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(v1beta1.SchemeGroupVersion.String()): fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
	}
}

// PrepareForCreate drops any status the client sent, starts the generation
// and rewrites accepted spellings, so validation judges the stored form.
func (s jobStrategy[J, S]) PrepareForCreate(_ context.Context, obj runtime.Object) {
	job := obj.(J)
	// The one part of the status a new job has: the runtime the REST's
	// Create applied, which it cleared first, so no client can set it.
	*job.JobStatus() = batch.TrainingJobStatus{Runtime: job.JobStatus().Runtime}
	job.SetGeneration(1)
	s.kind.Canonicalize(job)
}

// PrepareForUpdate keeps the stored status and bumps the generation only when
// the spec changed.
func (s jobStrategy[J, S]) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	job, oldJob := obj.(J), old.(J)
	*job.JobStatus() = *oldJob.JobStatus()
	s.kind.Canonicalize(job)
	if !apiequality.Semantic.DeepEqual(s.kind.Spec(job), s.kind.Spec(oldJob)) {
		job.SetGeneration(oldJob.GetGeneration() + 1)
	}
}

func (s jobStrategy[J, S]) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	job := obj.(J)
	return append(s.kind.Validate(job), s.validateText(job, nil)...)
}

func (s jobStrategy[J, S]) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	job, oldJob := obj.(J), old.(J)
	return append(s.kind.ValidateUpdate(job, oldJob), s.validateText(job, &oldJob)...)
}

// validateText refuses strings that are not UTF-8 in what the client
// writes: the spec and the annotations (the other metadata has a syntax of
// its own). An update is judged on what it changes, so that a job stored
// before this check can still be edited elsewhere.
func (s jobStrategy[J, S]) validateText(job J, old *J) field.ErrorList {
	var allErrs field.ErrorList
	spec := s.kind.Spec(job)
	if old == nil || !apiequality.Semantic.DeepEqual(spec, s.kind.Spec(*old)) {
		allErrs = append(allErrs, validation.ValidateText(spec, field.NewPath("spec"))...)
	}
	annotations := job.GetAnnotations()
	if old == nil || !apiequality.Semantic.DeepEqual(annotations, (*old).GetAnnotations()) {
		allErrs = append(allErrs, validation.ValidateText(annotations, field.NewPath("metadata", "annotations"))...)
	}
	return allErrs
}

func (s jobStrategy[J, S]) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	return s.specWarnings(obj.(J))
}

// WarningsOnUpdate repeats the warnings only when the spec changed: a label
// edit or a status write is no occasion to warn about the spec again.
func (s jobStrategy[J, S]) WarningsOnUpdate(_ context.Context, obj, old runtime.Object) []string {
	job, oldJob := obj.(J), old.(J)
	if apiequality.Semantic.DeepEqual(s.kind.Spec(job), s.kind.Spec(oldJob)) {
		return nil
	}
	return s.specWarnings(job)
}

// Canonicalize has nothing left to do: PrepareForCreate and PrepareForUpdate
// already rewrote the spellings, before validation.
func (jobStrategy[J, S]) Canonicalize(runtime.Object) {}

func (jobStrategy[J, S]) AllowCreateOnUpdate(context.Context) bool { return false }

func (jobStrategy[J, S]) AllowUnconditionalUpdate(context.Context) bool { return true }

// specWarnings points out settings that are accepted but have no effect.
func (s jobStrategy[J, S]) specWarnings(job J) []string {
	var warnings []string
	spec := job.CommonSpec()
	for i, replica := range spec.ReplicaSpecs {
		policy := replica.Template.Spec.RestartPolicy
		if policy != "" && policy != "Never" {
			path := field.NewPath("spec", "replicaSpecs").Index(i).Child("template", "spec", "restartPolicy")
			warnings = append(warnings, fmt.Sprintf("%s: %q is ignored; pods run with Never and the job's restartPolicy decides replacements", path, policy))
		}
	}
	if spec.Scheduler != nil && spec.Scheduler.T9kScheduler != nil {
		warning := gangSchedulingWarning
		if spec.Scheduler.T9kScheduler.Queue != "" {
			warning += ". " + queueWarning
		}
		warnings = append(warnings, fmt.Sprintf("%s: %s", field.NewPath("spec", "scheduler", "t9kScheduler"), warning))
	}
	if s.kind.Warnings != nil {
		warnings = append(warnings, s.kind.Warnings(job)...)
	}
	return warnings
}

// gangSchedulingWarning and queueWarning say what spec.scheduler.t9kScheduler
// does: the apiserver cannot know which gang scheduler and which queueing
// system, if any, the controller runs with.
const (
	gangSchedulingWarning = "the pods are gang-scheduled (all or nothing) only when the controller runs with a " +
		"gang scheduler (the Workload API or coscheduling); otherwise they are scheduled one by one and the job's " +
		"GangScheduled condition says so"
	queueWarning = "The queue is a Kueue LocalQueue: where the controller queues with Kueue, the job's pods are " +
		"created once that queue admits the job; otherwise the queue is only recorded on the pod group"
)

// statusStrategy is the behaviour of the status subresource: the controller
// writes status, and the spec stays as stored.
type statusStrategy[J batch.TrainingJob, S any] struct {
	jobStrategy[J, S]
}

// GetResetFields names the spec and the progress as unwritable through
// status.
func (statusStrategy[J, S]) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(v1beta1.SchemeGroupVersion.String()): fieldpath.NewSet(
			fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("status", "progress")),
	}
}

// PrepareForUpdate keeps the stored spec and progress: only the rest of the
// status changes. Progress is the job's own pods' to write, through the
// progress subresource, so the controller's status writes never undo a
// report. A job another controller runs (spec.managedBy: MultiKueue) has no
// pods here: its whole status, progress included, is that controller's
// copy of the worker's.
func (s statusStrategy[J, S]) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	job, oldJob := obj.(J), old.(J)
	*s.kind.Spec(job) = *s.kind.Spec(oldJob)
	// What the job was made from is fixed when it is created.
	job.JobStatus().Runtime = oldJob.JobStatus().Runtime
	if batch.ManagedByUs(oldJob.CommonSpec().ManagedBy) {
		job.JobStatus().Progress = oldJob.JobStatus().Progress
		keepCheckpointReports(job.JobStatus(), oldJob.JobStatus())
	}
}

// keepCheckpointReports puts the stored checkpoint reports back into a
// status write, which may change only the controller's request.
func keepCheckpointReports(status, old *batch.TrainingJobStatus) {
	var latest *batch.CheckpointRecord
	var history []batch.CheckpointRecord
	if old.Checkpoint != nil {
		latest, history = old.Checkpoint.Latest, old.Checkpoint.History
	}
	if status.Checkpoint == nil {
		if latest == nil && history == nil {
			return
		}
		status.Checkpoint = &batch.CheckpointStatus{}
	}
	status.Checkpoint.Latest, status.Checkpoint.History = latest, history
	if c := status.Checkpoint; c.Latest == nil && c.History == nil && c.RequestTime == nil && c.RequestReason == "" {
		status.Checkpoint = nil
	}
}

func (statusStrategy[J, S]) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateTrainingJobStatusUpdate(obj.(J), old.(J))
}

func (statusStrategy[J, S]) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// checkpointStrategy is the behaviour of the checkpoint subresource's
// writes: the checkpoint reports in status.checkpoint change, and nothing
// else, not even the controller's request beside them.
type checkpointStrategy[J batch.TrainingJob, S any] struct {
	jobStrategy[J, S]
}

// PrepareForUpdate keeps everything of the stored job but its checkpoint
// reports.
func (s checkpointStrategy[J, S]) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	job, oldJob := obj.(J), old.(J)
	*s.kind.Spec(job) = *s.kind.Spec(oldJob)
	status := *oldJob.JobStatus()
	reported := job.JobStatus().Checkpoint
	var checkpoint batch.CheckpointStatus
	if status.Checkpoint != nil {
		checkpoint = *status.Checkpoint
	}
	if reported != nil {
		checkpoint.Latest, checkpoint.History = reported.Latest, reported.History
	}
	status.Checkpoint = &checkpoint
	*job.JobStatus() = status
}

func (checkpointStrategy[J, S]) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateTrainingJobStatusUpdate(obj.(J), old.(J))
}

func (checkpointStrategy[J, S]) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// progressStrategy is the behaviour of the progress subresource's writes:
// status.progress changes, and nothing else.
type progressStrategy[J batch.TrainingJob, S any] struct {
	jobStrategy[J, S]
}

// PrepareForUpdate keeps everything of the stored job but its progress.
func (s progressStrategy[J, S]) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	job, oldJob := obj.(J), old.(J)
	*s.kind.Spec(job) = *s.kind.Spec(oldJob)
	status := *oldJob.JobStatus()
	status.Progress = job.JobStatus().Progress
	*job.JobStatus() = status
}

func (progressStrategy[J, S]) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateTrainingJobStatusUpdate(obj.(J), old.(J))
}

func (progressStrategy[J, S]) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}
