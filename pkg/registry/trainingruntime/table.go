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
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"tensorstack.dev/training/pkg/registry/tables"
)

var tableColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the runtime."},
	{Name: "Kind", Type: "string", Description: "Kind of the jobs made from the runtime."},
	{Name: "Image", Type: "string", Description: "Image of the training container of the first replica type."},
	{Name: "Age", Type: "string", Description: "Time since the runtime was created."},
}

// tableConvertor renders runtimes as kubectl table rows.
type tableConvertor struct{ scope scope }

func (c tableConvertor) ConvertToTable(_ context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return tables.Convert(object, tableOptions, tableColumns, func(obj runtime.Object) (metav1.TableRow, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return metav1.TableRow{}, err
		}
		t := &c.scope.spec(obj).Template
		return metav1.TableRow{Cells: []any{m.GetName(), t.Kind(), t.Image(), tables.Age(m.GetCreationTimestamp(), time.Now())}}, nil
	})
}
