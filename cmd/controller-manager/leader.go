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
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// errLostLeadership ends a controller-manager that stopped leading while it
// was meant to run: another instance may be acting already.
var errLostLeadership = errors.New("lost leadership")

// workersStopTimeout bounds the wait for the workers once they were told
// to stop.
const workersStopTimeout = 30 * time.Second

// leaderElection runs the controller only while this instance holds the
// lease.
type leaderElection struct {
	lock                                      resourcelock.Interface
	name                                      string
	leaseDuration, renewDeadline, retryPeriod time.Duration
	watchdog                                  *leaderelection.HealthzAdaptor
	// leading reports to the health checks whether this instance leads.
	leading *atomic.Bool
	// fence, when set, learns every renewal and loss of the lease.
	fence *writeFence
}

// run campaigns for the lease and runs work while it is held, until ctx
// ends. The workers stop the moment this instance reads another holder in
// the lease, not only once its own renewal deadline has passed: a leader
// frozen past its lease (a long GC pause, a stopped VM) finds the new holder
// at its first renewal attempt after it wakes (its update conflicts, and it
// reads the lease), and must not act beside it for the rest of its
// deadline. client-go reports the new leader (OnNewLeader) only after that
// deadline.
func (le leaderElection) run(ctx context.Context, logger klog.Logger, work func(context.Context)) error {
	identity := le.lock.Identity()
	done := make(chan struct{})
	var started, lost atomic.Bool
	var stopMu sync.Mutex
	var stopWork context.CancelFunc
	stop := func() {
		stopMu.Lock()
		defer stopMu.Unlock()
		if stopWork != nil {
			stopWork()
		}
	}
	fence := le.fence
	if fence == nil {
		fence = newWriteFence(le.renewDeadline)
	}
	lock := observingLock{Interface: le.lock, renewed: fence.renew, heldByOther: new(atomic.Bool), otherHolder: func(holder string) {
		fence.revoke()
		if le.leading.Load() {
			logger.Info("Another instance holds the lease: stopping the workers now", "leader", holder)
			le.leading.Store(false)
			lost.Store(true)
			stop()
		}
	}}
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   le.leaseDuration,
		RenewDeadline:   le.renewDeadline,
		RetryPeriod:     le.retryPeriod,
		ReleaseOnCancel: true,
		Name:            le.name,
		WatchDog:        le.watchdog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				defer close(done)
				workCtx, cancel := context.WithCancel(ctx)
				defer cancel()
				stopMu.Lock()
				stopWork = cancel
				stopMu.Unlock()
				started.Store(true)
				le.leading.Store(true)
				logger.Info("Became the leader", "identity", identity)
				work(workCtx)
			},
			OnStoppedLeading: func() {
				fence.revoke()
				le.leading.Store(false)
				stop()
				if ctx.Err() == nil {
					lost.Store(true)
				}
			},
			OnNewLeader: func(id string) {
				if id != identity {
					logger.Info("Another instance leads", "leader", id)
				}
			},
		},
	})
	if err != nil {
		return err
	}
	elector.Run(ctx)
	if started.Load() {
		// Let the workers finish what they are doing.
		select {
		case <-done:
		case <-time.After(workersStopTimeout):
			logger.Info("Workers did not stop in time", "timeout", workersStopTimeout)
		}
	}
	if lost.Load() {
		return errLostLeadership
	}
	return nil
}

// observingLock tells otherHolder whenever the lease, as read, is held by
// another instance, and renewed whenever this instance wrote it.
type observingLock struct {
	resourcelock.Interface
	otherHolder func(holder string)
	renewed     func(sent time.Time)
	// heldByOther: the last Get found the lease held by another instance.
	heldByOther *atomic.Bool
}

func (l observingLock) Create(ctx context.Context, record resourcelock.LeaderElectionRecord) error {
	sent := time.Now()
	err := l.Interface.Create(ctx, record)
	if err == nil && record.HolderIdentity == l.Identity() {
		l.renewed(sent)
	}
	return err
}

func (l observingLock) Update(ctx context.Context, record resourcelock.LeaderElectionRecord) error {
	if record.HolderIdentity == "" && l.heldByOther != nil && l.heldByOther.Load() {
		// A release (ReleaseOnCancel) by an instance that lost the lease
		// while it was frozen: client-go's elector reads the lease afresh,
		// but decides from what it saw before, and would empty the new
		// leader's lease. There is nothing of ours to release.
		return nil
	}
	sent := time.Now()
	err := l.Interface.Update(ctx, record)
	if err == nil && record.HolderIdentity == l.Identity() {
		l.renewed(sent)
	}
	return err
}

func (l observingLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	record, raw, err := l.Interface.Get(ctx)
	other := err == nil && record != nil && record.HolderIdentity != "" && record.HolderIdentity != l.Identity()
	if l.heldByOther != nil && err == nil {
		l.heldByOther.Store(other)
	}
	if other {
		l.otherHolder(record.HolderIdentity)
	}
	return record, raw, err
}
