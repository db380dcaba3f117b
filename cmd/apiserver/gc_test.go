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
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync/atomic"
	"testing"
	"weak"
)

const mib = 1 << 20

func TestGCPercentFor(t *testing.T) {
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 200},
		{8 * mib, 200},
		{24 * mib, 200},
		{48 * mib, 100},
		{64 * mib, 75},
		{96 * mib, 50},
		{500 * mib, 50},
	} {
		if got := gcPercentFor(tc.live); got != tc.want {
			t.Errorf("gcPercentFor(%d MiB) = %d, want %d", tc.live/mib, got, tc.want)
		}
	}
}

func TestGCTunerSetsOnlyChanges(t *testing.T) {
	live := uint64(0)
	var set []int
	tuner := &gcTuner{
		liveHeap:       func() uint64 { return live },
		setGCPercent:   func(p int) int { set = append(set, p); return 0 },
		currentPercent: -1,
	}
	for _, l := range []uint64{1 * mib, 2 * mib, 48 * mib, 48 * mib, 200 * mib, 300 * mib} {
		live = l
		tuner.tune()
	}
	if want := []int{200, 100, 50}; !slices.Equal(set, want) {
		t.Fatalf("set %v, want %v", set, want)
	}
}

// fakeGC is a gcRuntime whose collections the test runs by hand.
type fakeGC struct {
	live    uint64
	set     []int
	afterGC func() bool // the hook registered, nil when none is
}

func (f *fakeGC) runtime() gcRuntime {
	return gcRuntime{
		liveHeap:     func() uint64 { return f.live },
		setGCPercent: func(p int) int { f.set = append(f.set, p); return 0 },
		onEachGC: func(afterGC func() bool) {
			if f.afterGC != nil {
				panic("onEachGC called twice")
			}
			f.afterGC = afterGC
		},
	}
}

// collect is a collection that found live bytes live: it runs the hook, as
// the runtime does, and drops it once it returns false.
func (f *fakeGC) collect(live uint64) {
	f.live = live
	if f.afterGC != nil && !f.afterGC() {
		f.afterGC = nil
	}
}

func noEnv(string) string { return "" }

func TestGCTunerTunesAtStartAndAfterEachCollection(t *testing.T) {
	f := &fakeGC{live: 8 * mib}
	f.runtime().startTuner(context.Background(), noEnv)
	if want := []int{200}; !slices.Equal(f.set, want) {
		t.Fatalf("at start, 8 MiB live: set %v, want %v", f.set, want)
	}
	if f.afterGC == nil {
		t.Fatal("no hook registered for the collections")
	}
	for _, live := range []uint64{72 * mib, 200 * mib, 16 * mib} {
		f.collect(live)
	}
	if want := []int{200, 66, 50, 200}; !slices.Equal(f.set, want) {
		t.Errorf("after collections finding 72, 200 and 16 MiB live: set %v, want %v", f.set, want)
	}
	if f.afterGC == nil {
		t.Error("the hook stopped while the context lasts")
	}
}

func TestGCTunerStopsAfterTheContextEnds(t *testing.T) {
	f := &fakeGC{live: 8 * mib}
	ctx, cancel := context.WithCancel(context.Background())
	f.runtime().startTuner(ctx, noEnv)
	cancel()
	f.collect(200 * mib)
	if want := []int{200}; !slices.Equal(f.set, want) {
		t.Errorf("a collection after the context ended: set %v, want %v (nothing more)", f.set, want)
	}
	if f.afterGC != nil {
		t.Error("the hook still runs after the context ended")
	}
}

func TestGCTunerKeepsTheOperatorsGOGC(t *testing.T) {
	for _, gogc := range []string{"100", "off"} {
		f := &fakeGC{live: 8 * mib}
		f.runtime().startTuner(context.Background(), func(k string) string {
			if k == "GOGC" {
				return gogc
			}
			return ""
		})
		f.collect(200 * mib)
		if len(f.set) != 0 || f.afterGC != nil {
			t.Errorf("GOGC=%s: set %v, hook registered %t; want neither", gogc, f.set, f.afterGC != nil)
		}
	}
}

