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
	"fmt"
	"net/http"
	"sync"
	"time"
)

// writeFence lets the controller-manager write only while it surely holds
// the lease: its last renewal is younger than the renew deadline, so no
// other instance can have taken the lease over (that takes the whole lease
// duration without renewals). A leader frozen past its lease (a long GC
// pause, a stopped VM) wakes with its workers in the middle of requests;
// the fence refuses their writes before they leave the process, however
// soon they run after the wake-up and before the elector reads the lease.
type writeFence struct {
	renewDeadline time.Duration
	now           func() time.Time

	mu        sync.Mutex
	renewed   time.Time // monotonic
	revoked   bool
	neverHeld bool
}

func newWriteFence(renewDeadline time.Duration) *writeFence {
	return &writeFence{renewDeadline: renewDeadline, now: time.Now, neverHeld: true}
}

// renew records a successful renewal (or acquisition) of the lease, sent
// at the given time: the lease runs from when the request left, not from
// when its answer came.
func (f *writeFence) renew(sent time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.renewed, f.revoked, f.neverHeld = sent, false, false
}

// revoke closes the fence at once: another instance holds the lease.
func (f *writeFence) revoke() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revoked = true
}

// check says why a write may not go out now, or nil.
func (f *writeFence) check() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.neverHeld:
		return fmt.Errorf("not the leader: the lease was never held")
	case f.revoked:
		return fmt.Errorf("not the leader: another instance holds the lease")
	}
	if age := f.now().Sub(f.renewed); age >= f.renewDeadline {
		return fmt.Errorf("not the leader: the lease was last renewed %v ago, beyond the renew deadline of %v",
			age.Round(time.Millisecond), f.renewDeadline)
	}
	return nil
}

// fencedTransport refuses writes (every method but GET, HEAD and OPTIONS)
// while the fence is closed.
type fencedTransport struct {
	fence *writeFence
	next  http.RoundTripper
}

func (t fencedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		if err := t.fence.check(); err != nil {
			return nil, fmt.Errorf("%s %s refused: %w", req.Method, req.URL.Path, err)
		}
	}
	return t.next.RoundTrip(req)
}
