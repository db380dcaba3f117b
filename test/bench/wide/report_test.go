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
	"strings"
	"testing"
	"time"
)

func TestTableShowsMediansPerWorkload(t *testing.T) {
	run := func(workload string, seconds float64) *result {
		return &result{Workload: workload, Title: workload + "-title", Pods: 10, AllPods: time.Duration(seconds * float64(time.Second))}
	}
	results := []*result{
		run(workloadIndexedJob, 4), run(workloadPyTorch, 5),
		run(workloadIndexedJob, 2), run(workloadPyTorch, 9),
		run(workloadIndexedJob, 3), run(workloadPyTorch, 3.3),
	}
	cols := columns(results)
	if len(cols) != 2 || cols[0].workload != workloadIndexedJob || len(cols[1].runs) != 3 {
		t.Fatalf("columns = %+v, want the floor's three runs then ours", cols)
	}
	if got := cols[1].median(allPods); got != 5 {
		t.Errorf("median of ours = %v, want 5", got)
	}
	if got := (&column{runs: []*result{run("x", 1), run("x", 4)}}).median(allPods); got != 2.5 {
		t.Errorf("median of two runs = %v, want 2.5", got)
	}
	var sb strings.Builder
	if err := writeTable(&sb, results); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"3.00 (2.00–4.00)", "5.00 (3.30–9.00)", "1.67× (target ≤ 1.1×: NOT met)"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, sb.String())
		}
	}
	if err := writeTable(&sb, results[1:2]); err == nil {
		t.Error("a table without the floor's results was written")
	}
}
