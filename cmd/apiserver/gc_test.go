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
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

func TestGCPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, maxGCPercent},
		{8 * mib, maxGCPercent},
		{24 * mib, 200},
		{48 * mib, 100},
		{64 * mib, 75},
		{96 * mib, 50},
		{500 * mib, minGCPercent},
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
	for _, l := range []uint64{1 << 20, 2 << 20, 48 << 20, 48 << 20, 200 << 20, 300 << 20} {
		live = l
		tuner.tune()
	}
	if want := []int{200, 100, 50}; !slices.Equal(set, want) {
		t.Fatalf("set %v, want %v", set, want)
	}
}

func TestOnEachGCRunsAfterEveryCollectionUntilFalse(t *testing.T) {
	var calls atomic.Int32
	onEachGC(func() bool { return calls.Add(1) < 3 })
	deadline := time.Now().Add(10 * time.Second)
	for calls.Load() < 3 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if got := calls.Load(); got != 3 {
		t.Fatalf("after collections: %d calls, want 3", got)
	}
	for range 5 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if got := calls.Load(); got != 3 {
		t.Errorf("after it returned false: %d calls, want it to stay at 3", got)
	}
}

// gcPercent reads the GC percentage in force without setting it, so that
// it cannot undo what the tuner sets meanwhile.
func gcPercent() int {
	sample := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(sample)
	return int(sample[0].Value.Uint64())
}

func TestStartGCTunerFollowsTheLiveHeap(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	runtime.GC()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	startGCTuner(ctx, func(string) string { return "" })
	small := gcPercent()
	if want := gcPercentFor(liveHeapBytes()); small != want {
		t.Fatalf("at start: GC percent %d, want %d for the live heap", small, want)
	}

	// 72 MiB more live: after the next collection the percentage drops.
	held := make([]byte, 72<<20)
	deadline := time.Now().Add(10 * time.Second)
	for gcPercent() == small && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if got, want := gcPercent(), gcPercentFor(liveHeapBytes()); got != want || got >= small {
		t.Errorf("holding 72 MiB more: GC percent %d, want %d (below %d)", got, want, small)
	}
	runtime.KeepAlive(held)
}

func TestStartGCTunerKeepsGOGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)

	startGCTuner(context.Background(), func(k string) string {
		if k == "GOGC" {
			return "100"
		}
		return ""
	})
	runtime.GC()
	time.Sleep(50 * time.Millisecond)
	if got := gcPercent(); got != 100 {
		t.Errorf("with GOGC=100 set: GC percent %d, want it left at 100", got)
	}
}
