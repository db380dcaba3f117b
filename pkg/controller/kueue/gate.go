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

package kueue

import (
	"context"
	"fmt"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/klog/v2"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"tensorstack.dev/training/pkg/controller/served"
)

// The reasons of an Availability: why jobs may, or may not, be queued with
// Kueue now. They name the state in the controller's metrics and, but for
// Available, in the reason of a waiting job's Queued condition.
const (
	ReasonAvailable = "Available"
	ReasonNotServed = "NotServed"
	// ReasonNotInstalled: the cluster serves no version of Kueue's API, so
	// nothing queues a job: one that names no queue runs.
	ReasonNotInstalled = "NotInstalled"
	ReasonForbidden    = "Forbidden"
	ReasonSyncing      = "Syncing"
	ReasonCheckFailed  = "CheckFailed"
	ReasonNotChecked   = "NotChecked"
	// ReasonDisabled: the controller runs with --queueing=none.
	ReasonDisabled = "Disabled"
)

// Availability says whether the controller may queue jobs with Kueue now.
type Availability struct {
	// Usable: the cluster serves Kueue's Workloads, the controller may use
	// them, and its caches of them are filled.
	Usable bool
	// Reason is one of the Reason constants above.
	Reason string
	// Message says why, in words for a job's condition and events.
	Message string
}

// DefaultRecheckPeriod is how often the controller asks again whether
// Kueue is served and may be used: Kueue installed, removed or upgraded,
// and RBAC granted or revoked, take effect within it, without a restart.
const DefaultRecheckPeriod = 10 * time.Second

// syncingRecheckPeriod is how soon it asks again while its caches fill.
const syncingRecheckPeriod = time.Second

// Gate decides, again and again while the controller runs, whether jobs
// can be queued with Kueue: whether the cluster serves Kueue's v1beta2
// API and whether the controller may use it. It owns the Queue (the
// Workload and LocalQueue caches): built and started when Kueue becomes
// usable, stopped when it stops being usable, since its watches would only
// fail. The controller never queues on a guess: a job that names a queue
// waits while the Gate is not usable (fail closed); --queueing=none alone
// runs such jobs unqueued (Disabled).
type Gate struct {
	probe    func(context.Context) Availability
	newQueue func() *Queue
	period   time.Duration

	mu        sync.RWMutex
	current   Availability
	queue     *Queue
	stopQueue context.CancelFunc
	onQueue   []func(*Queue) error
	onChange  []func(Availability)
	decided   chan struct{}
	closeOnce sync.Once
}

// GateConfig builds a Gate that rechecks the cluster (NewGate).
type GateConfig struct {
	// Probe asks the cluster whether Kueue is served and may be used
	// (Probe); its answer is Usable once the caches are filled too.
	Probe func(context.Context) Availability
	// NewQueue builds the Queue on Kueue's clientset (New).
	NewQueue func() *Queue
	// RecheckPeriod defaults to DefaultRecheckPeriod.
	RecheckPeriod time.Duration
}

// NewGate returns a Gate that decides nothing until Run: until then no job
// is queued, and none that names a queue runs.
func NewGate(cfg GateConfig) *Gate {
	if cfg.RecheckPeriod <= 0 {
		cfg.RecheckPeriod = DefaultRecheckPeriod
	}
	return &Gate{
		probe:    cfg.Probe,
		newQueue: cfg.NewQueue,
		period:   cfg.RecheckPeriod,
		current:  Availability{Reason: ReasonNotChecked, Message: "the controller has not yet checked whether Kueue is served"},
		decided:  make(chan struct{}),
	}
}

// DisabledGate is the Gate of --queueing=none: jobs that name a queue run
// unqueued, and their Queued condition says why.
func DisabledGate(why string) *Gate {
	g := &Gate{current: Availability{Reason: ReasonDisabled, Message: why}, decided: make(chan struct{})}
	close(g.decided)
	return g
}

// UsableGate is a Gate that always queues with q, whose informers the
// caller runs: for tests, and for callers that decided by themselves.
func UsableGate(q *Queue) *Gate {
	g := &Gate{current: available(), queue: q, decided: make(chan struct{})}
	close(g.decided)
	return g
}

func available() Availability {
	return Availability{Usable: true, Reason: ReasonAvailable, Message: "Kueue is served and the controller may use it"}
}

// Current is the Queue, nil unless usable, and the availability now.
func (g *Gate) Current() (*Queue, Availability) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if !g.current.Usable {
		return nil, g.current
	}
	return g.queue, g.current
}

// Disabled says whether the controller runs with --queueing=none.
func (g *Gate) Disabled() bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.current.Reason == ReasonDisabled
}

// OnQueue calls f with every Queue the Gate builds, the current one at
// once: the controller watches each Queue's Workloads through it.
func (g *Gate) OnQueue(f func(*Queue) error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.onQueue = append(g.onQueue, f)
	if g.queue != nil {
		return f(g.queue)
	}
	return nil
}

// OnChange calls f after every change of the availability: jobs that
// waited for Kueue, or ran without it, are looked at again.
func (g *Gate) OnChange(f func(Availability)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.onChange = append(g.onChange, f)
}

// Decided is closed once the Gate has made its first decision (with the
// caches filled when Kueue is usable), so that the controller does not
// hold every queued job back at start-up for the moment it takes.
func (g *Gate) Decided() <-chan struct{} { return g.decided }

