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

// Package tables renders stored objects as the tables kubectl get asks
// for: the columns, a row of each object of a list (or of the one object),
// and the list's resourceVersion, continue token and remaining count. Each
// resource gives its columns and its cells.
package tables

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Convert renders object, a list or one object, with columns; row makes an
// object's row (its cells; the object is added here). The columns are left
// out when tableOptions ask for no headers.
func Convert(object, tableOptions runtime.Object, columns []metav1.TableColumnDefinition,
	row func(runtime.Object) (metav1.TableRow, error)) (*metav1.Table, error) {
	table := &metav1.Table{}
	if opts, ok := tableOptions.(*metav1.TableOptions); !ok || !opts.NoHeaders {
		table.ColumnDefinitions = columns
	}
	add := func(obj runtime.Object) error {
		r, err := row(obj)
		if err != nil {
			return err
		}
		r.Object = runtime.RawExtension{Object: obj}
		table.Rows = append(table.Rows, r)
		return nil
	}
	if meta.IsListType(object) {
		if err := meta.EachListItem(object, add); err != nil {
			return nil, err
		}
		if l, err := meta.ListAccessor(object); err == nil {
			table.ResourceVersion, table.Continue, table.RemainingItemCount = l.GetResourceVersion(), l.GetContinue(), l.GetRemainingItemCount()
		}
		return table, nil
	}
	if err := add(object); err != nil {
		return nil, err
	}
	if m, err := meta.Accessor(object); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
	return table, nil
}

// Age is how long ago created was, as kubectl writes it; <unknown> for an
// object without a creation time.
func Age(created metav1.Time, now time.Time) string {
	if created.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(created.Time))
}
