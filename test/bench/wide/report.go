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

package main

import (
	"fmt"
	"io"

	"tensorstack.dev/training/test/bench/internal/benchkit"
)

// floorTarget is the target: every pod of the job within this many
// times the ReplicaSet's time.
const floorTarget = 1.2

// writeTable prints one column per result; the first must be the floor.
func writeTable(w io.Writer, results []*result) error {
	if len(results) < 2 || results[0].Workload != workloadFloor {
		return fmt.Errorf("want the floor's result first and at least one job's after it, got %d results", len(results))
	}
	floor := results[0]
	fmt.Fprintf(w, "One workload of %d pods at a time on the same stack (kwok nodes); status writes counted until %s after the last pod\n\n",
		floor.Pods, floor.Settle)
	t := &benchkit.Table{Header: []string{""}}
	for _, r := range results {
		t.Header = append(t.Header, r.Title)
	}
	row := func(name string, cell func(r *result) string) {
		cells := []string{name}
		for _, r := range results {
			cells = append(cells, cell(r))
		}
		t.Add(cells...)
	}
	row("every pod exists (s)", func(r *result) string {
		if r == floor {
			return fmt.Sprintf("%.2f", r.AllPods.Seconds())
		}
		ratio := r.AllPods.Seconds() / floor.AllPods.Seconds()
		if r.Workload != workloadOurs {
			return fmt.Sprintf("%.2f (%.2f× the floor)", r.AllPods.Seconds(), ratio)
		}
		verdict := "NOT met"
		if ratio <= floorTarget {
			verdict = "met"
		}
		return fmt.Sprintf("%.2f (%.2f× the floor; target ≤ %.1f×: %s)", r.AllPods.Seconds(), ratio, floorTarget, verdict)
	})
	row("CPU of the controller making the pods (s)", func(r *result) string {
		if r == floor {
			return fmt.Sprintf("%.2f (all of %s)", r.ControllerCPU, r.Controller)
		}
		return fmt.Sprintf("%.2f", r.ControllerCPU)
	})
	row("status writes", func(r *result) string { return fmt.Sprintf("%.0f", r.StatusWrites) })
	row("largest status, JSON (KiB)", func(r *result) string { return fmt.Sprintf("%.1f", float64(r.StatusBytes)/1024) })
	row("its whole object, JSON (KiB)", func(r *result) string { return fmt.Sprintf("%.1f", float64(r.ObjectBytes)/1024) })
	return t.Write(w)
}
