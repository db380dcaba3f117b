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

func writeTable(w io.Writer, o options, floor, ours *result) {
	fmt.Fprintf(w, "One workload of %d pods at a time on the same stack (kwok nodes); status writes counted until %s after the last pod\n\n",
		o.pods, o.settle)
	ratio := ours.allPods.Seconds() / floor.allPods.Seconds()
	t := &benchkit.Table{Header: []string{"", floor.title, ours.title}}
	verdict := "NOT met"
	if ratio <= floorTarget {
		verdict = "met"
	}
	t.Add("every pod exists (s)", fmt.Sprintf("%.2f", floor.allPods.Seconds()),
		fmt.Sprintf("%.2f (%.2f× the floor; target ≤ %.1f×: %s)", ours.allPods.Seconds(), ratio, floorTarget, verdict))
	t.Add("CPU of the controller making the pods (s)", fmt.Sprintf("%.2f (all of %s)", floor.controllerCPU, floor.controller),
		fmt.Sprintf("%.2f", ours.controllerCPU))
	t.Add("status writes", fmt.Sprintf("%.0f", floor.statusWrites), fmt.Sprintf("%.0f", ours.statusWrites))
	t.Add("largest status, JSON (KiB)", fmt.Sprintf("%.1f", float64(floor.statusBytes)/1024), fmt.Sprintf("%.1f", float64(ours.statusBytes)/1024))
	t.Add("its whole object, JSON (KiB)", fmt.Sprintf("%.1f", float64(floor.objectBytes)/1024), fmt.Sprintf("%.1f", float64(ours.objectBytes)/1024))
	_ = t.Write(w)
}
