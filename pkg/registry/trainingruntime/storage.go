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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage/names"

	"tensorstack.dev/training/pkg/apis/batch"
)

// REST is the storage of one runtime kind.
type REST struct {
	*genericregistry.Store
}

// NewTrainingRuntimeREST stores TrainingRuntimes, in their namespaces.
func NewTrainingRuntimeREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*REST, error) {
	return newREST(typer, optsGetter, namespacedScope, "trainingruntimes", "trainingruntime",
		func() runtime.Object { return &batch.TrainingRuntime{} },
		func() runtime.Object { return &batch.TrainingRuntimeList{} })
}

// NewClusterTrainingRuntimeREST stores ClusterTrainingRuntimes.
func NewClusterTrainingRuntimeREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*REST, error) {
	return newREST(typer, optsGetter, clusterScope, "clustertrainingruntimes", "clustertrainingruntime",
		func() runtime.Object { return &batch.ClusterTrainingRuntime{} },
		func() runtime.Object { return &batch.ClusterTrainingRuntimeList{} })
}

func newREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter, sc scope, resource, singular string,
	newObj, newList func() runtime.Object) (*REST, error) {
	s := strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator, scope: sc}
	store := &genericregistry.Store{
		NewFunc:                   newObj,
		NewListFunc:               newList,
		DefaultQualifiedResource:  batch.Resource(resource),
		SingularQualifiedResource: batch.Resource(singular),

		CreateStrategy: s,
		UpdateStrategy: s,
		DeleteStrategy: s,

		TableConvertor: tableConvertor{scope: sc},
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter}); err != nil {
		return nil, err
	}
	return &REST{store}, nil
}
