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
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// The server's GOGC follows its live heap unless the environment sets GOGC.
//
// Most of the heap is the watch cache: every job, decoded, for as long as it
// exists. Go's fixed default (100) lets the heap grow to twice what is live
// before it collects, so with many jobs the resident size was about twice
// the cache. A fixed low value (50 was tried) keeps that down but makes a
// small server collect four times as often as it needs to: with a few
// thousand jobs the collector then took a quarter of the CPU of a create.
// So after every collection the heap may grow by gcHeadroom past what it
// found live, as a percentage clamped to [minGCPercent, maxGCPercent]: a
// small heap collects rarely, and from 96 MiB live on (about 10,000 jobs
// of make bench-api's shape) the heap grows by half, as with the fixed 50.
//
// GOMEMLIMIT does not do this job by itself (docs/benchmarks.md, "The GC
// tuner against GOMEMLIMIT"): make bench-api holds 10,000 jobs in 232 MiB
// RSS with the tuner, in 278-290 MiB with GOGC=100, and in as much with
// GOGC=100 and a limit of 256MiB or 512MiB, which the heap never reaches.
// A limit matches the tuner only when chosen for the number of jobs
// (160MiB: 224 MiB), and one chosen too low for them costs CPU (128MiB: 88
// collections instead of 55 while creating them, 2.03 ms of CPU per create
// instead of 1.76-1.86). GOMEMLIMIT still applies on top of the tuner.
const (
	gcHeadroom   = 48 << 20
	minGCPercent = 50
	maxGCPercent = 200
)

// gcPercentFor returns the GOGC for a live heap of live bytes.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return maxGCPercent
	}
	p := uint64(gcHeadroom) * 100 / live
	switch {
	case p < minGCPercent:
		return minGCPercent
	case p > maxGCPercent:
		return maxGCPercent
	}
	return int(p)
}

// gcTuner sets the GC percentage from the live heap.
type gcTuner struct {
	liveHeap       func() uint64
	setGCPercent   func(int) int
	currentPercent int
}

// tune applies gcPercentFor(live heap) when it is not already in force.
func (t *gcTuner) tune() {
	want := gcPercentFor(t.liveHeap())
	if want == t.currentPercent {
		return
	}
	t.setGCPercent(want)
	t.currentPercent = want
}

// liveHeapBytes reads the heap the last collection found live.
func liveHeapBytes() uint64 {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}

// gcSentinel is garbage from the moment it is made; its finalizer runs once
// after each collection and makes it reachable again for the next one. It
// holds a pointer, so the allocator never packs it with other small objects
// (a finalizer on such a tiny object may never run).
type gcSentinel struct {
	afterGC func() bool
}

// onEachGC calls afterGC on the finalizer goroutine after every collection
// for as long as it returns true.
func onEachGC(afterGC func() bool) {
	runtime.SetFinalizer(&gcSentinel{afterGC: afterGC}, rearmGCSentinel)
}

func rearmGCSentinel(s *gcSentinel) {
	if s.afterGC() {
		runtime.SetFinalizer(s, rearmGCSentinel)
	}
}

// gcRuntime is what the tuner uses of the Go runtime. goRuntime is the real
// one; the tests drive a fake by hand, so that none of them waits for a
// collection.
type gcRuntime struct {
	// liveHeap returns the heap the last collection found live.
	liveHeap func() uint64
	// setGCPercent is debug.SetGCPercent.
	setGCPercent func(int) int
	// onEachGC calls afterGC after every collection for as long as it
	// returns true.
	onEachGC func(afterGC func() bool)
}

var goRuntime = gcRuntime{liveHeap: liveHeapBytes, setGCPercent: debug.SetGCPercent, onEachGC: onEachGC}

// startGCTuner tunes the GC percentage after every collection until ctx
// ends, unless getenv("GOGC") is set: an operator's GOGC is kept as given.
func startGCTuner(ctx context.Context, getenv func(string) string) {
	goRuntime.startTuner(ctx, getenv)
}

// startTuner is startGCTuner on rt: it tunes once now and then after every
// collection, until the first collection after ctx ended.
func (rt gcRuntime) startTuner(ctx context.Context, getenv func(string) string) {
	if getenv("GOGC") != "" {
		return
	}
	t := &gcTuner{liveHeap: rt.liveHeap, setGCPercent: rt.setGCPercent, currentPercent: -1}
	t.tune()
	rt.onEachGC(func() bool {
		if ctx.Err() != nil {
			return false
		}
		t.tune()
		return true
	})
}
