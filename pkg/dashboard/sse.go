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
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", event, payload); err != nil {
		return err
	}
	return s.rc.Flush()
}

// heartbeat writes a comment, which EventSource ignores.
func (s *eventStream) heartbeat() error {
	if _, err := fmt.Fprint(s.w, ": heartbeat\n\n"); err != nil {
		return err
	}
	return s.rc.Flush()
}
