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

package trainingjob

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

// coalescerClock is a fake clock whose AfterFunc callbacks run after Step
// returns, outside the fake clock's lock, the way a real timer runs its
// callback in a goroutine of its own. (The fake clock calls them while it
// holds its lock, and the coalescer's flush reads the clock.)
type coalescerClock struct {
	*testingclock.FakeClock
	mu  sync.Mutex
	due []func()
}

func (c *coalescerClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	return c.FakeClock.AfterFunc(d, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.due = append(c.due, f)
	})
}

// step moves the clock on and runs the callbacks that came due.
func (c *coalescerClock) step(d time.Duration) {
	c.FakeClock.Step(d)
	c.runDue()
}

// stepTo moves the clock on to t and runs the callbacks that came due.
func (c *coalescerClock) stepTo(t time.Time) { c.step(t.Sub(c.Now())) }

func (c *coalescerClock) runDue() {
	c.mu.Lock()
	due := c.due
	c.due = nil
	c.mu.Unlock()
	for _, f := range due {
		f()
	}
}

// progressWrite is one call of the coalescer's write function.
type progressWrite struct {
	key       jobKey
	report    pendingReport
	replaced  int64
	at        time.Time
	namespace string
}

// fakeProgressWriter records writes and fails those it is told to.
type fakeProgressWriter struct {
	clock  clock.PassiveClock
	mu     sync.Mutex
	writes []progressWrite
	fail   []error // the errors of the next writes, nil for success
}

func (w *fakeProgressWriter) write(ctx context.Context, key jobKey, report pendingReport, replaced int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	namespace, _ := genericapirequest.NamespaceFrom(ctx)
	w.writes = append(w.writes, progressWrite{key: key, report: report, replaced: replaced, at: w.clock.Now(), namespace: namespace})
	if len(w.fail) > 0 {
		err := w.fail[0]
		w.fail = w.fail[1:]
		return err
	}
	return nil
}

func (w *fakeProgressWriter) taken() []progressWrite {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]progressWrite(nil), w.writes...)
}

const testProgressInterval = 5 * time.Second

func newTestCoalescer() (*progressCoalescer, *coalescerClock, *fakeProgressWriter) {
	clk := &coalescerClock{FakeClock: testingclock.NewFakeClock(progressT0)}
	writer := &fakeProgressWriter{clock: clk}
	return newProgressCoalescer(testProgressInterval, clk, writer.write), clk, writer
}

var (
	jobA       = jobKey{namespace: "ns", name: "a", uid: types.UID("uid-a")}
	jobB       = jobKey{namespace: "ns", name: "b", uid: types.UID("uid-b")}
	jobC       = jobKey{namespace: "other", name: "a", uid: types.UID("uid-c")}
	jobAReborn = jobKey{namespace: "ns", name: "a", uid: types.UID("uid-a2")}
)

// stepReport is a report of the given step, received now.
func stepReport(clk clock.PassiveClock, step int64) pendingReport {
	return pendingReport{values: batch.ProgressValues{Step: ptr.To(step)}, reporter: "pod", received: clk.Now()}
}

func mustReport(t *testing.T, c *progressCoalescer, key jobKey, report pendingReport) batch.ProgressReportStatus {
	t.Helper()
	// A request's context names its namespace.
	ctx := genericapirequest.WithNamespace(context.Background(), key.namespace)
	status, err := c.report(ctx, key, report)
	if err != nil {
		t.Fatalf("report %v: %v", key, err)
	}
	return status
}

func expectStored(t *testing.T, status batch.ProgressReportStatus) {
	t.Helper()
	if !status.Stored || status.StoreTime != nil || status.Replaced {
		t.Errorf("status = %+v, want stored at once", status)
	}
}

func expectHeld(t *testing.T, status batch.ProgressReportStatus, storeAt time.Time, replaced bool) {
	t.Helper()
	if status.Stored || status.StoreTime == nil || !status.StoreTime.Time.Equal(storeAt) || status.Replaced != replaced {
		t.Errorf("status = {Stored:%v StoreTime:%v Replaced:%v}, want held until %v, replaced %v",
			status.Stored, status.StoreTime, status.Replaced, storeAt, replaced)
	}
}

