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
	"sort"
	"strings"
	"time"

	"tensorstack.dev/training/test/bench/internal/benchkit"
)

// report prints one column per replica count; each figure is the median
// over the rounds, and the counts of who served what are summed.
func report(w io.Writer, o options, results []*roundResult) {
	byCount := map[int][]*roundResult{}
	for _, r := range results {
		byCount[r.replicas] = append(byCount[r.replicas], r)
	}
	one, two := byCount[1], byCount[2]
	fmt.Fprintf(w, "\n## One training-apiserver against two (%d rounds, medians; %d jobs each way per round, concurrency %d)\n\n",
		o.rounds, o.jobs, o.concurrency)
	t := benchkit.Table{Header: []string{"", "1 replica", "2 replicas", "2 / 1"}}
	num := func(label, format string, f func(*roundResult) float64) {
		a, b := median(one, f), median(two, f)
		t.Add(label, fmt.Sprintf(format, a), fmt.Sprintf(format, b), benchkit.Ratio(b, a))
	}
	perSecond := func(c func(*roundResult) creates) func(*roundResult) float64 {
		return func(r *roundResult) float64 { return float64(o.jobs) / c(r).wall.Seconds() }
	}
	latency := func(c func(*roundResult) creates, p float64) func(*roundResult) float64 {
		return func(r *roundResult) float64 { return ms(benchkit.Percentile(c(r).lat, p)) }
	}
	cpu := func(c func(*roundResult) creates, machine bool) func(*roundResult) float64 {
		return func(r *roundResult) float64 {
			s := c(r).serverCPU
			if machine {
				s = c(r).machineCPU
			}
			return s * 1000 / float64(o.jobs)
		}
	}
	direct := func(r *roundResult) creates { return r.direct }
	aggregated := func(r *roundResult) creates { return r.aggregated }

	num("direct: creates/s (request i to replica i mod n)", "%.0f", perSecond(direct))
	num("direct: create p50 (ms)", "%.2f", latency(direct, 50))
	num("direct: create p99 (ms)", "%.2f", latency(direct, 99))
	num("direct: replicas' and etcd's CPU per create (ms)", "%.2f", cpu(direct, false))
	num("direct: whole machine's CPU per create (ms)", "%.2f", cpu(direct, true))
	num("through kube-apiserver: creates/s", "%.0f", perSecond(aggregated))
	num("through kube-apiserver: create p50 (ms)", "%.2f", latency(aggregated, 50))
	num("through kube-apiserver: create p99 (ms)", "%.2f", latency(aggregated, 99))
	num("through kube-apiserver: replicas', etcd's and kube-apiserver's CPU per create (ms)", "%.2f", cpu(aggregated, false))
	t.Add("through kube-apiserver: creates each replica served (all rounds)", split(one, servedAggregated), split(two, servedAggregated), "")
	t.Add("through kube-apiserver: connections each replica got (all rounds)", split(one, connections), split(two, connections), "")
	num("page of 500 jobs: p50 (ms)", "%.1f", func(r *roundResult) float64 { return ms(benchkit.Percentile(r.pages, 50)) })
	num("page of 500 jobs: p99 (ms)", "%.1f", func(r *roundResult) float64 { return ms(benchkit.Percentile(r.pages, 99)) })
	num("pages/s (4 readers, pages to the replicas in turn)", "%.1f", func(r *roundResult) float64 { return float64(len(r.pages)) / r.pagesWall.Seconds() })
	num("watch on the last replica: create to event p50 (ms)", "%.2f", func(r *roundResult) float64 { return ms(benchkit.Percentile(r.watchLag, 50)) })
	num("watch on the last replica: create to event p99 (ms)", "%.2f", func(r *roundResult) float64 { return ms(benchkit.Percentile(r.watchLag, 99)) })
	t.Add("RSS of each replica (MiB)", rssList(one), rssList(two), "")
	num("RSS of all replicas (MiB)", "%.1f", func(r *roundResult) float64 {
		var sum int64
		for _, b := range r.rss {
			sum += b
		}
		return float64(sum) / (1 << 20)
	})
	t.Add("second replica: start to ready (s)", "", fmt.Sprintf("%.2f", median(two, func(r *roundResult) float64 { return r.secondReady.Seconds() })), "")
	_ = t.Write(w)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(rs []*roundResult, f func(*roundResult) float64) float64 {
	if len(rs) == 0 {
		return -1
	}
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	sort.Float64s(v)
	return v[(len(v)-1)/2]
}

func servedAggregated(r *roundResult) []float64 { return r.servedAggregated }

func connections(r *roundResult) []float64 {
	out := make([]float64, len(r.connections))
	for i, c := range r.connections {
		out[i] = float64(c)
	}
	return out
}

// split sums per-replica counts over the rounds: "3000 / 0".
func split(rs []*roundResult, f func(*roundResult) []float64) string {
	var sums []float64
	for _, r := range rs {
		for i, v := range f(r) {
			if i >= len(sums) {
				sums = append(sums, 0)
			}
			sums[i] += v
		}
	}
	parts := make([]string, len(sums))
	for i, s := range sums {
		parts[i] = fmt.Sprintf("%.0f", s)
	}
	return strings.Join(parts, " / ")
}

// rssList is each replica's median RSS over the rounds.
func rssList(rs []*roundResult) string {
	if len(rs) == 0 {
		return ""
	}
	parts := make([]string, len(rs[0].rss))
	for i := range parts {
		parts[i] = fmt.Sprintf("%.1f", median(rs, func(r *roundResult) float64 { return float64(r.rss[i]) / (1 << 20) }))
	}
	return strings.Join(parts, " / ")
}
