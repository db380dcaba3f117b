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
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"

	"tensorstack.dev/training/test/bench/internal/benchkit"
)

func reportCommand(args []string) error {
	fs := flag.NewFlagSet("report", flag.ExitOnError)
	out := fs.String("out", "", "also write the table to this file")
	peerNote := fs.String("peer-note", "", "a line printed under the table when there is no peer column (why not)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return fmt.Errorf("usage: report OURS.json [PEER.json]")
	}
	var results []*Result
	for _, f := range fs.Args() {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		r := &Result{}
		if err := json.Unmarshal(data, r); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		results = append(results, r)
	}
	var b strings.Builder
	writeReport(&b, results, *peerNote)
	fmt.Print(b.String())
	if *out != "" {
		return os.WriteFile(*out, []byte(b.String()), 0o644)
	}
	return nil
}

func (r *Result) usage(name string) (benchkit.Usage, bool) {
	for _, u := range r.Usage {
		if u.Name == name {
			return u, true
		}
	}
	return benchkit.Usage{}, false
}

func (r *Result) perJob(v float64) float64 {
	if r.Jobs == 0 {
		return 0
	}
	return v / float64(r.Jobs)
}

// metric is one row of the report.
type metric struct {
	name string
	// value returns the number and its text; ok false means n/a.
	value func(r *Result) (float64, string, bool)
}

func secs(f func(r *Result) float64) func(r *Result) (float64, string, bool) {
	return func(r *Result) (float64, string, bool) { v := f(r); return v, fmt.Sprintf("%.1f", v), true }
}

func perJobMetric(f func(r *Result) float64) func(r *Result) (float64, string, bool) {
	return func(r *Result) (float64, string, bool) {
		v := r.perJob(f(r))
		return v, fmt.Sprintf("%.2f", v), true
	}
}

func cpuMetric(name string) func(r *Result) (float64, string, bool) {
	return func(r *Result) (float64, string, bool) {
		u, ok := r.usage(name)
		if !ok {
			return 0, "n/a", false
		}
		return u.CPUSeconds, fmt.Sprintf("%.1f", u.CPUSeconds), true
	}
}

func rssMetric(name string) func(r *Result) (float64, string, bool) {
	return func(r *Result) (float64, string, bool) {
		u, ok := r.usage(name)
		if !ok {
			return 0, "n/a", false
		}
		s := benchkit.MiB(u.PeakRSSBytes)
		if u.PeakSince != "run" {
			s += " (since start)"
		}
		return float64(u.PeakRSSBytes), s, true
	}
}

