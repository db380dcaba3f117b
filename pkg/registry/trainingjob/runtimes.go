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

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	"tensorstack.dev/training/pkg/apis/batch"
)

// RuntimeResolver applies the runtime a new job names (spec.runtimeRef) and
// the job's spec.trainer to the job, whose whole spec (a pointer to the
// kind's spec type) is spec, and records the runtime in status.runtime.
// It returns the API's errors.
type RuntimeResolver interface {
	Resolve(ctx context.Context, kind batch.KindInfo, job batch.TrainingJob, spec any) error
}

// newRuntimeApplier returns what the kind's REST calls on every job it
// creates, before the store prepares and validates it: the job's
// status.runtime is cleared, so that only the resolver sets it, and the
// runtime and trainer are applied.
func newRuntimeApplier[J batch.TrainingJob, S any](kind *Kind[J, S], resolver RuntimeResolver) func(context.Context, runtime.Object) error {
	return func(ctx context.Context, obj runtime.Object) error {
		job, ok := obj.(J)
		if !ok {
			return nil
		}
		job.JobStatus().Runtime = nil
		spec := job.CommonSpec()
		if resolver == nil || (spec.RuntimeRef == nil && spec.Trainer == nil) {
			return nil
		}
		// The runtime's template is stored in canonical form; the job's
		// replica types must be too, to meet the template's by name.
		kind.Canonicalize(job)
		return resolver.Resolve(ctx, kind.Info, job, kind.Spec(job))
	}
}

// Create applies the job's runtime, then stores the job.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	if err := r.applyRuntime(ctx, obj); err != nil {
		return nil, err
	}
	return r.Store.Create(ctx, obj, createValidation, options)
}

// creatingObjectInfo applies the runtime of a job that an update creates
// (a server-side apply of a job that does not exist yet), as Create does.
type creatingObjectInfo struct {
	rest.UpdatedObjectInfo
	applyRuntime func(context.Context, runtime.Object) error
}

func (i creatingObjectInfo) UpdatedObject(ctx context.Context, old runtime.Object) (runtime.Object, error) {
	obj, err := i.UpdatedObjectInfo.UpdatedObject(ctx, old)
	if err != nil {
		return nil, err
	}
	// The store hands a create an empty object as the old one.
	if accessor, err := meta.Accessor(old); err == nil && accessor.GetResourceVersion() == "" {
		if err := i.applyRuntime(ctx, obj); err != nil {
			return nil, err
		}
	}
	return obj, nil
}
