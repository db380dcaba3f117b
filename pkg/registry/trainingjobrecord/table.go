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

package trainingjobrecord

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/registry/tables"
)

var tableColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the record: the job's name and the start of its UID."},
	{Name: "Job", Type: "string", Description: "Name of the deleted job."},
	{Name: "Kind", Type: "string", Description: "Kind of the deleted job."},
	{Name: "Phase", Type: "string", Description: "The job's phase when it was deleted."},
	{Name: "Ran", Type: "string", Description: "From the job's start to its completion, or to its deletion."},
	{Name: "Deleted", Type: "string", Description: "Time since the job was deleted."},
	{Name: "Created", Type: "string", Priority: 1, Description: "When the job was created (RFC 3339)."},
	{Name: "Step", Type: "string", Priority: 1, Description: "The job's last step."},
	{Name: "Left-Out", Type: "string", Priority: 1, Description: "What the record left out to stay within its size."},
}

// tableConvertor renders records as kubectl table rows.
type tableConvertor struct{}

func (tableConvertor) ConvertToTable(_ context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	now := time.Now()
	return tables.Convert(object, tableOptions, tableColumns, func(obj runtime.Object) (metav1.TableRow, error) {
		r, ok := obj.(*batch.TrainingJobRecord)
		if !ok {
			return metav1.TableRow{}, fmt.Errorf("cannot render %T as a training job record", obj)
		}
		return metav1.TableRow{Cells: cells(r, now)}, nil
	})
}

func cells(r *batch.TrainingJobRecord, now time.Time) []interface{} {
	phase := string(r.Phase)
	if phase == "" {
		phase = "<none>"
	}
	step := "<none>"
	if n := len(r.Progress); n > 0 && r.Progress[n-1].Step != nil {
		step = fmt.Sprint(*r.Progress[n-1].Step)
	}
	leftOut := "<none>"
	if len(r.LeftOut) > 0 {
		leftOut = fmt.Sprint(r.LeftOut)
	}
	return []interface{}{
		r.Name, r.JobName, r.JobKind, phase, ran(r), tables.Age(r.DeletionTime, now),
		r.JobCreationTime.UTC().Format(time.RFC3339), step, leftOut,
	}
}

// ran is how long the job ran, from the record's outline of its status.
func ran(r *batch.TrainingJobRecord) string {
	if r.StartTime == nil {
		return "<none>"
	}
	end := r.DeletionTime.Time
	if r.CompletionTime != nil {
		end = r.CompletionTime.Time
	}
	return tables.Age(*r.StartTime, end)
}