// The tests below use the runtime itself, without a clock: runtime.GC
// returns once its collection is complete, swept included (so finalizers it
// found are queued and weak pointers it cleared read nil), and with
// automatic collections off (noAutoGC) no other collection runs meanwhile.
// A test blocks only on a finalizer that a collection it made has queued,
// which the runtime runs; it never waits for a collection to happen.

// noAutoGC turns automatic collections off until the test ends.
func noAutoGC(t *testing.T) {
	prevPercent := debug.SetGCPercent(-1)
	prevLimit := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() {
		debug.SetMemoryLimit(prevLimit)
		debug.SetGCPercent(prevPercent)
	})
}

// gcPercent reads the GC percentage in force without setting it.
func gcPercent() int {
	sample := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(sample)
	return int(sample[0].Value.Uint64())
}

func TestLiveHeapBytesIsWhatTheLastCollectionFoundLive(t *testing.T) {
	noAutoGC(t)
	held := make([]byte, 100*mib)
	runtime.GC()
	if got := goRuntime.liveHeap(); got < 100*mib {
		t.Errorf("holding 100 MiB: live heap %d MiB, want at least 100", got/mib)
	}
	runtime.KeepAlive(held)
}

func TestStartGCTunerSetsTheRuntimesPercent(t *testing.T) {
	noAutoGC(t)
	held := make([]byte, 100*mib)
	runtime.GC()
	rt := goRuntime
	rt.onEachGC = func(func() bool) {} // the real hook has a test of its own
	rt.startTuner(context.Background(), noEnv)
	if got := gcPercent(); got != 50 {
		t.Errorf("holding 100 MiB: GC percent %d, want 50", got)
	}
	runtime.KeepAlive(held)
}

// gcToken stands for what the hook holds. It holds a pointer, so that the
// allocator never packs it with other small objects: it is freed by the
// first collection that finds it unreachable.
type gcToken struct{ _ *int }

// onEachGCHolding registers afterGC, which holds a token, through the real
// onEachGC, and returns a weak pointer to the token: it stays valid for as
// long as the sentinel is armed, queued or running, and a collection after
// the sentinel was let go frees it.
func onEachGCHolding(afterGC func() bool) weak.Pointer[gcToken] {
	token := &gcToken{}
	goRuntime.onEachGC(func() bool {
		runtime.KeepAlive(token)
		return afterGC()
	})
	return weak.Make(token)
}

// finalizersDone returns once every finalizer that is running now has
// returned: it waits for the finalizer of a new object, which the one
// finalizer goroutine can only start after those (runtime.SetFinalizer:
// "A single goroutine runs all finalizers for a program, sequentially").
func finalizersDone() {
	done := make(chan struct{})
	runtime.SetFinalizer(&finalizerBarrier{done: done}, func(b *finalizerBarrier) { close(b.done) })
	runtime.GC()
	<-done
}

type finalizerBarrier struct{ done chan struct{} }

func TestOnEachGCRunsAfterCollectionsUntilFalse(t *testing.T) {
	noAutoGC(t)
	var keep atomic.Bool
	keep.Store(true)
	// Each call sends what it returned. The test makes eight collections,
	// so the buffer never fills.
	calls := make(chan bool, 64)
	token := onEachGCHolding(func() bool {
		k := keep.Load()
		calls <- k
		return k
	})

	runtime.GC()
	if token.Value() == nil {
		t.Fatal("the first collection found no finalizer armed")
	}
	<-calls // queued by that collection: it runs

	// Once that call returned true, the sentinel is armed again.
	finalizersDone()
	runtime.GC()
	if token.Value() == nil {
		t.Fatal("after afterGC returned true, a collection found no finalizer armed")
	}
	<-calls

	keep.Store(false)
	finalizersDone()
	runtime.GC() // a collection after the change: a call returns false
	for <-calls {
	}
	finalizersDone() // that call has returned
	runtime.GC()
	if token.Value() != nil {
		t.Error("after afterGC returned false, the sentinel is still armed")
	}
}
