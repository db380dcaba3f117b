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

package tuningjob

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/validation"
)

// strategy is how the main resource creates and changes searches: users
// own the spec, the controller the status.
type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	// authorizeRuntime, when set, says whether the user may get the
	// runtime a trial template names (trainingruntime.Resolver.Authorize):
	// the controller makes the trials, so the search's creator is checked
	// here, as a job's creator is when the job names the runtime.
	authorizeRuntime func(ctx context.Context, ref *batch.RuntimeRef, namespace string) error
}

func (strategy) NamespaceScoped() bool { return true }

// PrepareForCreate starts the generation and drops any status sent along:
// only the controller writes it.
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	job := obj.(*batch.TuningJob)
	job.Generation = 1
	job.Status = batch.TuningJobStatus{}
	job.Spec.TrialTemplate.Canonicalize()
}

// PrepareForUpdate keeps the stored status and bumps the generation when
// the spec changed.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	job, oldJob := obj.(*batch.TuningJob), old.(*batch.TuningJob)
	job.Status = oldJob.Status
	job.Spec.TrialTemplate.Canonicalize()
	job.Generation = oldJob.Generation
	if !apiequality.Semantic.DeepEqual(&job.Spec, &oldJob.Spec) {
		job.Generation = oldJob.Generation + 1
	}
}

func (s strategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	job := obj.(*batch.TuningJob)
	allErrs := validation.ValidateTuningJob(job)
	t := &job.Spec.TrialTemplate
	if common := t.CommonSpec(); common != nil && common.RuntimeRef != nil && s.authorizeRuntime != nil {
		if err := s.authorizeRuntime(ctx, common.RuntimeRef, job.Namespace); err != nil {
			path := field.NewPath("spec", "trialTemplate", batch.TemplateKinds()[t.Kind()], "runtimeRef")
			allErrs = append(allErrs, field.Forbidden(path, err.Error()))
		}
	}
	return allErrs
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateTuningJobUpdate(obj.(*batch.TuningJob), old.(*batch.TuningJob))
}

// GetResetFields tells server-side apply that the main resource never
// writes the status.
func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		"batch.tensorstack.dev/v1beta1": fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
	}
}

func (strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

func (strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

func (strategy) Canonicalize(runtime.Object) {}

func (strategy) AllowCreateOnUpdate(context.Context) bool { return false }

func (strategy) AllowUnconditionalUpdate(context.Context) bool { return true }

// statusStrategy is how the status subresource changes a search: the
// status only, the spec as stored.
type statusStrategy struct{ strategy }

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	job, oldJob := obj.(*batch.TuningJob), old.(*batch.TuningJob)
	job.Spec = oldJob.Spec
	job.Generation = oldJob.Generation
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateTuningJobStatusUpdate(obj.(*batch.TuningJob), old.(*batch.TuningJob))
}

// GetResetFields tells server-side apply that the status subresource
// never writes the spec or the metadata's labels and annotations.
func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		"batch.tensorstack.dev/v1beta1": fieldpath.NewSet(fieldpath.MakePathOrDie("spec")),
	}
}