func expectWrite(t *testing.T, got progressWrite, key jobKey, step int64, replaced int64, at time.Time) {
	t.Helper()
	if got.key != key || got.report.values.Step == nil || *got.report.values.Step != step || got.replaced != replaced || !got.at.Equal(at) {
		gotStep := "none"
		if got.report.values.Step != nil {
			gotStep = fmt.Sprint(*got.report.values.Step)
		}
		t.Errorf("write of %v step %s replaced %d at %v; want %v step %d replaced %d at %v",
			got.key, gotStep, got.replaced, got.at, key, step, replaced, at)
	}
	if got.namespace != key.namespace {
		t.Errorf("write of %v: the context's namespace is %q, want %q", got.key, got.namespace, key.namespace)
	}
}

func TestCoalescerFirstReportIsWrittenAtOnce(t *testing.T) {
	c, clk, writer := newTestCoalescer()
	expectStored(t, mustReport(t, c, jobA, stepReport(clk, 1)))
	writes := writer.taken()
	if len(writes) != 1 {
		t.Fatalf("%d writes, want 1", len(writes))
	}
	expectWrite(t, writes[0], jobA, 1, 0, progressT0)
	if !writes[0].report.received.Equal(progressT0) || writes[0].report.reporter != "pod" {
		t.Errorf("the written report is %+v, not the one sent", writes[0].report)
	}
	if clk.HasWaiters() {
		t.Errorf("a report written at once left a timer")
	}

	// A report after the interval is written at once too.
	clk.step(testProgressInterval)
	expectStored(t, mustReport(t, c, jobA, stepReport(clk, 2)))
	if writes := writer.taken(); len(writes) != 2 {
		t.Fatalf("%d writes, want 2", len(writes))
	} else {
		expectWrite(t, writes[1], jobA, 2, 0, progressT0.Add(testProgressInterval))
	}
}

func TestCoalescerHoldsAReportWithinTheInterval(t *testing.T) {
	c, clk, writer := newTestCoalescer()
	mustReport(t, c, jobA, stepReport(clk, 1))
	clk.step(100 * time.Millisecond)

	expectHeld(t, mustReport(t, c, jobA, stepReport(clk, 2)), progressT0.Add(testProgressInterval), false)
	if n := len(writer.taken()); n != 1 {
		t.Fatalf("%d writes before the end of the interval, want only the first", n)
	}

	clk.step(testProgressInterval - 100*time.Millisecond - time.Nanosecond)
	if n := len(writer.taken()); n != 1 {
		t.Fatalf("%d writes a nanosecond before the end of the interval, want 1", n)
	}
	clk.step(time.Nanosecond)
	writes := writer.taken()
	if len(writes) != 2 {
		t.Fatalf("%d writes at the end of the interval, want 2", len(writes))
	}
	expectWrite(t, writes[1], jobA, 2, 0, progressT0.Add(testProgressInterval))
	// The held report keeps the time it was received.
	if want := progressT0.Add(100 * time.Millisecond); !writes[1].report.received.Equal(want) {
		t.Errorf("held report received %v, want %v", writes[1].report.received, want)
	}

	// The flush starts a new interval: a report right after it waits again.
	clk.step(100 * time.Millisecond)
	expectHeld(t, mustReport(t, c, jobA, stepReport(clk, 3)), progressT0.Add(2*testProgressInterval), false)
	clk.stepTo(progressT0.Add(2 * testProgressInterval))
	if writes := writer.taken(); len(writes) != 3 {
		t.Fatalf("%d writes, want 3", len(writes))
	} else {
		expectWrite(t, writes[2], jobA, 3, 0, progressT0.Add(2*testProgressInterval))
	}
}

func TestCoalescerBurstKeepsTheLastReport(t *testing.T) {
	c, clk, writer := newTestCoalescer()
	expectStored(t, mustReport(t, c, jobA, stepReport(clk, 0)))
	storeAt := progressT0.Add(testProgressInterval)
	for i := int64(1); i <= 10; i++ {
		clk.step(100 * time.Millisecond)
		expectHeld(t, mustReport(t, c, jobA, stepReport(clk, i)), storeAt, i > 1)
	}
	if n := clk.Waiters(); n != 1 {
		t.Errorf("%d timers for one job's held reports, want 1", n)
	}
	if n := len(writer.taken()); n != 1 {
		t.Fatalf("%d writes during the burst, want only the first", n)
	}

	clk.stepTo(storeAt)
	writes := writer.taken()
	if len(writes) != 2 {
		t.Fatalf("%d writes after the interval, want 2", len(writes))
	}
	expectWrite(t, writes[1], jobA, 10, 9, storeAt)

	// Nothing else is written later: the count of replaced reports starts
	// again.
	clk.step(time.Minute)
	if n := len(writer.taken()); n != 2 {
		t.Fatalf("%d writes a minute later, want still 2", n)
	}
	written := clk.Now()
	expectStored(t, mustReport(t, c, jobA, stepReport(clk, 11)))
	clk.step(time.Second)
	expectHeld(t, mustReport(t, c, jobA, stepReport(clk, 12)), written.Add(testProgressInterval), false)
	clk.stepTo(written.Add(testProgressInterval))
	if writes := writer.taken(); len(writes) != 4 {
		t.Fatalf("%d writes, want 4", len(writes))
	} else {
		expectWrite(t, writes[3], jobA, 12, 0, written.Add(testProgressInterval))
	}
}

