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

// floorTarget is the target: every pod of a job of ours within
// this many times the Indexed Job's time.
const floorTarget = 1.1

// ours says whether a workload is a job of one of our kinds.
func ours(workload string) bool {
	switch workload {
	case workloadPyTorch, workloadTensorFlow, workloadXGBoost, workloadGeneric, workloadMPI:
		return true
	}
	return false
}

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
func podMakerCPU(r *result) float64   { return r.PodMakerCPU }
func statusWrites(r *result) float64  { return r.StatusWrites }
func statusKiB(r *result) float64     { return float64(r.StatusBytes) / 1024 }
func podsMB(r *result) float64        { return float64(r.PodBytes) / 1e6 }
func largestPodKiB(r *result) float64 { return float64(r.LargestPodBytes) / 1024 }
func configMapKiB(r *result) float64  { return float64(r.ConfigMapBytes) / 1024 }

// writeTable prints one row per workload, each figure the median of its
// runs with their range; the floor (the Indexed Job, or a ReplicaSet) must
// have run first.
func writeTable(w io.Writer, results []*result) error {
	cols := columns(results)
	if len(cols) < 2 || (cols[0].workload != workloadIndexedJob && cols[0].workload != workloadReplicaSet) {
		return fmt.Errorf("want the floor's results first and a job's after them, got %d workloads", len(cols))
	}
	floor := cols[0]
	fmt.Fprintf(w, "One workload of %d pods at a time on the same stack (kwok nodes), %d rounds each: the median (lowest–highest); "+
		"status writes counted until %s after the last pod; what the pods and the controller's ConfigMaps take in etcd, "+
		"encoded as stored (protobuf)\n\n", floor.runs[0].Pods, len(floor.runs), floor.runs[0].Settle)
	t := &benchkit.Table{Header: []string{"workload", "every pod exists (s)", "against " + floor.title,
		"CPU of the controller making the pods (s)", "status writes", "largest status, JSON (KiB)",
		"pods in etcd (MB)", "largest pod (KiB)", "ConfigMaps (KiB)"}}
	floorPods := floor.median(allPods)
	for _, c := range cols {
		ratio := "the floor"
		if c != floor {
			r := c.median(allPods) / floorPods
			ratio = fmt.Sprintf("%.2f×", r)
			if ours(c.workload) && floor.workload == workloadIndexedJob {
				verdict := "NOT met"
				if r <= floorTarget {
					verdict = "met"
				}
				ratio += fmt.Sprintf(" (target ≤ %.1f×: %s)", floorTarget, verdict)
			}
		}
		cpu := c.spread("%.2f", controllerCPU)
		if c.controller == "kube-controller-manager" {
			cpu += " (all of it)"
		}
		if maker := c.runs[0].PodMaker; maker != "" {
			cpu += fmt.Sprintf("; %s, which makes the pods: %s", maker, c.spread("%.2f", podMakerCPU))
		}
		t.Add(c.title, c.spread("%.2f", allPods), ratio, cpu, c.spread("%.0f", statusWrites), c.spread("%.1f", statusKiB),
			c.spread("%.1f", podsMB), c.spread("%.1f", largestPodKiB), c.spread("%.1f", configMapKiB))
	}
	return t.Write(w)
}
