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

package dashboard

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestStreamsPerSessionAreBounded(t *testing.T) {
	f := newFixture(t, newPyTorchJob("team", "mnist"))
	f.signIn()
	for range maxStreamsPerSession {
		next(t, f.openStream("/api/jobs/watch"), "synced")
	}
	resp := f.do(http.MethodGet, f.url("/api/jobs/watch"), "", nil)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("stream %d of one session: %s, want 429", maxStreamsPerSession+1, resp.Status)
	}
}

func TestStreamsEndWithTheSession(t *testing.T) {
	f := newFixture(t, newPyTorchJob("team", "mnist"))
	f.signIn()
	events := f.openStream("/api/jobs/watch")
	next(t, events, "synced")
	if resp := f.act(http.MethodPost, "/api/signout", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("sign-out: %s", resp.Status)
	}
	timeout := time.After(10 * time.Second)
	for {
		select {
		case _, open := <-events:
			if !open {
				return
			}
		case <-timeout:
			t.Fatal("the stream outlived its session by 10s")
		}
	}
}

func TestStreamsEndAtTheSessionsExpiry(t *testing.T) {
	s := newTokenSessions(300 * time.Millisecond)
	_, sess := s.start("t", "t")
	ctx, done, ok := s.openStream(t.Context(), sess)
	if !ok {
		t.Fatal("no stream for a new session")
	}
	defer done()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the stream outlived its session's expiry by 10s")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.byID[sess.id].streams; n != 1 {
		t.Errorf("%d streams counted before done, want 1", n)
	}
}

// deadlineRecorder is a ResponseWriter that records the write deadlines set
// on it, as http.ResponseController sets them.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	deadlines []time.Time
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.deadlines = append(d.deadlines, t)
	return nil
}

func TestEventWritesHaveADeadline(t *testing.T) {
	w := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	stream, err := startEventStream(w)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if err := stream.send("upsert", map[string]string{"name": "mnist"}); err != nil {
		t.Fatal(err)
	}
	if err := stream.heartbeat(); err != nil {
		t.Fatal(err)
	}
	if len(w.deadlines) != 4 {
		t.Fatalf("deadlines %v, want one set and lifted per write", w.deadlines)
	}
	for i := 0; i < 4; i += 2 {
		set, lifted := w.deadlines[i], w.deadlines[i+1]
		if set.Before(before.Add(streamWriteTimeout)) || set.After(time.Now().Add(streamWriteTimeout)) || !lifted.IsZero() {
			t.Errorf("write %d: deadline %v then %v, want %v from the write, then none", i/2+1, set, lifted, streamWriteTimeout)
		}
	}
}
