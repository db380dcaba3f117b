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

package controller

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// blockedReads are reads that hang, as on a node that stopped answering,
// until released.
type blockedReads struct {
	release chan struct{}
	started atomic.Int32
	running atomic.Int32
	peak    atomic.Int32
}

func (b *blockedReads) read(name string) func(context.Context) v1beta1.ReplicaLogTail {
	return func(ctx context.Context) v1beta1.ReplicaLogTail {
		b.started.Add(1)
		n := b.running.Add(1)
		for p := b.peak.Load(); n > p && !b.peak.CompareAndSwap(p, n); p = b.peak.Load() {
		}
		defer b.running.Add(-1)
		select {
		case <-b.release:
			return v1beta1.ReplicaLogTail{Name: name, Lines: "the last line of " + name}
		case <-ctx.Done():
			return v1beta1.ReplicaLogTail{Name: name, Error: ctx.Err().Error()}
		}
	}
}

// requeues records the jobs queued again, as the controller's queue would
// hold them.
type requeues struct {
	mu   sync.Mutex
	jobs []jobKey
}

func (q *requeues) add(k jobKey) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.jobs = append(q.jobs, k)
}

func (q *requeues) count(k jobKey) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, j := range q.jobs {
		if j == k {
			n++
		}
	}
	return n
}

// TestLogTailReadsDoNotHoldTheCaller: a read that hangs leaves the asker
// free at once; asking again starts no second read; the end of the read
// queues the job, and the next ask has the tail.
func TestLogTailReadsDoNotHoldTheCaller(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	q := &requeues{}
	reads := newLogTailReads(clk, q.add)
	b := &blockedReads{release: make(chan struct{})}
	job := jobKey{Kind: "PyTorchTrainingJob", Namespace: "ns", Name: "j"}
	key := logTailKey{job: job, pod: "uid-1", lines: 10, maxBytes: 1024}

	for range 3 {
		if _, ok := reads.get(t.Context(), key, b.read("j-worker-0")); ok {
			t.Fatal("a read that hangs was reported done")
		}
	}
	waitFor(t, "the read to start", func() bool { return b.started.Load() == 1 })
	if n := b.started.Load(); n != 1 {
		t.Errorf("%d reads started for one tail asked three times, want 1", n)
	}
	if q.count(job) != 0 {
		t.Errorf("the job was queued again before its read ended")
	}

	close(b.release)
	reads.wait(job)
	if q.count(job) != 1 {
		t.Errorf("the job was queued %d times once its read ended, want 1", q.count(job))
	}
	tail, ok := reads.get(t.Context(), key, b.read("j-worker-0"))
	if !ok || tail.Lines != "the last line of j-worker-0" {
		t.Errorf("tail %+v (read %v), want the read's lines", tail, ok)
	}
	if n := b.started.Load(); n != 1 {
		t.Errorf("%d reads started, want the one kept", n)
	}

	// A pod made again under its name (another UID) is read afresh.
	other := key
	other.pod = "uid-2"
	if _, ok := reads.get(t.Context(), other, b.read("j-worker-0")); ok {
		t.Error("the tail of another pod was taken from the first")
	}
	reads.wait(job)

	// Long after, the tail is forgotten and read again if asked.
	clk.Step(logTailKeep + time.Second)
	if _, ok := reads.get(t.Context(), key, b.read("j-worker-0")); ok {
		t.Errorf("a tail read %s ago is still kept", logTailKeep+time.Second)
	}
	reads.wait(job)
}

// TestLogTailReadsAreBounded: however many tails are asked for, at most
// maxConcurrentLogTailReads are read at once; the others wait for a slot,
// and a stopping controller ends them.
func TestLogTailReadsAreBounded(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	q := &requeues{}
	reads := newLogTailReads(clk, q.add)
	b := &blockedReads{release: make(chan struct{})}
	ctx, cancel := context.WithCancel(t.Context())
	const jobs = 3 * maxConcurrentLogTailReads
	for i := range jobs {
		job := jobKey{Kind: "GenericJob", Namespace: "ns", Name: fmt.Sprintf("j%d", i)}
		reads.get(ctx, logTailKey{job: job, pod: types.UID(fmt.Sprint(i))}, b.read(job.Name))
	}
	waitFor(t, "the slots to fill", func() bool { return b.running.Load() == maxConcurrentLogTailReads })
	// Give the reads beyond the bound a moment in which they could start.
	time.Sleep(50 * time.Millisecond)
	if p := b.peak.Load(); p != maxConcurrentLogTailReads {
		t.Errorf("%d reads at once, want %d", p, maxConcurrentLogTailReads)
	}

	cancel()
	for i := range jobs {
		job := jobKey{Kind: "GenericJob", Namespace: "ns", Name: fmt.Sprintf("j%d", i)}
		reads.wait(job)
		tail, ok := reads.get(ctx, logTailKey{job: job, pod: types.UID(fmt.Sprint(i))}, b.read(job.Name))
		if !ok || tail.Error == "" {
			t.Errorf("%s: tail %+v (read %v) after the stop, want an error that says why", job.Name, tail, ok)
		}
		if q.count(job) != 1 {
			t.Errorf("%s queued %d times, want 1", job.Name, q.count(job))
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