func TestCoalescerKeepsJobsApart(t *testing.T) {
	for _, tc := range []struct {
		name  string
		other jobKey
	}{
		{"another job", jobB},
		{"a job of the same name in another namespace", jobC},
		{"the job created again with a new uid", jobAReborn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, clk, writer := newTestCoalescer()
			expectStored(t, mustReport(t, c, jobA, stepReport(clk, 1)))
			clk.step(100 * time.Millisecond)
			expectStored(t, mustReport(t, c, tc.other, stepReport(clk, 2)))
			clk.step(100 * time.Millisecond)
			// Each job now holds its own report.
			expectHeld(t, mustReport(t, c, jobA, stepReport(clk, 3)), progressT0.Add(testProgressInterval), false)
			expectHeld(t, mustReport(t, c, tc.other, stepReport(clk, 4)), progressT0.Add(100*time.Millisecond+testProgressInterval), false)

			clk.stepTo(progressT0.Add(testProgressInterval))
			writes := writer.taken()
			if len(writes) != 3 {
				t.Fatalf("%d writes at the end of a's interval, want 3", len(writes))
			}
			clk.stepTo(progressT0.Add(100*time.Millisecond + testProgressInterval))
			writes = writer.taken()
			if len(writes) != 4 {
				t.Fatalf("%d writes at the end of the other's interval, want 4", len(writes))
			}
			expectWrite(t, writes[0], jobA, 1, 0, progressT0)
			expectWrite(t, writes[1], tc.other, 2, 0, progressT0.Add(100*time.Millisecond))
			expectWrite(t, writes[2], jobA, 3, 0, progressT0.Add(testProgressInterval))
			expectWrite(t, writes[3], tc.other, 4, 0, progressT0.Add(100*time.Millisecond+testProgressInterval))
		})
	}
}

func TestCoalescerFailedWriteLetsTheNextReportTry(t *testing.T) {
	c, clk, writer := newTestCoalescer()
	failure := errors.New("etcd is down")
	writer.fail = []error{failure}

	status, err := c.report(genericapirequest.WithNamespace(context.Background(), jobA.namespace), jobA, stepReport(clk, 1))
	if !errors.Is(err, failure) {
		t.Fatalf("error = %v, want %v", err, failure)
	}
	if status.Stored || status.StoreTime != nil || status.Replaced {
		t.Errorf("status of a failed report = %+v, want empty", status)
	}

	clk.step(100 * time.Millisecond)
	expectStored(t, mustReport(t, c, jobA, stepReport(clk, 2)))
	writes := writer.taken()
	if len(writes) != 2 {
		t.Fatalf("%d writes, want 2", len(writes))
	}
	expectWrite(t, writes[1], jobA, 2, 0, progressT0.Add(100*time.Millisecond))
	if clk.HasWaiters() {
		t.Errorf("reports written at once left a timer")
	}
}

func TestCoalescerFailedFlush(t *testing.T) {
	c, clk, writer := newTestCoalescer()
	mustReport(t, c, jobA, stepReport(clk, 1))
	clk.step(time.Second)
	mustReport(t, c, jobA, stepReport(clk, 2))
	writer.fail = []error{errors.New("the job finished")}
	clk.step(testProgressInterval - time.Second)
	if n := len(writer.taken()); n != 2 {
		t.Fatalf("%d writes, want 2", n)
	}
	// The failed report is not tried again on its own.
	clk.step(time.Minute)
	if n := len(writer.taken()); n != 2 {
		t.Fatalf("%d writes a minute after a failed flush, want still 2", n)
	}
	expectStored(t, mustReport(t, c, jobA, stepReport(clk, 3)))
}

