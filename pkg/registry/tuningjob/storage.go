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
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// ShortName is kubectl's abbreviation of tuningjobs.
const ShortName = "tune"

// Storage is every resource of the TuningJob kind.
type Storage struct {
	Job    *REST
	Status *StatusREST
	Pause  *ActionREST
	Resume *ActionREST
}

// NewStorage stores TuningJobs in their namespaces. authorizeRuntime, when
// set, refuses a search whose trials name a runtime its creator may not get.
func NewStorage(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter,
	authorizeRuntime func(ctx context.Context, ref *batch.RuntimeRef, namespace string) error) (*Storage, error) {
	s := strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator, authorizeRuntime: authorizeRuntime}
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &batch.TuningJob{} },
		NewListFunc:               func() runtime.Object { return &batch.TuningJobList{} },
		DefaultQualifiedResource:  batch.Resource("tuningjobs"),
		SingularQualifiedResource: batch.Resource("tuningjob"),

		CreateStrategy:      s,
		UpdateStrategy:      s,
		DeleteStrategy:      s,
		ResetFieldsStrategy: s,

		TableConvertor: tableConvertor{},
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter}); err != nil {
		return nil, err
	}
	statusStore := *store
	status := statusStrategy{s}
	statusStore.UpdateStrategy, statusStore.ResetFieldsStrategy = status, status
	return &Storage{
		Job:    &REST{store},
		Status: &StatusREST{store: &statusStore},
		Pause:  &ActionREST{store: store, verb: "pause", suspend: true, newRequest: func() runtime.Object { return &batch.PauseRequest{} }},
		Resume: &ActionREST{store: store, verb: "resume", suspend: false, newRequest: func() runtime.Object { return &batch.ResumeRequest{} }},
	}, nil
}

// REST is the main resource of searches.
type REST struct {
	*genericregistry.Store
}

var (
	_ rest.ShortNamesProvider   = &REST{}
	_ rest.SingularNameProvider = &REST{}
)

// ShortNames lets kubectl accept tune for tuningjobs.
func (r *REST) ShortNames() []string { return []string{ShortName} }

// StatusREST is the status subresource, which the controller writes.
type StatusREST struct {
	store *genericregistry.Store
}

var _ rest.Patcher = &StatusREST{}

// New returns an empty search.
func (r *StatusREST) New() runtime.Object { return &batch.TuningJob{} }

// Destroy does nothing: the main resource owns the shared storage.
func (r *StatusREST) Destroy() {}

// Get returns the search.
func (r *StatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update writes the search's status.
func (r *StatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	// A status write never creates the search.
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// GetResetFields says which fields the status subresource leaves alone.
func (r *StatusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

// ConvertToTable renders the search as its main resource does.
func (r *StatusREST) ConvertToTable(ctx context.Context, object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}

// ActionREST is the pause or the resume action of a whole search: a POST
// sets or clears spec.suspend, on the main resource's update path, and
// answers with the search.
type ActionREST struct {
	store      *genericregistry.Store
	verb       string
	suspend    bool
	newRequest func() runtime.Object
}

var (
	_ rest.NamedCreater    = &ActionREST{}
	_ rest.StorageMetadata = &ActionREST{}
)

// New returns an empty request body.
func (r *ActionREST) New() runtime.Object { return r.newRequest() }

// Destroy does nothing: the main resource owns the shared storage.
func (r *ActionREST) Destroy() {}

// ProducesObject tells the OpenAPI that a POST answers with the search, in
// the version served.
func (r *ActionREST) ProducesObject(string) interface{} { return &v1beta1.TuningJob{} }

// ProducesMIMETypes adds nothing to the group's media types.
func (r *ActionREST) ProducesMIMETypes(string) []string { return nil }

// Create pauses or resumes the named search and returns it as stored.
func (r *ActionREST) Create(ctx context.Context, name string, request runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	if m, err := meta.Accessor(request); err == nil && m.GetName() != "" && m.GetName() != name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("metadata.name %q of the %s request does not match the search %q in the URL", m.GetName(), r.verb, name))
	}
	if createValidation != nil {
		if err := createValidation(ctx, request.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	transform := func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
		job := old.DeepCopyObject().(*batch.TuningJob)
		if batch.TuningFinished(&job.Status) {
			return nil, apierrors.NewConflict(batch.Resource("tuningjobs"), name,
				fmt.Errorf("the search has ended and cannot %s", r.verb))
		}
		job.Spec.Suspend = r.suspend
		return job, nil
	}
	updateOptions := &metav1.UpdateOptions{DryRun: options.DryRun, FieldManager: options.FieldManager}
	job, _, err := r.store.Update(ctx, name, rest.DefaultUpdatedObjectInfo(nil, transform),
		rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, updateOptions)
	return job, err
}
