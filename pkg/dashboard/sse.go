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
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// heartbeatInterval is how often a quiet stream sends a comment, so that a
// connection the browser lost is noticed and the server's handler ends.
const heartbeatInterval = 25 * time.Second

// streamWriteTimeout bounds each write of an event: a client that stops
// reading ends its stream then, instead of holding the handler, its watches
// and what they buffer for as long as it keeps the connection open.
const streamWriteTimeout = 10 * time.Second

// eventStream writes server-sent events: the browser's EventSource reads
// them and reconnects by itself when the stream breaks.
type eventStream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// startEventStream sends the stream's headers.
func startEventStream(w http.ResponseWriter) (*eventStream, error) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	s := &eventStream{w: w, rc: http.NewResponseController(w)}
	return s, s.rc.Flush()
}

// send writes one event of the given name with data as JSON, and flushes it
// so that it reaches the page at once.
func (s *eventStream) send(event string, data any) error {
	payload, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encoding a %s event: %w", event, err)
	}
	// JSON holds no raw newline, so one data line carries the whole event.
	return s.write(func() error {
		_, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", event, payload)
		return err
	})
}

// sendRaw writes one event whose data is JSON already encoded.
func (s *eventStream) sendRaw(event string, payload []byte) error {
	return s.write(func() error {
		_, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", event, payload)
		return err
	})
}

// heartbeat writes a comment, which EventSource ignores.
func (s *eventStream) heartbeat() error {
	return s.write(func() error {
		_, err := fmt.Fprint(s.w, ": heartbeat\n\n")
		return err
	})
}

// write writes and flushes within streamWriteTimeout. The deadline is lifted
// again after a write that made it, so that it never outlives the stream.
func (s *eventStream) write(fn func() error) error {
	// A connection that cannot take deadlines (none of net/http's) writes
	// without one.
	_ = s.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	if err := fn(); err != nil {
		return err
	}
	if err := s.rc.Flush(); err != nil {
		return err
	}
	_ = s.rc.SetWriteDeadline(time.Time{})
	return nil
}
