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

func writeTables(w io.Writer, o options, fill *fillResult, s *storageResult, c *controllerResult) {
	writeStorageTable(w, o, fill, s)
	fmt.Fprintln(w)
	writeControllerTable(w, o, fill, c)
}

func writeStorageTable(w io.Writer, o options, fill *fillResult, s *storageResult) {
	fmt.Fprintf(w, "%d jobs stored (chief 1, ps 1, worker 3 each), %d finished, %d to run; straight to the training-apiserver in protobuf, 32 at a time; its etcd %s\n\n",
		fill.jobs, fill.finished, o.running, o.etcd)
	t := &benchkit.Table{Header: []string{"training-apiserver", "value", "target"}}
	t.Add("stored in", fmt.Sprintf("%s creates (%.0f/s), %s status writes (%.0f/s)",
		fill.creates.Round(time.Second), float64(fill.jobs)/fill.creates.Seconds(),
		fill.statuses.Round(time.Second), float64(fill.finished)/fill.statuses.Seconds()), "")
	t.Add("RSS (MiB), anonymous", benchkit.MiB(s.rss)+", "+benchkit.MiB(s.anon), "≤ "+benchkit.MiB(apiserverRSSTarget)+verdict(s.rss <= apiserverRSSTarget))
	t.Add("RSS after a restart (MiB)", benchkit.MiB(s.rssRestart), "")
	etcd := "etcd database (MiB)"
	if o.etcd == "external" {
		etcd = "etcd database, external, kube-apiserver's objects too (MiB)"
	}
	t.Add(etcd, benchkit.MiB(s.etcdBytes), "")
	p99 := benchkit.Percentile(s.pages, 99)
	t.Add(fmt.Sprintf("LIST page of %d, p50 / p99 (ms, %d pages)", o.pageSize, len(s.pages)),
		benchkit.Ms(benchkit.Median(s.pages))+" / "+benchkit.Ms(p99), "p99 ≤ "+benchkit.Ms(pageP99Target)+verdict(p99 <= pageP99Target))
	t.Add(fmt.Sprintf("full LIST, protobuf (ms, %d items)", s.fullItems), benchkit.Ms(s.fullList), "")
	t.Add(fmt.Sprintf("new watch to its initial events (ms, %d events)", s.watchEvents), benchkit.Ms(s.watchInit), "")
	t.Add("restart to ready (s)", fmt.Sprintf("%.1f", s.restart.Seconds()), "")
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
