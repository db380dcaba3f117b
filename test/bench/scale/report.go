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
	"time"

	"tensorstack.dev/training/test/bench/internal/benchkit"
)

// Targets of the issue that the tables hold the figures against.
const (
	apiserverRSSTarget  = 1 << 30
	pageP99Target       = 50 * time.Millisecond
	controllerRSSTarget = 1.5
)

func writeTables(w io.Writer, o options, fill *fillResult, s *storageResult, crdFill *fillResult, crd *storageResult, c *controllerResult) {
	writeStorageTable(w, o, fill, s, crdFill, crd)
	if c != nil {
		fmt.Fprintln(w)
		writeControllerTable(w, o, fill, c)
	}
}

// writeStorageTable prints ours and, when measured, the CRD's next to it.
func writeStorageTable(w io.Writer, o options, fill *fillResult, s *storageResult, crdFill *fillResult, crd *storageResult) {
	fmt.Fprintf(w, "%d jobs stored (chief 1, ps 1, worker 3 each), %d finished, %d not; 32 writes at a time; the training-apiserver's etcd %s",
		fill.jobs, fill.finished, o.running, o.etcd)
	header := []string{"", "training-apiserver (protobuf)"}
	if crd != nil {
		fmt.Fprint(w, "; the same as Kubeflow TFJobs in kube-apiserver (JSON, its one encoding for custom resources), our servers stopped meanwhile")
		header = append(header, "kube-apiserver, Kubeflow's TFJob CRD (JSON)")
	}
	fmt.Fprint(w, "\n\n")
	t := &benchkit.Table{Header: append(header, "target (ours)")}
	row := func(name string, cell func(f *fillResult, s *storageResult) string, target string) {
		cells := []string{name, cell(fill, s)}
		if crd != nil {
			cells = append(cells, cell(crdFill, crd))
		}
		t.Add(append(cells, target)...)
	}
	row("stored in", func(f *fillResult, _ *storageResult) string {
		return fmt.Sprintf("%s creates (%.0f/s), %s status writes (%.0f/s)",
			f.creates.Round(time.Second), float64(f.jobs)/f.creates.Seconds(),
			f.statuses.Round(time.Second), float64(f.finished)/f.statuses.Seconds())
	}, "")
	row("RSS before the jobs (MiB)", func(_ *fillResult, s *storageResult) string { return benchkit.MiB(s.rssEmpty) }, "")
	row("RSS with the jobs (MiB), anonymous", func(_ *fillResult, s *storageResult) string {
		return benchkit.MiB(s.rss) + ", " + benchkit.MiB(s.anon)
	}, "≤ "+benchkit.MiB(apiserverRSSTarget)+verdict(s.rss <= apiserverRSSTarget))
	row("RSS after a restart (MiB)", func(_ *fillResult, s *storageResult) string { return benchkit.MiB(s.rssRestart) }, "")
	etcd := "etcd database (MiB)"
	if o.etcd == "external" {
		etcd = "etcd database, external, kube-apiserver's objects too (MiB)"
	}
	if crd != nil {
		etcd += "; the CRD's: the stack's etcd, with kube-apiserver's objects"
	}
	row(etcd, func(_ *fillResult, s *storageResult) string { return benchkit.MiB(s.etcdBytes) }, "")
	p99 := benchkit.Percentile(s.pages, 99)
	row(fmt.Sprintf("LIST page of %d, p50 / p99 (ms, %d pages)", o.pageSize, len(s.pages)), func(_ *fillResult, s *storageResult) string {
		return benchkit.Ms(benchkit.Median(s.pages)) + " / " + benchkit.Ms(benchkit.Percentile(s.pages, 99))
	}, "p99 ≤ "+benchkit.Ms(pageP99Target)+verdict(p99 <= pageP99Target))
	row("full LIST (ms)", func(_ *fillResult, s *storageResult) string {
		return fmt.Sprintf("%s (%d items)", benchkit.Ms(s.fullList), s.fullItems)
	}, "")
	row("new watch to its initial events (ms)", func(_ *fillResult, s *storageResult) string {
		return fmt.Sprintf("%s (%d events)", benchkit.Ms(s.watchInit), s.watchEvents)
	}, "")
	row("restart to ready (s)", func(_ *fillResult, s *storageResult) string { return fmt.Sprintf("%.1f", s.restart.Seconds()) }, "")
	_ = t.Write(w)
}

func writeControllerTable(w io.Writer, o options, fill *fillResult, c *controllerResult) {
	ratio := float64(c.historyRSS) / float64(c.noHistoryRSS)
	t := &benchkit.Table{Header: []string{"training-controller-manager", "value", "target"}}
	t.Add("RSS with no jobs (MiB)", benchkit.MiB(c.emptyRSS), "")
	t.Add(fmt.Sprintf("RSS with the %d jobs, after it made the pods (MiB)", fill.jobs), benchkit.MiB(c.rss), "")
	t.Add(fmt.Sprintf("RSS restarted on the %d running jobs and their pods, with the %d finished (MiB)", o.running, fill.finished),
		fmt.Sprintf("%s (%.2f×)", benchkit.MiB(c.historyRSS), ratio),
		fmt.Sprintf("≤ %.1f× without%s", controllerRSSTarget, verdict(ratio <= controllerRSSTarget)))
	t.Add(fmt.Sprintf("RSS restarted on the same, the %d finished deleted (MiB)", c.deleted), benchkit.MiB(c.noHistoryRSS), "")
	t.Add("start to ready (s)", fmt.Sprintf("%.1f", c.start.Seconds()), "")
	t.Add("start to its first pod create (s)", fmt.Sprintf("%.1f", c.firstPod.Seconds()), "")
	t.Add(fmt.Sprintf("start to all %d pods of the running jobs (s)", c.pods), fmt.Sprintf("%.1f", c.allPods.Seconds()), "")
	t.Add(fmt.Sprintf("CPU while idle (cores, %s)", o.idle), fmt.Sprintf("%.3f", c.idleCores), "")
	_ = t.Write(w)
}

func verdict(met bool) string {
	if met {
		return " (met)"
	}
	return " (NOT met)"
}
