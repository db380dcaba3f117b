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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/validation"
)

// action is a change of run mode that a POST to a job's subresource asks for.
type action struct {
	// verb is the action's name in messages: "pause", "resume" or "debug".
	verb string
	// requestKind is the kind of the request body, for error messages.
	requestKind string
	// newRequest returns an empty request body.
	newRequest func() runtime.Object
	// validate checks the request body; nil when it carries nothing to check.
	validate func(request runtime.Object) field.ErrorList
	// apply changes the spec as the request asks.
	apply func(spec *batch.TrainingJobSpec, request runtime.Object)
}

var (
	pauseAction = action{
		verb:        "pause",
		requestKind: "PauseRequest",
		newRequest:  func() runtime.Object { return &batch.PauseRequest{} },
		apply:       func(spec *batch.TrainingJobSpec, _ runtime.Object) { batch.Pause(spec) },
	}
	resumeAction = action{
		verb:        "resume",
		requestKind: "ResumeRequest",
		newRequest:  func() runtime.Object { return &batch.ResumeRequest{} },
		apply:       func(spec *batch.TrainingJobSpec, _ runtime.Object) { batch.Resume(spec) },
	}
	debugAction = action{
		verb:        "debug",
		requestKind: "DebugRequest",
		newRequest:  func() runtime.Object { return &batch.DebugRequest{} },
		validate: func(request runtime.Object) field.ErrorList {
			return validation.ValidateDebugRequest(request.(*batch.DebugRequest))
		},
		apply: func(spec *batch.TrainingJobSpec, request runtime.Object) {
			batch.Debug(spec, request.(*batch.DebugRequest).ReplicaSpecs)
		},
	}
)

// ActionREST serves one action subresource (pause, resume or debug) of a job
// kind. A POST changes the job's spec on the full update path of the main
// resource: strategy and validation, UPDATE admission of the job, managedFields
// under the action's name, the generation bump and dry-run.
type ActionREST struct {
	store  *genericregistry.Store
	action action
	update *jobUpdate
	// newJob returns the versioned job, which is what a POST answers with.
	newJob func() runtime.Object
}

var (
	_ rest.NamedCreater    = &ActionREST{}
	_ rest.StorageMetadata = &ActionREST{}
)

// New returns an empty request body.
func (r *ActionREST) New() runtime.Object { return r.action.newRequest() }

// Destroy does nothing: the main resource owns the shared storage.
func (r *ActionREST) Destroy() {}

// ProducesObject tells the OpenAPI that a POST answers with the job, not
// with the request body it was sent.
func (r *ActionREST) ProducesObject(string) interface{} { return r.newJob() }

// ProducesMIMETypes adds nothing to the group's media types.
func (r *ActionREST) ProducesMIMETypes(string) []string { return nil }

// Create carries out the action on the named job and returns the job as
// stored afterwards.
func (r *ActionREST) Create(ctx context.Context, name string, request runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	if requestMeta, err := meta.Accessor(request); err == nil && requestMeta.GetName() != "" && requestMeta.GetName() != name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("metadata.name %q of the %s request does not match the job %q in the URL", requestMeta.GetName(), r.action.verb, name))
	}
	if r.action.validate != nil {
		if errs := r.action.validate(request); len(errs) > 0 {
			return nil, apierrors.NewInvalid(batch.Kind(r.action.requestKind), name, errs)
		}
	}
	// Admission (webhooks and policies on the subresource) judges the request.
	if createValidation != nil {
		if err := createValidation(ctx, request.DeepCopyObject()); err != nil {
			return nil, err
		}
	}

	updateOptions := &metav1.UpdateOptions{DryRun: options.DryRun, FieldManager: options.FieldManager}
	manager := options.FieldManager
	if manager == "" {
		manager = r.action.verb
	}
	// The transform starts from the job as stored at the time of each
	// attempt, so a concurrent write leads to a retry, never a lost update.
	transform := func(ctx context.Context, _, old runtime.Object) (runtime.Object, error) {
		job := old.DeepCopyObject().(batch.TrainingJob)
		if phase := job.JobStatus().Phase; phase.IsFinished() {
			return nil, apierrors.NewConflict(r.store.DefaultQualifiedResource, name,
				fmt.Errorf("the job has %s and cannot %s", phase, r.action.verb))
		}
		r.action.apply(job.CommonSpec(), request)
		if apiequality.Semantic.DeepEqual(job.CommonSpec(), old.(batch.TrainingJob).CommonSpec()) {
			// Already in the requested mode: nothing to write.
			return old, nil
		}
		changed := r.update.record(old, job, manager)
		if err := r.update.mutate(ctx, name, changed, old, updateOptions); err != nil {
			return nil, err
		}
		return changed, nil
	}
	job, _, err := r.store.Update(ctx, name, rest.DefaultUpdatedObjectInfo(nil, transform),
		rest.ValidateAllObjectFunc, r.update.validate(name, updateOptions), false, updateOptions)
	return job, err
}