// Run rechecks the cluster every period until ctx ends, then stops the
// Queue's informers. A DisabledGate or UsableGate has nothing to recheck.
func (g *Gate) Run(ctx context.Context) {
	if g.probe == nil {
		return
	}
	defer g.dropQueue()
	for {
		g.Check(ctx)
		wait := g.period
		if _, a := g.Current(); a.Reason == ReasonSyncing {
			wait = syncingRecheckPeriod
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// Check asks the cluster once now and brings the Queue in line with the
// answer; Run calls it every period.
func (g *Gate) Check(ctx context.Context) {
	logger := klog.FromContext(ctx)
	next := g.probe(ctx)
	switch {
	case next.Usable:
		q, err := g.ensureQueue(ctx)
		switch {
		case err != nil:
			next = Availability{Reason: ReasonCheckFailed, Message: "watching Kueue's Workloads: " + err.Error()}
		case !q.HasSynced():
			next = Availability{Reason: ReasonSyncing,
				Message: "Kueue is served and may be used; the controller is filling its cache of Workloads and LocalQueues"}
		}
	case next.Reason != ReasonCheckFailed:
		// Not served, or forbidden: the watches could only fail. A failed
		// check (discovery unreachable for a moment) keeps them.
		g.dropQueue()
	}
	g.set(logger, next)
}

// ensureQueue builds and starts the Queue, unless it runs already.
func (g *Gate) ensureQueue(ctx context.Context) (*Queue, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.queue != nil {
		return g.queue, nil
	}
	q := g.newQueue()
	for _, f := range g.onQueue {
		if err := f(q); err != nil {
			return nil, err
		}
	}
	queueCtx, cancel := context.WithCancel(ctx)
	q.Start(queueCtx.Done())
	g.queue, g.stopQueue = q, cancel
	return q, nil
}

// dropQueue stops the Queue's informers and forgets it.
func (g *Gate) dropQueue() {
	g.mu.Lock()
	q, stop := g.queue, g.stopQueue
	g.queue, g.stopQueue = nil, nil
	g.mu.Unlock()
	if stop != nil {
		stop()
		q.Shutdown()
	}
}

// set records the availability and tells the listeners when it changed.
func (g *Gate) set(logger klog.Logger, next Availability) {
	g.mu.Lock()
	prev := g.current
	g.current = next
	listeners := g.onChange
	g.mu.Unlock()
	if next.Reason != ReasonSyncing && next.Reason != ReasonNotChecked {
		g.closeOnce.Do(func() { close(g.decided) })
	}
	if prev.Usable == next.Usable && prev.Reason == next.Reason {
		return
	}
	if next.Usable {
		logger.Info("Queueing with Kueue", "was", prev.Reason)
	} else {
		logger.Info("Kueue cannot be used: jobs that name a queue wait", "reason", next.Reason, "why", next.Message)
	}
	for _, f := range listeners {
		f(next)
	}
}

// Probe asks the cluster whether it serves Kueue's Workloads and whether
// the controller may do there what queueing jobs takes (the RBAC component
// artifacts/deploy/components/kueue grants it).
func Probe(ctx context.Context, d served.Discovery,
	reviews authorizationv1client.SelfSubjectAccessReviewInterface) Availability {
	ok, err := served.Is(ctx, d, workloadAPI)
	if err != nil {
		return Availability{Reason: ReasonCheckFailed, Message: err.Error()}
	}
	if !ok {
		installed, err := served.GroupIs(ctx, d, kueuev1beta2.SchemeGroupVersion.Group)
		switch {
		case err != nil:
			return Availability{Reason: ReasonCheckFailed, Message: err.Error()}
		case !installed:
			return Availability{Reason: ReasonNotInstalled,
				Message: fmt.Sprintf("the cluster serves no version of Kueue's API (%s)", kueuev1beta2.SchemeGroupVersion.Group)}
		}
		return Availability{Reason: ReasonNotServed,
			Message: fmt.Sprintf("the cluster does not serve %s %s (Kueue v0.16 or newer)", workloadAPI.GroupVersion, workloadAPI.Resource)}
	}
	group := kueuev1beta2.SchemeGroupVersion.Group
	for _, access := range requiredAccess {
		review, err := reviews.Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: access.verb, Group: group,
				Resource: access.resource, Subresource: access.subresource},
		}}, metav1.CreateOptions{})
		if err != nil {
			return Availability{Reason: ReasonCheckFailed, Message: "checking access to Kueue's API: " + err.Error()}
		}
		if !review.Status.Allowed {
			resource := access.resource
			if access.subresource != "" {
				resource += "/" + access.subresource
			}
			return Availability{Reason: ReasonForbidden,
				Message: fmt.Sprintf("Kueue is served, but this controller may not %s %s.%s in every namespace", access.verb, resource, group)}
		}
	}
	return available()
}

// workloadAPI is the API the controller needs Kueue to serve.
var workloadAPI = served.Resource{GroupVersion: kueuev1beta2.SchemeGroupVersion.String(), Resource: "workloads"}

// requiredAccess is what queueing a job takes of Kueue's API: the
// Workloads the controller keeps, and the LocalQueues it reads to apply a
// namespace's default queue.
var requiredAccess = []struct{ verb, resource, subresource string }{
	{"list", "workloads", ""}, {"watch", "workloads", ""}, {"create", "workloads", ""}, {"patch", "workloads", ""},
	{"update", "workloads", "status"}, {"list", "localqueues", ""}, {"watch", "localqueues", ""},
}
