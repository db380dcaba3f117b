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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// UpdatePath is what lets an action change a job exactly as an update of the
// job by its user would: the server's admission chain judges the change, and
// managedFields record who made it.
type UpdatePath struct {
	// Scheme converts, defaults and creates the group's objects.
	Scheme *runtime.Scheme
	// Admission is the server's admission chain; nil admits every change.
	Admission admission.Interface
	// TypeConverter knows the schema of the group's versioned types, so that
	// managedFields can record the fields an action sets.
	TypeConverter managedfields.TypeConverter
	// EquivalentResources lets webhooks that match an equivalent resource
	// see the change; nil knows no equivalents.
	EquivalentResources runtime.EquivalentResourceMapper
}

// jobUpdate carries out one action's change of a job through the update
// path: it records the change in managedFields, runs mutating admission in
// the transform, and gives the store validating admission to call after the
// strategy has validated the job.
type jobUpdate struct {
	kind     schema.GroupVersionKind
	resource schema.GroupVersionResource
	// admission is the server's chain, or nil.
	admission        admission.Interface
	objectInterfaces admission.ObjectInterfaces
	// fieldManager records an action's changes under the action's name.
	fieldManager *managedfields.FieldManager
}

func newJobUpdate(path UpdatePath, kind schema.GroupVersionKind, resource schema.GroupVersionResource, verb string, resetFields map[fieldpath.APIVersion]*fieldpath.Set) (*jobUpdate, error) {
	if path.Scheme == nil || path.TypeConverter == nil {
		return nil, fmt.Errorf("the %s action of %s needs a scheme and a type converter", verb, resource.Resource)
	}
	// Entries are recorded with the action as their subresource, as status
	// writes are with "status", so managedFields tell which call set a field.
	fieldManager, err := managedfields.NewDefaultFieldManager(path.TypeConverter, path.Scheme, path.Scheme, path.Scheme,
		kind, schema.GroupVersion{Group: kind.Group, Version: runtime.APIVersionInternal}, verb,
		fieldpath.NewExcludeFilterSetMap(resetFields))
	if err != nil {
		return nil, fmt.Errorf("field manager of the %s action: %w", verb, err)
	}
	mapper := path.EquivalentResources
	if mapper == nil {
		mapper = runtime.NewEquivalentResourceRegistry()
	}
	update := &jobUpdate{
		kind: kind, resource: resource, fieldManager: fieldManager,
		objectInterfaces: &admission.RuntimeObjectInterfaces{
			ObjectCreater: path.Scheme, ObjectTyper: path.Scheme, ObjectDefaulter: path.Scheme,
			ObjectConvertor: path.Scheme, EquivalentResourceMapper: mapper,
		},
	}
	if path.Admission != nil {
		// Like the API handlers, so admission's audit annotations reach
		// the audit log.
		update.admission = admission.WithAudit(path.Admission)
	}
	return update, nil
}

// attributes describes the action's change to admission as what it is: an
// UPDATE of the job itself, not of a subresource, so that webhooks and
// policies guarding updates of jobs see pauses and debug commands too.
func (u *jobUpdate) attributes(ctx context.Context, name string, job, old runtime.Object, options *metav1.UpdateOptions) admission.Attributes {
	namespace, _ := request.NamespaceFrom(ctx)
	user, _ := request.UserFrom(ctx)
	return admission.NewAttributesRecord(job, old, u.kind, namespace, name, u.resource, "", admission.Update,
		options, len(options.DryRun) > 0, user)
}

// record notes the change from old to job in managedFields under manager.
func (u *jobUpdate) record(old, job runtime.Object, manager string) runtime.Object {
	return u.fieldManager.UpdateNoErrors(old, job, manager)
}

// mutate runs the mutating half of the admission chain on the changed job.
func (u *jobUpdate) mutate(ctx context.Context, name string, job, old runtime.Object, options *metav1.UpdateOptions) error {
	mutating, ok := u.admission.(admission.MutationInterface)
	if !ok || !mutating.Handles(admission.Update) {
		return nil
	}
	return mutating.Admit(ctx, u.attributes(ctx, name, job, old, options), u.objectInterfaces)
}

// validate returns the validating half of the admission chain, for the store
// to call once the strategy has accepted the changed job.
func (u *jobUpdate) validate(name string, options *metav1.UpdateOptions) rest.ValidateObjectUpdateFunc {
	validating, ok := u.admission.(admission.ValidationInterface)
	if !ok || !validating.Handles(admission.Update) {
		return rest.ValidateAllObjectUpdateFunc
	}
	return func(ctx context.Context, job, old runtime.Object) error {
		return validating.Validate(ctx, u.attributes(ctx, name, job, old, options), u.objectInterfaces)
	}
}

// versionedKindAndResource names a job kind as clients and admission see it:
// in the served version rather than the internal one.
func versionedKindAndResource(scheme *runtime.Scheme, internal runtime.Object, resource string) (schema.GroupVersionKind, schema.GroupVersionResource, error) {
	kinds, _, err := scheme.ObjectKinds(internal)
	if err != nil {
		return schema.GroupVersionKind{}, schema.GroupVersionResource{}, err
	}
	return v1beta1.SchemeGroupVersion.WithKind(kinds[0].Kind), v1beta1.SchemeGroupVersion.WithResource(resource), nil
}
