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

// Command api is the API benchmark of make bench-api (hack/bench-api.sh),
// run against the local control plane: the same jobs (chief 1, ps 1,
// worker 3; paused, so no pod is made) created, listed and deleted through
//
//   - Kubeflow's TFJob CustomResourceDefinition (training-operator v1.9.4),
//     served by kube-apiserver itself;
//   - our TensorFlowTrainingJob through kube-apiserver, which proxies it to
//     the training-apiserver (the aggregator);
//   - our TensorFlowTrainingJob straight from the training-apiserver's port.
//
// It prints a markdown table: creates/s at a fixed concurrency, create
// latency p50/p99, the time of a full LIST read raw and decoded by
// client-go, deletes/s, and ours/CRD ratios. See docs/benchmarks.md.
package main

import (
	"fmt"
	"io"
	"runtime"
	"time"

	"tensorstack.dev/training/test/bench/internal/benchkit"
)

// apiMetric is one row of the report.
type apiMetric struct {
	name  string
	value func(r *result, tg *target) (float64, string)
}

// ms is a duration in milliseconds; a duration not measured (not positive)
// is n/a, and its ratio too.
func ms(d time.Duration) (float64, string) {
	if d <= 0 {
		return -1, "n/a"
	}
	return float64(d), benchkit.Ms(d)
}

// listSize is the size of a LIST of jobs, per job and in all.
func listSize(bytes int64, jobs int) (float64, string) {
	if bytes <= 0 {
		return -1, "n/a"
	}
	return float64(bytes), fmt.Sprintf("%.0f B/job (%s MiB)", float64(bytes)/float64(jobs), benchkit.MiB(bytes))
}

// apiMetrics are the rows of the report, in order.
func apiMetrics(jobs int) []apiMetric {
	return []apiMetric{
		{"creates/s", func(r *result, _ *target) (float64, string) {
			v := perSecond(len(r.createLat), r.createWall)
			return v, fmt.Sprintf("%.0f", v)
		}},
		{"create p50 (ms)", func(r *result, _ *target) (float64, string) { return ms(benchkit.Percentile(r.createLat, 50)) }},
		{"create p99 (ms)", func(r *result, _ *target) (float64, string) { return ms(benchkit.Percentile(r.createLat, 99)) }},
		{"storing server's CPU per create (ms)", func(r *result, tg *target) (float64, string) {
			v := cpuPerCreate(r.createCPU, len(r.createLat))
			return v, fmt.Sprintf("%.2f (%s)", v, memoryServer(tg))
		}},
		{"whole machine's CPU per create (ms)", func(r *result, _ *target) (float64, string) {
			v := cpuPerCreate(r.machineCPU, len(r.createLat))
			return v, fmt.Sprintf("%.2f", v)
		}},
		{"LIST raw JSON (ms)", func(r *result, _ *target) (float64, string) { return ms(benchkit.Median(r.rawJSON)) }},
		{"LIST raw JSON size", func(r *result, _ *target) (float64, string) { return listSize(r.rawJSONBytes, jobs) }},
		{"LIST raw, protobuf asked (ms)", func(r *result, _ *target) (float64, string) {
			v, s := ms(benchkit.Median(r.rawProto))
			return v, s + " (" + shortType(r.rawProtoType) + ")"
		}},
		{"LIST raw, protobuf asked, size", func(r *result, _ *target) (float64, string) { return listSize(r.rawProtoBytes, jobs) }},
		{"LIST decoded by client-go (ms)", func(r *result, tg *target) (float64, string) {
			v, s := ms(benchkit.Median(r.list))
			return v, fmt.Sprintf("%s (%s, %s)", s, tg.listHow, shortType(r.listCT))
		}},
		{"LIST typed clientset, JSON (ms)", func(r *result, tg *target) (float64, string) {
			if tg.listJSON == nil {
				return -1, "n/a"
			}
			v, s := ms(benchkit.Median(r.listJSON))
			return v, s + " (" + shortType(r.jsonCT) + ")"
		}},
		{"LIST dynamic client, unstructured (ms)", func(r *result, _ *target) (float64, string) { return ms(benchkit.Median(r.dynamic)) }},
		{"deletes/s", func(r *result, _ *target) (float64, string) {
			v := perSecond(len(r.deleteLat), r.deleteWall)
			return v, fmt.Sprintf("%.0f", v)
		}},
		{"delete p50 (ms)", func(r *result, _ *target) (float64, string) { return ms(benchkit.Percentile(r.deleteLat, 50)) }},
	}
}

func report(w io.Writer, o options, targets []*target, results map[string]*result) {
	fmt.Fprintf(w, "\n## bench-api: %d jobs per target (chief 1 + ps 1 + worker 3, paused), concurrency %d\n\n", o.jobs, o.concurrency)
	fmt.Fprintf(w, "LIST times are the median of %d full LISTs of the namespace's %d jobs; machine: %d CPUs.\n\n", o.listRepeats, o.jobs, runtime.NumCPU())

	t := benchkit.Table{Header: []string{"metric"}}
	var crd *result
	var crdT *target
	var ours []*target
	for _, tg := range targets {
		t.Header = append(t.Header, tg.title)
		if tg.key == "crd" {
			crd, crdT = results[tg.key], tg
		} else {
			ours = append(ours, tg)
		}
	}
	if crd != nil {
		for _, tg := range ours {
			t.Header = append(t.Header, tg.key+" / CRD")
		}
	}
	for _, m := range apiMetrics(o.jobs) {
		row := []string{m.name}
		for _, tg := range targets {
			_, s := m.value(results[tg.key], tg)
			row = append(row, s)
		}
		if crd != nil {
			baseOf := m.value
			if m.name == "LIST typed clientset, JSON (ms)" {
				// The CRD has no typed client here: compare with its client-go LIST.
				baseOf = func(r *result, _ *target) (float64, string) { return ms(benchkit.Median(r.list)) }
			}
			base, _ := baseOf(crd, crdT)
			for _, tg := range ours {
				v, _ := m.value(results[tg.key], tg)
				row = append(row, benchkit.Ratio(v, base))
			}
		}
		t.Add(row...)
	}
	_ = t.Write(w)
	fmt.Fprintf(w, "\nRequest bodies of the creates: ")
	for i, tg := range targets {
		if i > 0 {
			fmt.Fprint(w, ", ")
		}
		fmt.Fprintf(w, "%s %s", tg.key, shortType(results[tg.key].createCT))
	}
	fmt.Fprintln(w, ".")
	fmt.Fprintln(w, "Ratios are ours / CRD: above 1 is better for rates (creates/s, deletes/s), below 1 is better for times and sizes.")
}
