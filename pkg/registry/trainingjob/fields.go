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
	"fmt"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"

	"tensorstack.dev/training/pkg/apis/batch"
)

// SelectableFields are the fields a job list or watch can be filtered on with
// a field selector. The v1beta1 field label conversion accepts the same set.
func SelectableFields(job batch.TrainingJob) fields.Set {
	return fields.Set{
		"metadata.name":        job.GetName(),
		"metadata.namespace":   job.GetNamespace(),
		batch.FieldStatusPhase: string(job.JobStatus().Phase),
	}
}

// GetAttrs returns the labels and selectable fields of a job.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	job, ok := obj.(batch.TrainingJob)
	if !ok {
		return nil, nil, fmt.Errorf("not a training job: %T", obj)
	}
	return labels.Set(job.GetLabels()), SelectableFields(job), nil
}

// Match returns the filter of a list or watch with the given selectors.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
