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
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// Log tails are read off the reconcile's path: a node that stops answering
// holds a read for logTailTimeout, and a reconcile that waited for its
// reads in turn would hold a worker, and every job behind it, for as many
// timeouts as the job has failed replicas. A reconcile that needs tails
// starts their reads and ends without acting; each finished read queues
// the job again, and the reconcile that finds every tail read acts with
// them, before the pods go.

// maxConcurrentLogTailReads bounds the log reads in flight across all jobs;
// more wait for a slot.
const maxConcurrentLogTailReads = 16

// logTailKeep is how long a tail read stays for the reconcile that uses it;
// long enough for a job queued behind many, short enough that the
// memory held is the few minutes' failures only.
const logTailKeep = 5 * time.Minute

// logTailKey names one read: a container of a pod (by UID, so a pod made
// again under its name is read afresh), with the bounds it is read within.
type logTailKey struct {
	job       jobKey
	pod       types.UID
	container string
	lines     int64
	maxBytes  int
}

type logTailRead struct {
	tail v1beta1.ReplicaLogTail
	done bool
	// finished is when the read ended; it is kept until logTailKeep after.
	finished time.Time
}

// logTailReads runs log reads in the background and keeps their results for
// the reconcile that asked.
type logTailReads struct {
	clock clock.Clock
	slots chan struct{}
	// requeue queues a job again once one of its reads has ended.
	requeue func(jobKey)

	mu    sync.Mutex
	reads map[logTailKey]*logTailRead
	// inFlight counts, per job, the reads started and not ended; misses
	// counts the asks that found a tail not read yet. Both are for tests
	// that reconcile by hand and wait for the reads.
	inFlight map[jobKey]int
	misses   int
	ended    *sync.Cond
}

func newLogTailReads(clk clock.Clock, requeue func(jobKey)) *logTailReads {
	t := &logTailReads{
		clock:    clk,
		slots:    make(chan struct{}, maxConcurrentLogTailReads),
		requeue:  requeue,
		reads:    map[logTailKey]*logTailRead{},
		inFlight: map[jobKey]int{},
	}
	t.ended = sync.NewCond(&t.mu)
	return t
}

// get returns the tail key names once its read has ended. Until then it
// starts the read (once) and says it is not ready. ctx must outlive the
// reconcile: it bounds the read, which runs after the reconcile returns.
func (t *logTailReads) get(ctx context.Context, key logTailKey,
	read func(context.Context) v1beta1.ReplicaLogTail) (v1beta1.ReplicaLogTail, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forgetOld()
	if r, ok := t.reads[key]; ok {
		if !r.done {
			t.misses++
		}
		return r.tail, r.done
	}
	t.misses++
	t.reads[key] = &logTailRead{}
	t.inFlight[key.job]++
	go t.run(ctx, key, read)
	return v1beta1.ReplicaLogTail{}, false
}

func (t *logTailReads) run(ctx context.Context, key logTailKey, read func(context.Context) v1beta1.ReplicaLogTail) {
	var tail v1beta1.ReplicaLogTail
	select {
	case t.slots <- struct{}{}:
		tail = read(ctx)
		<-t.slots
	case <-ctx.Done():
		tail.Error = "not read: the controller is stopping"
	}
	t.mu.Lock()
	if r := t.reads[key]; r != nil {
		r.tail, r.done, r.finished = tail, true, t.clock.Now()
	}
	t.mu.Unlock()
	// Queued outside the lock; the read counts as in flight until then, so
	// that wait returns only once the job is queued again.
	t.requeue(key.job)
	t.mu.Lock()
	t.inFlight[key.job]--
	if t.inFlight[key.job] <= 0 {
		delete(t.inFlight, key.job)
	}
	t.ended.Broadcast()
	t.mu.Unlock()
}

// forgetOld drops the reads that ended more than logTailKeep ago. The
// caller holds t.mu.
func (t *logTailReads) forgetOld() {
	now := t.clock.Now()
	for k, r := range t.reads {
		if r.done && now.Sub(r.finished) > logTailKeep {
			delete(t.reads, k)
		}
	}
}

// wait blocks until no read of the job is in flight: each has ended and
// queued the job again.
func (t *logTailReads) wait(job jobKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.inFlight[job] > 0 {
		t.ended.Wait()
	}
}

// missed is how many times a reconcile asked for a tail not read yet.
func (t *logTailReads) missed() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.misses
}
