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

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	scalescheme "k8s.io/client-go/scale/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// ScaleREST is the scale subresource of a kind that may be elastic
// (batch.ElasticJob), as Deployments have one: kubectl scale and a
// HorizontalPodAutoscaler set an elastic job's spec.elastic.expectedReplicas
// through it, and read back its replicas and its pods' selector. The write
// goes through the job's own strategy, so a count outside [minReplicas,
// maxReplicas] is refused there with the field's path; a job that is not
// elastic is refused here.
type ScaleREST struct {
	store *genericregistry.Store
	// kind is the job kind, as the job-kind label names it.
	kind string
}

// NewScaleREST returns the scale subresource of a kind's jobs, kept in
// store.
func NewScaleREST(store *genericregistry.Store, kind string) *ScaleREST {
	return &ScaleREST{store: store, kind: kind}
}

var (
	_ rest.Patcher                  = &ScaleREST{}
	_ rest.GroupVersionKindProvider = &ScaleREST{}
)

// expectedReplicasPath is where the scale's spec.replicas lives in the job,
// for managedFields.
var expectedReplicasPath = managedfields.ResourcePathMappings{
	v1beta1.SchemeGroupVersion.String(): fieldpath.MakePathOrDie("spec", "elastic", "expectedReplicas"),
}

// GroupVersionKind is autoscaling/v1 Scale, whatever version is asked.
func (r *ScaleREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return autoscalingv1.SchemeGroupVersion.WithKind("Scale")
}

// New returns an empty Scale.
func (r *ScaleREST) New() runtime.Object { return &scalescheme.Scale{} }

// Destroy does nothing: the main resource owns the shared storage.
func (r *ScaleREST) Destroy() {}

// Get returns the job's scale.
func (r *ScaleREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	obj, err := r.store.Get(ctx, name, options)
	if err != nil {
		return nil, err
	}
	return r.scaleOf(obj.(batch.ElasticJob)), nil
}

// Update sets the job's expectedReplicas from the scale's spec.replicas.
func (r *ScaleREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	obj, _, err := r.store.Update(ctx, name, &scaleUpdate{rest: r, name: name, request: objInfo},
		func(ctx context.Context, obj runtime.Object) error {
			return createValidation(ctx, r.scaleOf(obj.(batch.ElasticJob)))
		},
		func(ctx context.Context, obj, old runtime.Object) error {
			return updateValidation(ctx, r.scaleOf(obj.(batch.ElasticJob)), r.scaleOf(old.(batch.ElasticJob)))
		},
		false, options)
	if err != nil {
		return nil, false, err
	}
	return r.scaleOf(obj.(batch.ElasticJob)), false, nil
}

// ConvertToTable shows a scale as kubectl get shows one.
func (r *ScaleREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return rest.NewDefaultTableConvertor(r.store.DefaultQualifiedResource).ConvertToTable(ctx, object, tableOptions)
}

// scaleOf is the scale of a job: the replicas it runs (all of them, for a
// job that is not elastic), how many have a pod, and the pods' selector.
func (r *ScaleREST) scaleOf(job batch.ElasticJob) *scalescheme.Scale {
	spec := batch.TotalReplicas(job.CommonSpec().ReplicaSpecs)
	if e := job.ElasticSpec(); batch.ElasticEnabled(e) {
		spec = batch.ElasticTotal(spec, e.MinReplicas, e.MaxReplicas, e.ExpectedReplicas)
	}
	return &scalescheme.Scale{
		ObjectMeta: metav1.ObjectMeta{
			Name:              job.GetName(),
			Namespace:         job.GetNamespace(),
			UID:               job.GetUID(),
			ResourceVersion:   job.GetResourceVersion(),
			CreationTimestamp: job.GetCreationTimestamp(),
		},
		Spec: scalescheme.ScaleSpec{Replicas: int32(min(spec, batch.MaxTotalReplicas))},
		Status: scalescheme.ScaleStatus{
			Replicas: ptr.Deref(job.JobStatus().Replicas, 0),
			Selector: &metav1.LabelSelector{MatchLabels: v1beta1.JobLabels(r.kind, job.GetName())},
		},
	}
}

// scaleUpdate turns the job as stored into its scale, lets the request
// change that, and carries the new count back into the job.
type scaleUpdate struct {
	rest    *ScaleREST
	name    string
	request rest.UpdatedObjectInfo
}

func (u *scaleUpdate) Preconditions() *metav1.Preconditions { return u.request.Preconditions() }

func (u *scaleUpdate) UpdatedObject(ctx context.Context, oldObj runtime.Object) (runtime.Object, error) {
	resource := u.rest.store.DefaultQualifiedResource
	job := oldObj.DeepCopyObject().(batch.ElasticJob)
	if job.GetResourceVersion() == "" {
		return nil, apierrors.NewNotFound(resource, u.name)
	}
	fields := managedfields.NewScaleHandler(job.GetManagedFields(), v1beta1.SchemeGroupVersion, expectedReplicasPath)
	old := u.rest.scaleOf(job)
	var err error
	if old.ManagedFields, err = fields.ToSubresource(); err != nil {
		return nil, err
	}
	obj, err := u.request.UpdatedObject(ctx, old)
	if err != nil {
		return nil, err
	}
	scale, ok := obj.(*scalescheme.Scale)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected a Scale, got %T", obj))
	}
	if scale.UID != "" && scale.UID != job.GetUID() {
		return nil, apierrors.NewConflict(resource, u.name,
			fmt.Errorf("precondition failed: UID in the scale %s, UID of the job %s", scale.UID, job.GetUID()))
	}
	setManagedFields := func() error {
		managed, err := fields.ToParent(scale.ManagedFields)
		job.SetManagedFields(managed)
		return err
	}
	if scale.Spec.Replicas == old.Spec.Replicas && scale.ResourceVersion == job.GetResourceVersion() {
		return job, setManagedFields()
	}
	if phase := job.JobStatus().Phase; phase.IsFinished() {
		return nil, apierrors.NewConflict(resource, u.name, fmt.Errorf("the job has %s and cannot scale", phase))
	}
	e := job.ElasticSpec()
	if !batch.ElasticEnabled(e) {
		return nil, apierrors.NewInvalid(batch.Kind(u.rest.kind), u.name, field.ErrorList{field.Invalid(
			field.NewPath("spec", "elastic", "enabled"), false,
			"only an elastic job scales: its replicas are fixed while it runs; see spec.elastic")})
	}
	e.ExpectedReplicas = ptr.To(scale.Spec.Replicas)
	job.SetResourceVersion(scale.ResourceVersion)
	return job, setManagedFields()
}
