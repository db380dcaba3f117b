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

package trainingruntime

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage/names"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/validation"
)

// scope is what tells the two runtime kinds apart: where they live, how to
// reach their spec, and how they are checked.
type scope struct {
	namespaced bool
	spec       func(runtime.Object) *batch.TrainingRuntimeSpec
	validate   func(runtime.Object) field.ErrorList
}

var (
	namespacedScope = scope{
		namespaced: true,
		spec:       func(o runtime.Object) *batch.TrainingRuntimeSpec { return &o.(*batch.TrainingRuntime).Spec },
		validate: func(o runtime.Object) field.ErrorList {
			return validation.ValidateTrainingRuntime(o.(*batch.TrainingRuntime))
		},
	}
	clusterScope = scope{
		spec: func(o runtime.Object) *batch.TrainingRuntimeSpec { return &o.(*batch.ClusterTrainingRuntime).Spec },
		validate: func(o runtime.Object) field.ErrorList {
			return validation.ValidateClusterTrainingRuntime(o.(*batch.ClusterTrainingRuntime))
		},
	}
)

// strategy is the create, update and delete behaviour of a runtime kind:
// the spec is all there is, and every change of it is a new generation.
type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	scope scope
}

func (s strategy) NamespaceScoped() bool { return s.scope.namespaced }

// PrepareForCreate starts the generation and rewrites accepted spellings,
// so validation judges the stored form.
func (s strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(metav1.Object).SetGeneration(1)
	s.scope.spec(obj).Template.Canonicalize()
}

// PrepareForUpdate bumps the generation when the spec changed.
func (s strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	s.scope.spec(obj).Template.Canonicalize()
	meta, oldMeta := obj.(metav1.Object), old.(metav1.Object)
	meta.SetGeneration(oldMeta.GetGeneration())
	if !apiequality.Semantic.DeepEqual(s.scope.spec(obj), s.scope.spec(old)) {
		meta.SetGeneration(oldMeta.GetGeneration() + 1)
	}
}

func (s strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return s.scope.validate(obj)
}

func (s strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaAccessorUpdate(obj.(metav1.Object), old.(metav1.Object), field.NewPath("metadata"))
	return append(allErrs, s.scope.validate(obj)...)
}

func (strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

func (strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

func (strategy) Canonicalize(runtime.Object) {}

func (strategy) AllowCreateOnUpdate(context.Context) bool { return false }

func (strategy) AllowUnconditionalUpdate(context.Context) bool { return true }
