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

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

func TestTableShowsThePodMakersCPU(t *testing.T) {
	results := []*result{
		{Workload: workloadIndexedJob, Title: "floor", Controller: "kube-controller-manager", Pods: 10, AllPods: 2 * time.Second, ControllerCPU: 3},
		{Workload: workloadJobSet, Title: "jobset", Controller: "jobset", PodMaker: "kube-controller-manager", Pods: 10,
			AllPods: 3 * time.Second, ControllerCPU: 0.25, PodMakerCPU: 3.5},
	}
	var sb strings.Builder
	if err := writeTable(&sb, results); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"0.25; kube-controller-manager, which makes the pods: 3.50", "| 1.50× "} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, sb.String())
		}
	}
	if strings.Contains(sb.String(), "target") {
		t.Errorf("a peer was held to our target:\n%s", sb.String())
	}
}

func TestJobSetHasALeaderAndIndexedWorkers(t *testing.T) {
	js, err := jobSet("wide", 1000)
	if err != nil {
		t.Fatal(err)
	}
	jobs, _, _ := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
	if len(jobs) != 2 {
		t.Fatalf("replicatedJobs = %v, want leader and worker", jobs)
	}
	for i, want := range []int64{1, 999} {
		job := jobs[i].(map[string]interface{})
		for _, field := range []string{"completions", "parallelism"} {
			if got, _, _ := unstructured.NestedInt64(job, "template", "spec", field); got != want {
				t.Errorf("%s %s = %d, want %d", job["name"], field, got, want)
			}
		}
		if got, _, _ := unstructured.NestedString(job, "template", "spec", "template", "spec", "restartPolicy"); got != "Never" {
			t.Errorf("%s restartPolicy = %q, want Never", job["name"], got)
		}
	}
	if !peer(workloadJobSet) || !peer(workloadPeer) || peer(workloadPyTorch) {
		t.Error("peer() does not tell the peers from ours")
	}
}
