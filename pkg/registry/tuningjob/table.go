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

package tuningjob

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
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the search."},
	{Name: "State", Type: "string", Description: "Pending, Running, Suspended, Succeeded or Failed."},
	{Name: "Best", Type: "string", Description: "The best objective value so far."},
	{Name: "Trials", Type: "string", Description: "Trials made, of maxTrials."},
	{Name: "Running", Type: "integer", Description: "Trials running or queued."},
	{Name: "Paused", Type: "integer", Description: "Trials paused at a rung, which may be promoted."},
	{Name: "Succeeded", Type: "integer", Description: "Trials that ran to their end."},
	{Name: "Failed", Type: "integer", Description: "Trials that failed."},
	{Name: "Age", Type: "string", Description: "Time since the search was created."},
	{Name: "Objective", Type: "string", Priority: 1, Description: "The metric and which way is better."},
	{Name: "Algorithm", Type: "string", Priority: 1, Description: "How parameter values are chosen, and the early stopping."},
	{Name: "Best-Trial", Type: "string", Priority: 1, Description: "The trial with the best value."},
}

// tableConvertor renders searches as kubectl table rows.
type tableConvertor struct{}

func (tableConvertor) ConvertToTable(_ context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return tables.Convert(object, tableOptions, tableColumns, func(obj runtime.Object) (metav1.TableRow, error) {
		job, ok := obj.(*batch.TuningJob)
		if !ok {
			return metav1.TableRow{}, fmt.Errorf("cannot render %T as a search", obj)
		}
		return metav1.TableRow{Cells: cells(job)}, nil
	})
}

func cells(job *batch.TuningJob) []interface{} {
	s, spec := &job.Status, &job.Spec
	best := s.BestValue
	if best == "" {
		best = "<none>"
	}
	algorithm := string(spec.Algorithm.Name)
	if es := spec.EarlyStopping; es != nil && es.ASHA != nil {
		algorithm += "+asha"
	} else if es != nil && es.MedianStop != nil {
		algorithm += "+medianStop"
	}
	bestTrial := s.BestTrial
	if bestTrial == "" {
		bestTrial = "<none>"
	}
	return []interface{}{
		job.Name, batch.TuningState(s), best, fmt.Sprintf("%d/%d", len(s.Trials), spec.MaxTrials),
		int64(s.Counts.Running + s.Counts.Pending), int64(s.Counts.Paused), int64(s.Counts.Succeeded), int64(s.Counts.Failed),
		tables.Age(job.CreationTimestamp, time.Now()),
		fmt.Sprintf("%s %s", spec.Objective.Direction, spec.Objective.Metric), algorithm, bestTrial,
	}
}
