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
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
)

// ExpectationsTimeout is how long recorded expectations are trusted. An
// informer event that never arrives (a missed watch event, a pod deleted
// before its creation was seen) must not stall a job for ever: after this
// long the job is reconciled from whatever the cache holds.
const ExpectationsTimeout = 5 * time.Minute

// Expectations remember, per job, the pods the controller has asked the
// apiserver to create or delete and whose effect the informer cache has not
// shown yet. While any are outstanding the cache is known to be behind, and
// the controller must not act on it: it would create a pod a second time or
// delete one twice.
//
// Unlike Kubernetes' counting ControllerExpectations, these track pod names.
// Names of replica pods are deterministic, so observing the same event twice
// (an update that sets deletionTimestamp, then the delete itself) lowers an
// expectation once, never below zero.
type Expectations struct {
	clock clock.PassiveClock
	ttl   time.Duration

	mu    sync.Mutex
	items map[string]*expectation
	// owners is the UID of the job each key's expectations are for (ForJob).
	owners map[string]types.UID
}

type expectation struct {
	creations sets.Set[string]
	deletions sets.Set[string]
	// since is when the oldest outstanding expectation was recorded.
	since time.Time
}

func (e *expectation) fulfilled() bool {
	return e.creations.Len() == 0 && e.deletions.Len() == 0
}

// NewExpectations returns empty expectations that expire after ttl as told
// by clk.
func NewExpectations(clk clock.PassiveClock, ttl time.Duration) *Expectations {
	return &Expectations{clock: clk, ttl: ttl, items: map[string]*expectation{}, owners: map[string]types.UID{}}
}

// ForJob ties the key's expectations to the job with uid, and forgets those
// recorded for an earlier job of the same name, deleted and created again.
// That job's last deletions (a finished job's clean-up, which its informer
// no longer follows) may never be observed under this key: the pod handlers
// find the new job there, whose pods they are not. Kept, they would hold the
// new job back for the whole ttl.
func (x *Expectations) ForJob(key string, uid types.UID) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if owner, ok := x.owners[key]; !ok || owner != uid {
		delete(x.items, key)
		x.owners[key] = uid
	}
}

// ExpectCreations records that pods with these names are about to be created
// for the job.
func (x *Expectations) ExpectCreations(key string, names ...string) {
	x.expect(key, names, func(e *expectation) sets.Set[string] { return e.creations })
}

// ExpectDeletions records that pods with these names are about to be deleted
// for the job.
func (x *Expectations) ExpectDeletions(key string, names ...string) {
	x.expect(key, names, func(e *expectation) sets.Set[string] { return e.deletions })
}

func (x *Expectations) expect(key string, names []string, set func(*expectation) sets.Set[string]) {
	if len(names) == 0 {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.items[key]
	if e == nil {
		e = &expectation{creations: sets.New[string](), deletions: sets.New[string]()}
		x.items[key] = e
	}
	if e.fulfilled() {
		e.since = x.clock.Now()
	}
	set(e).Insert(names...)
}

// CreationObserved lowers the expectation for a pod the cache now shows, or
// whose creation failed and will not be seen.
func (x *Expectations) CreationObserved(key, name string) {
	x.observe(key, name, func(e *expectation) sets.Set[string] { return e.creations })
}

// DeletionObserved lowers the expectation for a pod the cache shows as
// deleted (gone, or carrying a deletionTimestamp), or whose deletion failed.
func (x *Expectations) DeletionObserved(key, name string) {
	x.observe(key, name, func(e *expectation) sets.Set[string] { return e.deletions })
}

func (x *Expectations) observe(key, name string, set func(*expectation) sets.Set[string]) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e := x.items[key]; e != nil {
		set(e).Delete(name)
	}
}

// SatisfiedExpectations says whether the cache has caught up with everything
// the controller did for the job, or the expectations are too old to trust.
func (x *Expectations) SatisfiedExpectations(key string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.items[key]
	if e == nil || e.fulfilled() {
		return true
	}
	if x.clock.Since(e.since) >= x.ttl {
		// Give up on the missing events; forget them so that a later
		// expectation starts its own clock.
		delete(x.items, key)
		return true
	}
	return false
}

// Pending returns how many creations and deletions are outstanding for the
// job.
func (x *Expectations) Pending(key string) (creations, deletions int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e := x.items[key]; e != nil {
		return e.creations.Len(), e.deletions.Len()
	}
	return 0, 0
}

// DeleteExpectations forgets everything recorded for the job, once the job
// itself is gone.
func (x *Expectations) DeleteExpectations(key string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.items, key)
	delete(x.owners, key)
}
