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
	"maps"
	"strings"
	"testing"
	"time"

	"tensorstack.dev/training/test/bench/internal/benchkit"
)

func TestWritesByResource(t *testing.T) {
	before, err := benchkit.ParseMetrics([]byte(`
apiserver_request_total{code="201",dry_run="",resource="pods",subresource="",verb="POST"} 10
apiserver_request_total{code="200",dry_run="",resource="pods",subresource="status",verb="PATCH"} 4
apiserver_request_total{code="200",dry_run="",resource="pods",subresource="",verb="LIST"} 7
`))
	if err != nil {
		t.Fatal(err)
	}
	after, err := benchkit.ParseMetrics([]byte(`
apiserver_request_total{code="201",dry_run="",resource="pods",subresource="",verb="POST"} 25
apiserver_request_total{code="409",dry_run="",resource="pods",subresource="status",verb="PATCH"} 1
apiserver_request_total{code="200",dry_run="",resource="pods",subresource="status",verb="PATCH"} 9
apiserver_request_total{code="200",dry_run="All",resource="pods",subresource="",verb="POST"} 3
apiserver_request_total{code="200",dry_run="",resource="pods",subresource="",verb="LIST"} 70
apiserver_request_total{code="200",dry_run="",resource="events",subresource="",verb="POST"} 2
`))
	if err != nil {
		t.Fatal(err)
	}
	got := writesByResource(before, after)
	want := map[string]float64{"post pods": 15, "patch pods/status": 6, "post events": 2}
	if !maps.Equal(got, want) {
		t.Errorf("writesByResource = %v, want %v (reads and dry runs left out, 409s counted)", got, want)
	}
}

func TestGoalVerdicts(t *testing.T) {
	ours := &Result{Jobs: 10, JobsDoneSeconds: 70, KubeWrites: map[string]float64{"post pods": 50, "patch pods": 20},
		Usage: []benchkit.Usage{{Name: "controller", CPUSeconds: 61}}}
	peer := &Result{Jobs: 10, JobsDoneSeconds: 100, KubeWrites: map[string]float64{"post pods": 50, "post services": 50},
		Usage: []benchkit.Usage{{Name: "controller", CPUSeconds: 100}}}
	var b strings.Builder
	writeGoals(&b, ours, peer)
	for _, line := range []string{
		"every job done: 0.70× (goal ≤ 0.70×): met",
		"every measured process's CPU: 0.61× (goal ≤ 0.60×): not met",
		"writes to kube-apiserver per job: 0.70× (goal ≤ 1.00×): met",
	} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("goals do not say %q:\n%s", line, b.String())
		}
	}
}

func TestPercentiles(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Second)
	}
	got := percentiles(ds)
	if got != (Percentiles{P50: 51, P99: 100, Max: 100}) {
		t.Errorf("percentiles = %+v", got)
	}
	if got := percentiles(nil); got != (Percentiles{}) {
		t.Errorf("percentiles(nil) = %+v, want zeros", got)
	}
}