// reportMetrics are the rows of the report, in order.
func reportMetrics() []metric {
	return []metric{
		{"jobs created (s)", secs(func(r *Result) float64 { return r.CreateSeconds })},
		{"all pods exist (s)", func(r *Result) (float64, string, bool) {
			return r.PodsExistSeconds, fmt.Sprintf("%.1f (%d pods)", r.PodsExistSeconds, r.PodsSeen), true
		}},
		{"all pods started, Running (s)", func(r *Result) (float64, string, bool) {
			return r.PodsStartedSeconds, fmt.Sprintf("%.1f (%d pods)", r.PodsStartedSeconds, r.PodsStarted), true
		}},
		{jobsDoneRow, func(r *Result) (float64, string, bool) {
			s := fmt.Sprintf("%.1f (%d ok, %d failed)", r.JobsDoneSeconds, r.JobsSucceeded, r.JobsFailed)
			if r.TimedOut {
				s += " TIMED OUT"
			}
			return r.JobsDoneSeconds, s, true
		}},
		{"a job's pods started within, p50 / p99 / max (s)", percentilesMetric(func(r *Result) Percentiles { return r.StartSpread })},
		{"all pods ended (s)", secs(func(r *Result) float64 { return r.PodsEndedSeconds })},
		{"pod ran beyond its run (kwok's lag), p50 / p99 / max (s)", percentilesMetric(func(r *Result) Percentiles { return r.RunOverrun })},
		{"job's last pod exit (kwok's time) → seen ended, p50 / p99 / max (s)", percentilesMetric(func(r *Result) Percentiles { return r.ExitSeenLag })},
		{"job done after its last pod exit, p50 / p99 / max (s)", func(r *Result) (float64, string, bool) {
			return r.DoneLagP99Seconds, fmt.Sprintf("%.2f / %.2f / %.2f", r.DoneLagP50Seconds, r.DoneLagP99Seconds,
				r.DoneLagMaxSeconds), true
		}},
		{"controller CPU (s)", cpuMetric("controller")},
		{"controller peak RSS (MiB)", rssMetric("controller")},
		{"training-apiserver CPU (s)", cpuMetric("training-apiserver")},
		{"training-apiserver peak RSS (MiB)", rssMetric("training-apiserver")},
		{"kube-apiserver CPU (s)", cpuMetric("kube-apiserver")},
		{"kube-apiserver peak RSS (MiB)", rssMetric("kube-apiserver")},
		{"etcd CPU (s)", cpuMetric("etcd")},
		{"kube-scheduler CPU (s)", cpuMetric("kube-scheduler")},
		{"kube-controller-manager CPU (s)", cpuMetric("kube-controller-manager")},
		{"kwok CPU (s)", cpuMetric("kwok")},
		{cpuTotalRow, func(r *Result) (float64, string, bool) {
			total := r.cpuTotal()
			return total, fmt.Sprintf("%.1f", total), true
		}},
		{kubeWritesRow, perJobMetric(func(r *Result) float64 { return sumValues(r.KubeWrites) })},
		{"writes to training-apiserver per job", func(r *Result) (float64, string, bool) {
			if r.TrainingWrites == nil {
				return 0, "n/a", false
			}
			v := r.perJob(sumValues(r.TrainingWrites))
			return v, fmt.Sprintf("%.2f", v), true
		}},
		{"status writes per job", perJobMetric(func(r *Result) float64 { return r.StatusWrites })},
		{"status conflicts (409) per job", perJobMetric(func(r *Result) float64 { return r.StatusConflicts })},
		{"other writes to the job per job", perJobMetric(func(r *Result) float64 { return r.JobWrites })},
		{"pods created per job", perJobMetric(func(r *Result) float64 { return float64(r.PodsCreated) })},
		{"pods deleted per job (during the run)", perJobMetric(func(r *Result) float64 { return float64(r.PodsDeleted) })},
		{"services per job", perJobMetric(func(r *Result) float64 { return float64(r.Services) })},
		{"configmaps per job", perJobMetric(func(r *Result) float64 { return float64(r.ConfigMaps) })},
		{"events per job", perJobMetric(func(r *Result) float64 { return float64(r.Events) })},
	}
}

// The rows the goals are read from.
const (
	jobsDoneRow   = "all jobs done, Succeeded (s)"
	cpuTotalRow   = "CPU total of the above: every measured process (s)"
	kubeWritesRow = "writes to kube-apiserver per job (every client)"
)

func (r *Result) cpuTotal() float64 {
	var total float64
	for _, u := range r.Usage {
		total += u.CPUSeconds
	}
	return total
}

func sumValues(m map[string]float64) float64 {
	var total float64
	for _, v := range m {
		total += v
	}
	return total
}

func percentilesMetric(f func(r *Result) Percentiles) func(r *Result) (float64, string, bool) {
	return func(r *Result) (float64, string, bool) {
		p := f(r)
		return p.P99, fmt.Sprintf("%.2f / %.2f / %.2f", p.P50, p.P99, p.Max), true
	}
}

// writesTable is, per job, the writes each server counted by verb and
// resource: a column per result and, for two, their ratio.
func writesTable(results []*Result, server string, writes func(r *Result) map[string]float64) (benchkit.Table, bool) {
	t := benchkit.Table{Header: []string{server + " writes per job"}}
	keys := map[string]bool{}
	for _, r := range results {
		t.Header = append(t.Header, r.Title)
		for k := range writes(r) {
			keys[k] = true
		}
	}
	if len(keys) == 0 {
		return t, false
	}
	if len(results) == 2 {
		t.Header = append(t.Header, "ours / peer")
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		row := []string{k}
		var vals []float64
		for _, r := range results {
			v := r.perJob(writes(r)[k])
			vals = append(vals, v)
			row = append(row, fmt.Sprintf("%.2f", v))
		}
		if len(results) == 2 {
			row = append(row, benchkit.Ratio(vals[0], vals[1]))
		}
		t.Add(row...)
	}
	return t, true
}

// goal is one of issue 49's targets, ours against the peer.
type goal struct {
	what  string
	value func(r *Result) float64
	limit float64
}

var goals = []goal{
	{"every job done", func(r *Result) float64 { return r.JobsDoneSeconds }, 0.7},
	{"every measured process's CPU", (*Result).cpuTotal, 0.6},
	{"writes to kube-apiserver per job", func(r *Result) float64 { return r.perJob(sumValues(r.KubeWrites)) }, 1.0},
}

