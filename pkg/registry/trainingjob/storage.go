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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// Storage holds the REST objects of one job kind: the resource itself, its
// status and its actions.
type Storage struct {
	Job    *REST
	Status *StatusREST
	Pause  *ActionREST
	Resume *ActionREST
	Debug  *ActionREST
	// Progress takes the job's progress reports.
	Progress *ProgressREST
	// Checkpoint takes the job's checkpoint reports.
	Checkpoint *CheckpointREST
	// ProgressHistory answers with every stored report's metrics.
	ProgressHistory *ProgressHistoryREST
	// Scale is the kind's scale subresource, when it has one.
	Scale rest.Storage
}

// NewStorage builds the storage of a job kind on the given storage backend.
// Its actions change jobs through updatePath; progress says how reports
// are written and checked; runtimes applies a new job's runtime (nil
// applies none); records keeps a record of each deleted job (nil keeps
// none).
func NewStorage[J batch.TrainingJob, S any](optsGetter generic.RESTOptionsGetter, kind *Kind[J, S], updatePath UpdatePath, progress ProgressConfig,
	runtimes RuntimeResolver, records JobRecorder) (*Storage, error) {
	strategy := newJobStrategy(updatePath.Scheme, kind)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return kind.New() },
		NewListFunc:               kind.NewList,
		PredicateFunc:             Match,
		DefaultQualifiedResource:  kind.Resource(),
		SingularQualifiedResource: batch.Resource(kind.Info.Singular),

		CreateStrategy:      strategy,
		UpdateStrategy:      strategy,
		DeleteStrategy:      strategy,
		ResetFieldsStrategy: strategy,

		TableConvertor: tableConvertor{now: time.Now},
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: GetAttrs}); err != nil {
		return nil, err
	}
	limitStoredSize(store)
	history, err := newProgressHistory(optsGetter, kind.Resource(), kind.New())
	if err != nil {
		return nil, err
	}
	store.AfterDelete = afterDelete(history, records, kind.Info.Kind)
	versionedKind, versionedResource, err := versionedKindAndResource(updatePath.Scheme, kind.New(), kind.Info.Resource)
	if err != nil {
		return nil, err
	}

	// The subresources share the main store's storage and differ only in the
	// strategy that decides which part of the object a write may change.
	statusStore := *store
	statusStrategy := statusStrategy[J, S]{strategy}
	statusStore.UpdateStrategy = statusStrategy
	statusStore.ResetFieldsStrategy = statusStrategy

	progressStore := *store
	progressStore.UpdateStrategy = progressStrategy[J, S]{strategy}
	checkpointStore := *store
	checkpointStore.UpdateStrategy = checkpointStrategy[J, S]{strategy}

	storage := &Storage{
		Job: &REST{Store: store, shortNames: []string{kind.Info.ShortName}, kind: versionedKind.GroupKind(),
			applyRuntime: newRuntimeApplier(kind, runtimes)},
		Status:          &StatusREST{store: &statusStore, kind: versionedKind.GroupKind()},
		Progress:        newProgressREST(store, &progressStore, history, progress),
		Checkpoint:      newCheckpointREST(store, &checkpointStore, progress),
		ProgressHistory: &ProgressHistoryREST{store: store, history: history},
	}
	newJob := func() runtime.Object {
		job, _ := updatePath.Scheme.New(versionedKind)
		return job
	}
	for _, a := range []struct {
		rest   **ActionREST
		action action
	}{{&storage.Pause, pauseAction}, {&storage.Resume, resumeAction}, {&storage.Debug, debugAction}} {
		update, err := newJobUpdate(updatePath, versionedKind, versionedResource, a.action.verb, strategy.GetResetFields())
		if err != nil {
			return nil, err
		}
		*a.rest = &ActionREST{store: store, action: a.action, update: update, newJob: newJob}
	}
	return storage, nil
}

// Resources maps the resource and its subresources to their REST objects,
// keyed the way an API group's storage map expects.
func (s *Storage) Resources(resource string) map[string]rest.Storage {
	m := map[string]rest.Storage{
		resource:                      s.Job,
		resource + "/status":          s.Status,
		resource + "/pause":           s.Pause,
		resource + "/resume":          s.Resume,
		resource + "/debug":           s.Debug,
		resource + "/progress":        s.Progress,
		resource + "/checkpoint":      s.Checkpoint,
		resource + "/progresshistory": s.ProgressHistory,
	}
	if s.Scale != nil {
		m[resource+"/scale"] = s.Scale
	}
	return m
}

// REST is the main resource of a job kind.
type REST struct {
	*genericregistry.Store
	shortNames []string
	// kind names the job kind in errors.
	kind schema.GroupKind
	// applyRuntime applies a new job's runtime (runtimes.go).
	applyRuntime func(context.Context, runtime.Object) error
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
)

// ShortNames lets kubectl accept the kind's abbreviation.
func (r *REST) ShortNames() []string { return r.shortNames }

// Categories puts every job kind under kubectl get trainingjobs.
func (r *REST) Categories() []string { return []string{v1beta1.CategoryTrainingJobs} }

// StatusREST is the status subresource of a job kind.
type StatusREST struct {
	store *genericregistry.Store
	kind  schema.GroupKind
}

var (
	_ rest.Patcher             = &StatusREST{}
	_ rest.ResetFieldsStrategy = &StatusREST{}
	_ rest.TableConvertor      = &StatusREST{}
)

// New returns an empty job.
func (r *StatusREST) New() runtime.Object { return r.store.New() }

// Destroy does nothing: the main resource owns the shared storage.
func (r *StatusREST) Destroy() {}

// Get returns the job.
func (r *StatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update writes the job's status. It never creates a job.
func (r *StatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, checkedObjectInfo{UpdatedObjectInfo: objInfo, kind: r.kind, name: name}, createValidation, updateValidation, false, options)
}

// GetResetFields names the fields a status write cannot change.
func (r *StatusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

// ConvertToTable renders the job as a kubectl table.
func (r *StatusREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}
