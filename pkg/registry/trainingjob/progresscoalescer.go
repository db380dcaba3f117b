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
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"tensorstack.dev/training/pkg/apis/batch"
)

// flushTimeout bounds the write of a held-back report, which has no
// request to take a deadline from.
const flushTimeout = 30 * time.Second

// progressCoalescer lets each job's reports reach storage at most once per
// interval. A report that comes when the job's interval has passed is
// written at once, within its request; one that comes sooner waits for the
// end of the interval, and a later report replaces it. A job reporting
// every 100 ms thus costs one write per interval, and the write holds its
// latest report. A final report (the step, epoch or percent at its total)
// is written at once, with any held one it replaces: the job may finish
// within the interval, and a finished job takes no more reports.
//
// The held-back reports live in this server's memory: each replica of the
// server coalesces the reports it receives, and a report held back when the
// server stops is lost, as a later report would have replaced it anyway.
type progressCoalescer struct {
	interval time.Duration
	clock    clock.WithDelayedExecution
	write    func(ctx context.Context, key jobKey, report pendingReport, replaced int64) error

	mu        sync.Mutex
	jobs      map[jobKey]*jobReports
	lastSweep time.Time
}

// jobReports is one job's state in the coalescer.
type jobReports struct {
	// lastWrite is when the job's last write began.
	lastWrite time.Time
	// pending is the report waiting for the end of the interval, or nil.
	pending *pendingReport
	// replaced counts the waiting reports that a later one replaced since
	// the last write.
	replaced int64
	timer    clock.Timer
}

func newProgressCoalescer(interval time.Duration, clk clock.WithDelayedExecution, write func(context.Context, jobKey, pendingReport, int64) error) *progressCoalescer {
	return &progressCoalescer{interval: interval, clock: clk, write: write, jobs: map[jobKey]*jobReports{}}
}

// report stores a report now or holds it back, and says which.
func (c *progressCoalescer) report(ctx context.Context, key jobKey, report pendingReport) (batch.ProgressReportStatus, error) {
	c.mu.Lock()
	now := c.clock.Now()
	c.sweepLocked(now)
	j := c.jobs[key]
	if j == nil {
		j = &jobReports{}
		c.jobs[key] = j
	}
	if report.final() || (j.pending == nil && now.Sub(j.lastWrite) >= c.interval) {
		replaced := int64(0)
		if j.pending != nil {
			replaced = j.replaced + 1
			j.pending, j.replaced = nil, 0
		}
		if j.timer != nil {
			j.timer.Stop()
			j.timer = nil
		}
		j.lastWrite = now
		c.mu.Unlock()
		if err := c.write(ctx, key, report, replaced); err != nil {
			// Nothing was stored: the next report may try at once.
			c.mu.Lock()
			j.lastWrite = time.Time{}
			c.mu.Unlock()
			return batch.ProgressReportStatus{}, err
		}
		return batch.ProgressReportStatus{Stored: true}, nil
	}
	defer c.mu.Unlock()
	replaced := j.pending != nil
	if replaced {
		j.replaced++
	}
	j.pending = &report
	storeAt := j.lastWrite.Add(c.interval)
	if j.timer == nil {
		j.timer = c.clock.AfterFunc(storeAt.Sub(now), func() { c.flush(key) })
	}
	return batch.ProgressReportStatus{StoreTime: &metav1.Time{Time: storeAt}, Replaced: replaced}, nil
}

// flush writes a job's held-back report at the end of its interval.
func (c *progressCoalescer) flush(key jobKey) {
	c.mu.Lock()
	j := c.jobs[key]
	if j == nil || j.pending == nil {
		c.mu.Unlock()
		return
	}
	report, replaced := *j.pending, j.replaced
	j.pending, j.replaced, j.timer = nil, 0, nil
	j.lastWrite = c.clock.Now()
	c.mu.Unlock()

	ctx, cancel := context.WithTimeout(genericapirequest.WithNamespace(context.Background(), key.namespace), flushTimeout)
	defer cancel()
	if err := c.write(ctx, key, report, replaced); err != nil {
		// The job finished or went away since the report came, or etcd
		// failed; the next report tries again.
		klog.V(2).InfoS("A held-back progress report was not stored", "job", klog.KRef(key.namespace, key.name), "err", err)
	}
}

// sweepLocked forgets the jobs that have not written for a while, so the
// coalescer holds only the jobs that report.
func (c *progressCoalescer) sweepLocked(now time.Time) {
	idle := max(c.interval, time.Minute)
	if now.Sub(c.lastSweep) < idle {
		return
	}
	c.lastSweep = now
	for key, j := range c.jobs {
		if j.pending == nil && now.Sub(j.lastWrite) >= idle {
			delete(c.jobs, key)
		}
	}
}
