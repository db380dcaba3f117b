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

package trainingjobrecord

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"

	"tensorstack.dev/training/pkg/apis/batch"
)

// Resource is the records' resource name.
const Resource = "trainingjobrecords"

// ShortName is kubectl's abbreviation of trainingjobrecords.
const ShortName = "tjr"

// REST serves records to users: get, list, watch and delete. It has no
// create or update, so the API offers neither.
type REST struct {
	store *genericregistry.Store
}

var (
	_ rest.Getter               = &REST{}
	_ rest.Lister               = &REST{}
	_ rest.Watcher              = &REST{}
	_ rest.GracefulDeleter      = &REST{}
	_ rest.CollectionDeleter    = &REST{}
	_ rest.Scoper               = &REST{}
	_ rest.ShortNamesProvider   = &REST{}
	_ rest.SingularNameProvider = &REST{}
	_ rest.Storage              = &REST{}
)

// NewStore is the records' storage, which the Keeper writes and REST reads.
func NewStore(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*genericregistry.Store, error) {
	s := strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator}
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &batch.TrainingJobRecord{} },
		NewListFunc:               func() runtime.Object { return &batch.TrainingJobRecordList{} },
		DefaultQualifiedResource:  batch.Resource(Resource),
		SingularQualifiedResource: batch.Resource("trainingjobrecord"),

		CreateStrategy: s,
		UpdateStrategy: s,
		DeleteStrategy: s,

		TableConvertor: tableConvertor{},
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter}); err != nil {
		return nil, err
	}
	return store, nil
}

// NewREST serves the records of store.
func NewREST(store *genericregistry.Store) *REST { return &REST{store: store} }

// New returns an empty record.
func (r *REST) New() runtime.Object { return r.store.New() }

// Destroy closes the storage.
func (r *REST) Destroy() { r.store.Destroy() }

// NewList returns an empty list of records.
func (r *REST) NewList() runtime.Object { return r.store.NewList() }

// NamespaceScoped is true: a record lives in its job's namespace.
func (r *REST) NamespaceScoped() bool { return true }

// ShortNames lets kubectl accept tjr for trainingjobrecords.
func (r *REST) ShortNames() []string { return []string{ShortName} }

// GetSingularName is the resource's singular name.
func (r *REST) GetSingularName() string { return r.store.GetSingularName() }

// Get returns a record.
func (r *REST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// List returns the records the options select.
func (r *REST) List(ctx context.Context, options *internalversion.ListOptions) (runtime.Object, error) {
	return r.store.List(ctx, options)
}

// Watch follows the records the options select.
func (r *REST) Watch(ctx context.Context, options *internalversion.ListOptions) (watch.Interface, error) {
	return r.store.Watch(ctx, options)
}

// Delete removes a record.
func (r *REST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	return r.store.Delete(ctx, name, deleteValidation, options)
}

// DeleteCollection removes the records the options select: how a
// namespace's records go with it.
func (r *REST) DeleteCollection(ctx context.Context, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions,
	listOptions *internalversion.ListOptions) (runtime.Object, error) {
	return r.store.DeleteCollection(ctx, deleteValidation, options, listOptions)
}

// ConvertToTable renders records for kubectl get.
func (r *REST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}

// strategy is how the server writes records: as built, never changed.
type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
}

func (strategy) NamespaceScoped() bool                                            { return true }
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}
func (strategy) Validate(context.Context, runtime.Object) field.ErrorList         { return nil }
func (strategy) WarningsOnCreate(context.Context, runtime.Object) []string        { return nil }
func (strategy) Canonicalize(runtime.Object)                                      {}
func (strategy) AllowCreateOnUpdate(context.Context) bool                         { return false }
func (strategy) AllowUnconditionalUpdate(context.Context) bool                    { return false }
func (strategy) ValidateUpdate(context.Context, runtime.Object, runtime.Object) field.ErrorList {
	return field.ErrorList{field.Forbidden(field.NewPath(""), "a record is never changed")}
}
func (strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}