func TestCoalescerSweepsIdleJobs(t *testing.T) {
	c, clk, _ := newTestCoalescer()
	mustReport(t, c, jobA, stepReport(clk, 1))
	clk.step(30 * time.Second)
	mustReport(t, c, jobB, stepReport(clk, 1))
	if n := len(c.jobs); n != 2 {
		t.Fatalf("%d jobs, want 2", n)
	}

	// 61 s after A's write and 31 s after B's: the sweep, at the start of
	// the next report, forgets A only.
	clk.step(31 * time.Second)
	mustReport(t, c, jobC, stepReport(clk, 1))
	if _, ok := c.jobs[jobA]; ok {
		t.Errorf("job a, idle for 61 s, was not swept")
	}
	if _, ok := c.jobs[jobB]; !ok {
		t.Errorf("job b, idle for 31 s, was swept")
	}
	if n := len(c.jobs); n != 2 {
		t.Errorf("%d jobs, want 2 (b and c)", n)
	}

	// The next sweep waits a minute after the last one.
	clk.step(59 * time.Second)
	mustReport(t, c, jobC, stepReport(clk, 2))
	if _, ok := c.jobs[jobB]; !ok {
		t.Errorf("job b was swept 59 s after the last sweep")
	}
	clk.step(time.Second)
	mustReport(t, c, jobC, stepReport(clk, 3))
	if _, ok := c.jobs[jobB]; ok {
		t.Errorf("job b, idle for 90 s, was not swept a minute after the last sweep")
	}
	if n := len(c.jobs); n != 1 {
		t.Errorf("%d jobs, want 1 (c)", n)
	}
}

func TestCoalescerKeepsAJobWithAHeldReport(t *testing.T) {
	c, clk, writer := newTestCoalescer()
	mustReport(t, c, jobA, stepReport(clk, 1))
	clk.step(time.Second)
	expectHeld(t, mustReport(t, c, jobA, stepReport(clk, 2)), progressT0.Add(testProgressInterval), false)

	// The timer is late (its callback has not run yet) when the sweep comes.
	clk.FakeClock.Step(2 * time.Minute)
	mustReport(t, c, jobB, stepReport(clk, 1))
	if _, ok := c.jobs[jobA]; !ok {
		t.Fatalf("job a, with a held report, was swept")
	}
	clk.runDue()
	writes := writer.taken()
	if len(writes) != 3 {
		t.Fatalf("%d writes, want 3", len(writes))
	}
	expectWrite(t, writes[2], jobA, 2, 0, progressT0.Add(time.Second+2*time.Minute))
}

// TestCoalescerWritesTheFinalReportAtOnce: a report at the job's total is
// not held, for the job may finish before the interval ends and then take
// no report; it replaces the one held, whose timer goes.
func TestCoalescerWritesTheFinalReportAtOnce(t *testing.T) {
	c, clk, writer := newTestCoalescer()
	mustReport(t, c, jobA, stepReport(clk, 38))
	clk.step(100 * time.Millisecond)
	expectHeld(t, mustReport(t, c, jobA, stepReport(clk, 39)), progressT0.Add(testProgressInterval), false)
	clk.step(100 * time.Millisecond)
	final := stepReport(clk, 40)
	final.values.TotalSteps = ptr.To[int64](40)
	expectStored(t, mustReport(t, c, jobA, final))
	writes := writer.taken()
	if len(writes) != 2 {
		t.Fatalf("%d writes, want the first and the final one", len(writes))
	}
	expectWrite(t, writes[1], jobA, 40, 1, progressT0.Add(200*time.Millisecond))
	if clk.HasWaiters() {
		t.Errorf("the held report's timer is still set")
	}
	clk.step(time.Minute)
	if n := len(writer.taken()); n != 2 {
		t.Errorf("%d writes a minute later, want still 2: the held report went with the final one", n)
	}
}

func TestPendingReportFinal(t *testing.T) {
	cases := map[string]struct {
		values batch.ProgressValues
		want   bool
	}{
		"a step below the total": {batch.ProgressValues{Step: ptr.To[int64](39), TotalSteps: ptr.To[int64](40)}, false},
		"the last step":          {batch.ProgressValues{Step: ptr.To[int64](40), TotalSteps: ptr.To[int64](40)}, true},
		"the last epoch":         {batch.ProgressValues{Epoch: ptr.To[int32](3), TotalEpochs: ptr.To[int32](3)}, true},
		"100 percent":            {batch.ProgressValues{Percent: ptr.To[int32](100)}, true},
		"a step without a total": {batch.ProgressValues{Step: ptr.To[int64](1000)}, false},
		"metrics alone":          {batch.ProgressValues{}, false},
	}
	for name, tc := range cases {
		r := pendingReport{values: tc.values}
		if got := r.final(); got != tc.want {
			t.Errorf("%s: final = %v, want %v", name, got, tc.want)
		}
	}
}
