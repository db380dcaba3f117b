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
	"context"
	"fmt"
	"io"
	"time"

	"tensorstack.dev/training/test/bench/internal/benchkit"
)

// memoryResult is what the server that stores one target's jobs held in
// memory while it served many of them.
type memoryResult struct {
	server string
	jobs   int
	// before is the server's RSS just before the creates, held its RSS
	// settle after the last one (heldAnon the anonymous part of it), peak
	// its high-water mark in between.
	before, held, heldAnon, peak int64
	// createCPU is the server's CPU time while the creates ran, seconds.
	createCPU float64
}

// memoryServer names the process that stores a target's jobs.
func memoryServer(t *target) string {
	if t.key == "crd" {
		return "kube-apiserver"
	}
	return "training-apiserver"
}

// memoryTargets picks one target per storing server: the CRD's, and ours
// direct when measured (the aggregated path stores in the same server).
func memoryTargets(targets []*target) []*target {
	var crd, ours *target
	for _, t := range targets {
		switch {
		case t.key == "crd":
			crd = t
		case ours == nil || t.key == "direct":
			ours = t
		}
	}
	var out []*target
	for _, t := range []*target{crd, ours} {
		if t != nil {
			out = append(out, t)
		}
	}
	return out
}

// measureMemory creates o.memoryJobs jobs in a namespace of their own and
// reads how much the storing server grew to hold them, then deletes them.
func measureMemory(ctx context.Context, t *target, stack *benchkit.Stack, o options) (*memoryResult, error) {
	r := &memoryResult{server: memoryServer(t), jobs: o.memoryJobs}
	pid, err := stack.Pid(r.server)
	if err != nil {
		return nil, err
	}
	mt := *t
	mt.namespace = t.namespace + "-memory"
	if err := freshNamespace(ctx, mt.kube, mt.namespace); err != nil {
		return nil, err
	}
	sampler, err := benchkit.StartSampler([]benchkit.Process{{Name: r.server, Pid: pid}}, 250*time.Millisecond)
	if err != nil {
		return nil, err
	}
	if r.before, _, err = benchkit.RSS(pid); err != nil {
		sampler.Stop()
		return nil, err
	}
	name := func(i int) string { return fmt.Sprintf("mem-%05d", i) }
	cpuBefore, err := benchkit.CPUSeconds(pid)
	if err != nil {
		sampler.Stop()
		return nil, err
	}
	wall, _, err := benchkit.Parallel(ctx, o.memoryJobs, o.concurrency, func(ctx context.Context, i int) error {
		return mt.create(ctx, name(i))
	})
	if err != nil {
		sampler.Stop()
		return nil, fmt.Errorf("creates: %w", err)
	}
	cpuAfter, err := benchkit.CPUSeconds(pid)
	if err != nil {
		sampler.Stop()
		return nil, err
	}
	r.createCPU = cpuAfter - cpuBefore
	benchkit.Logf("  created %d in %s; letting %s settle for %s", o.memoryJobs, wall.Round(time.Millisecond), r.server, o.memorySettle)
	select {
	case <-ctx.Done():
	case <-time.After(o.memorySettle):
	}
	r.held, r.heldAnon, err = benchkit.RSS(pid)
	usage := sampler.Stop()
	if err != nil {
		return nil, err
	}
	r.peak = usage[0].PeakRSSBytes
	if usage[0].PeakSince != "run" {
		r.peak = -1 // the mark could not be reset: it says nothing of this run
	}

	if _, _, err := benchkit.Parallel(ctx, o.memoryJobs, o.concurrency, func(ctx context.Context, i int) error {
		return mt.delete(ctx, name(i))
	}); err != nil {
		return nil, fmt.Errorf("deletes: %w", err)
	}
	return r, waitCount(ctx, &mt, 0)
}

// reportMemory prints the memory table: the CRD's column first, ours after.
func reportMemory(w io.Writer, o options, targets []*target, results map[string]*memoryResult) {
	var cols []*target
	var crd *memoryResult
	for _, t := range targets {
		if r := results[t.key]; r != nil {
			cols = append(cols, t)
			if t.key == "crd" {
				crd = r
			}
		}
	}
	if len(cols) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### Server memory holding %d jobs (RSS %s after the last create)\n\n", o.memoryJobs, o.memorySettle)
	t := benchkit.Table{Header: []string{"metric"}}
	for _, c := range cols {
		t.Header = append(t.Header, fmt.Sprintf("%s (%s)", results[c.key].server, c.key))
	}
	if crd != nil {
		for _, c := range cols {
			if c.key != "crd" {
				t.Header = append(t.Header, c.key+" / CRD")
			}
		}
	}
	mib := func(b int64) (float64, string) {
		if b < 0 {
			return -1, "n/a"
		}
		return float64(b), benchkit.MiB(b)
	}
	rows := []struct {
		name  string
		value func(r *memoryResult) (float64, string)
	}{
		{"RSS before the creates (MiB)", func(r *memoryResult) (float64, string) { return mib(r.before) }},
		{fmt.Sprintf("RSS holding the %d jobs (MiB)", o.memoryJobs), func(r *memoryResult) (float64, string) { return mib(r.held) }},
		{"of which anonymous: heap, stacks (MiB)", func(r *memoryResult) (float64, string) { return mib(r.heldAnon) }},
		{"growth (MiB)", func(r *memoryResult) (float64, string) { return mib(r.held - r.before) }},
		{"peak RSS during the creates (MiB)", func(r *memoryResult) (float64, string) { return mib(r.peak) }},
		{"CPU per create while filling (ms)", func(r *memoryResult) (float64, string) {
			v := cpuPerCreate(r.createCPU, r.jobs)
			return v, fmt.Sprintf("%.2f", v)
		}},
	}
	for _, row := range rows {
		cells := []string{row.name}
		for _, c := range cols {
			_, s := row.value(results[c.key])
			cells = append(cells, s)
		}
		if crd != nil {
			base, _ := row.value(crd)
			for _, c := range cols {
				if c.key != "crd" {
					v, _ := row.value(results[c.key])
					cells = append(cells, benchkit.Ratio(v, base))
				}
			}
		}
		t.Add(cells...)
	}
	_ = t.Write(w)
}
