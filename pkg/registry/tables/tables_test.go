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

package tables

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

var columns = []metav1.TableColumnDefinition{{Name: "Name", Type: "string"}}

func nameRow(obj runtime.Object) (metav1.TableRow, error) {
	return metav1.TableRow{Cells: []any{obj.(*corev1.ConfigMap).Name}}, nil
}

func TestConvertList(t *testing.T) {
	remaining := int64(7)
	list := &corev1.ConfigMapList{
		ListMeta: metav1.ListMeta{ResourceVersion: "12", Continue: "next", RemainingItemCount: &remaining},
		Items:    []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}},
	}
	table, err := Convert(list, &metav1.TableOptions{}, columns, nameRow)
	if err != nil {
		t.Fatal(err)
	}
	if len(table.ColumnDefinitions) != 1 || len(table.Rows) != 2 || table.Rows[1].Cells[0] != "b" || table.Rows[1].Object.Object == nil {
		t.Errorf("table %+v", table)
	}
	if table.ResourceVersion != "12" || table.Continue != "next" || *table.RemainingItemCount != 7 {
		t.Errorf("list metadata: %q %q %v", table.ResourceVersion, table.Continue, table.RemainingItemCount)
	}
	noHeaders, _ := Convert(list, &metav1.TableOptions{NoHeaders: true}, columns, nameRow)
	if len(noHeaders.ColumnDefinitions) != 0 {
		t.Errorf("columns without headers: %v", noHeaders.ColumnDefinitions)
	}
}

func TestConvertOne(t *testing.T) {
	one := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "3"}}
	table, err := Convert(one, nil, columns, nameRow)
	if err != nil || len(table.Rows) != 1 || table.ResourceVersion != "3" {
		t.Fatalf("%+v %v", table, err)
	}
	if _, err := Convert(one, nil, columns, func(runtime.Object) (metav1.TableRow, error) {
		return metav1.TableRow{}, errors.New("no row")
	}); err == nil {
		t.Error("a row's error was lost")
	}
}

func TestAge(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	if got := Age(metav1.NewTime(now.Add(-90*time.Second)), now); got != "90s" {
		t.Errorf("Age = %q, want 90s", got)
	}
	if got := Age(metav1.Time{}, now); got != "<unknown>" {
		t.Errorf("Age of no time = %q", got)
	}
}