func writeGoals(w io.Writer, ours, peer *Result) {
	fmt.Fprintln(w, "Goals, ours / peer:")
	for _, g := range goals {
		o, p := g.value(ours), g.value(peer)
		verdict := "not met"
		if p > 0 && o/p <= g.limit {
			verdict = "met"
		}
		fmt.Fprintf(w, "- %s: %s (goal ≤ %.2f×): %s\n", g.what, benchkit.Ratio(o, p), g.limit, verdict)
	}
}

// metricTable is the report's table: a column per result and, for two, their
// ratio.
func metricTable(results []*Result) benchkit.Table {
	t := benchkit.Table{Header: []string{"metric"}}
	for _, r := range results {
		t.Header = append(t.Header, r.Title)
	}
	if len(results) == 2 {
		t.Header = append(t.Header, "ours / peer")
	}
	for _, m := range reportMetrics() {
		row := []string{m.name}
		var vals []float64
		var oks []bool
		for _, r := range results {
			v, s, ok := m.value(r)
			row = append(row, s)
			vals, oks = append(vals, v), append(oks, ok)
		}
		if len(results) == 2 {
			if oks[0] && oks[1] {
				row = append(row, benchkit.Ratio(vals[0], vals[1]))
			} else {
				row = append(row, "n/a")
			}
		}
		t.Add(row...)
	}
	return t
}

func writeReport(w io.Writer, results []*Result, peerNote string) {
	first := results[0]
	fmt.Fprintf(w, "\n## bench-controller: %d jobs × %d pods (chief 1 + ps 1 + worker 3), pods exit 0 after %s\n\n",
		first.Jobs, first.PodsPerJob, first.RunFor)
	fmt.Fprintf(w, "Jobs created at concurrency %d; times are seconds from the first create. Machine: %d CPUs.\n",
		first.Concurrency, runtime.NumCPU())
	for _, r := range results {
		fmt.Fprintf(w, "- %s: %s\n", r.Title, orNone(r.ControllerFlags))
	}
	fmt.Fprintln(w)

	t := metricTable(results)
	_ = t.Write(w)
	fmt.Fprintln(w)
	for _, r := range results {
		fmt.Fprintf(w, "Machine CPU busy (all CPUs, the benchmark's own client included), %s: %s until all pods existed, "+
			"%s until all jobs were done.\n", r.Title, percentOrNA(r.MachineBusyToPodsExist), percentOrNA(r.MachineBusyToJobsDone))
	}
	for _, r := range results {
		fmt.Fprintf(w, "Events per job by component, %s: %s.\n", r.Title, eventsByComponent(r))
		fmt.Fprintf(w, "Writes counted from %s (apiserver_request_total).\n", r.MetricsSource)
	}
	for _, server := range []struct {
		name   string
		writes func(r *Result) map[string]float64
	}{
		{"kube-apiserver", func(r *Result) map[string]float64 { return r.KubeWrites }},
		{"training-apiserver", func(r *Result) map[string]float64 { return r.TrainingWrites }},
	} {
		if t, ok := writesTable(results, server.name, server.writes); ok {
			fmt.Fprintln(w)
			_ = t.Write(w)
		}
	}
	for _, r := range results {
		if len(r.ControllerCounters) > 0 {
			fmt.Fprintf(w, "\nThe controller's own counters per job, %s: %s.\n", r.Title, perJobCounters(r))
		}
	}
	fmt.Fprintln(w)
	if len(results) == 2 {
		fmt.Fprintln(w, "Ratios are ours / peer: below 1 means ours took less time, CPU, memory or requests.")
		writeGoals(w, results[0], results[1])
	} else if peerNote != "" {
		fmt.Fprintln(w, peerNote)
	}
}

func eventsByComponent(r *Result) string {
	var names []string
	for n := range r.EventsByComponent {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %.2f", n, r.perJob(float64(r.EventsByComponent[n]))))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func perJobCounters(r *Result) string {
	names := make([]string, 0, len(r.ControllerCounters))
	for n := range r.ControllerCounters {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %.2f", n, r.perJob(r.ControllerCounters[n])))
	}
	return strings.Join(parts, ", ")
}

func percentOrNA(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.0f %%", *v)
}

func orNone(s string) string {
	if s == "" {
		return "(shipped defaults)"
	}
	return s
}
