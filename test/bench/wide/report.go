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
	"slices"

	"tensorstack.dev/training/test/bench/internal/benchkit"
)

// floorTarget is the target: every pod of the job within this many
// times the ReplicaSet's time.
const floorTarget = 1.2

// column is one workload's runs.
type column struct {
	workload, title, controller string
	runs                        []*result
}

// columns groups the results by workload, in the order they first ran.
func columns(results []*result) []*column {
	var cols []*column
	byWorkload := map[string]*column{}
	for _, r := range results {
		c := byWorkload[r.Workload]
		if c == nil {
			c = &column{workload: r.Workload, title: r.Title, controller: r.Controller}
			byWorkload[r.Workload] = c
			cols = append(cols, c)
		}
		c.runs = append(c.runs, r)
	}
	return cols
}

// median is the median of f over the column's runs.
func (c *column) median(f func(*result) float64) float64 {
	v := make([]float64, len(c.runs))
	for i, r := range c.runs {
		v[i] = f(r)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// spread prints the median of f with its lowest and highest run.
func (c *column) spread(format string, f func(*result) float64) string {
	lo, hi := f(c.runs[0]), f(c.runs[0])
	for _, r := range c.runs {
		lo, hi = min(lo, f(r)), max(hi, f(r))
	}
	m := fmt.Sprintf(format, c.median(f))
	if len(c.runs) == 1 {
		return m
	}
	return fmt.Sprintf("%s ("+format+"–"+format+")", m, lo, hi)
}

func allPods(r *result) float64       { return r.AllPods.Seconds() }
func controllerCPU(r *result) float64 { return r.ControllerCPU }
func statusWrites(r *result) float64  { return r.StatusWrites }
func statusKiB(r *result) float64     { return float64(r.StatusBytes) / 1024 }
func objectKiB(r *result) float64     { return float64(r.ObjectBytes) / 1024 }

// writeTable prints one column per workload, each figure the median of its
// runs with their range; the floor must have run first.
func writeTable(w io.Writer, results []*result) error {
	cols := columns(results)
	if len(cols) < 2 || cols[0].workload != workloadFloor {
		return fmt.Errorf("want the floor's results first and a job's after them, got %d workloads", len(cols))
	}
	floor := cols[0]
	fmt.Fprintf(w, "One workload of %d pods at a time on the same stack (kwok nodes), %d rounds each: the median (lowest–highest); "+
		"status writes counted until %s after the last pod\n\n", floor.runs[0].Pods, len(floor.runs), floor.runs[0].Settle)
	t := &benchkit.Table{Header: []string{""}}
	for _, c := range cols {
		t.Header = append(t.Header, c.title)
	}
	row := func(name string, cell func(c *column) string) {
		cells := []string{name}
		for _, c := range cols {
			cells = append(cells, cell(c))
		}
		t.Add(cells...)
	}
	floorPods := floor.median(allPods)
	row("every pod exists (s)", func(c *column) string {
		s := c.spread("%.2f", allPods)
		if c == floor {
			return s
		}
		ratio := c.median(allPods) / floorPods
		if c.workload != workloadOurs {
			return fmt.Sprintf("%s; %.2f× the floor", s, ratio)
		}
		verdict := "NOT met"
		if ratio <= floorTarget {
			verdict = "met"
		}
		return fmt.Sprintf("%s; %.2f× the floor (target ≤ %.1f×: %s)", s, ratio, floorTarget, verdict)
	})
	row("CPU of the controller making the pods (s)", func(c *column) string {
		if c == floor {
			return c.spread("%.2f", controllerCPU) + " (all of " + c.controller + ")"
		}
		return c.spread("%.2f", controllerCPU)
	})
	row("status writes", func(c *column) string { return c.spread("%.0f", statusWrites) })
	row("largest status, JSON (KiB)", func(c *column) string { return c.spread("%.1f", statusKiB) })
	row("its whole object, JSON (KiB)", func(c *column) string { return c.spread("%.1f", objectKiB) })
	return t.Write(w)
}
