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

package apiserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	genericapiserver "k8s.io/apiserver/pkg/server"
)

const (
	// MaxRequestBodyBytes is the largest request body the server accepts:
	// 3 MiB, kube-apiserver's default. It is twice the largest job the
	// storage keeps (trainingjob.MaxStoredObjectBytes), so every job that
	// can be stored can be sent. A larger body is refused with 413.
	MaxRequestBodyBytes = 3 * 1024 * 1024
	// maxDrainedBodyBytes is how much of a refused HTTP/1.1 body the server
	// still reads and discards. Such a client sends its whole body before it
	// reads the answer; had the server closed the connection with the body
	// unread, the client would meet a reset connection instead of the 413.
	// Past this the server closes the connection, as Go's server does.
	maxDrainedBodyBytes = 16 * 1024 * 1024
	// drainTimeout bounds the time a slow client can hold the connection
	// while the rest of its refused body is discarded.
	drainTimeout = 10 * time.Second
)

// applyRequestLimits sets the request body limit and puts its filter in
// front of the handler chain, and the check of JSON patches behind the
// chain's authentication and authorization, in front of the API handlers.
func applyRequestLimits(config *genericapiserver.Config) {
	config.MaxRequestBodyBytes = MaxRequestBodyBytes
	buildChain := config.BuildHandlerChainFunc
	config.BuildHandlerChainFunc = func(handler http.Handler, c *genericapiserver.Config) http.Handler {
		return withRequestBodyLimit(buildChain(withJSONPatchCheck(handler, c.MaxRequestBodyBytes), c), c.MaxRequestBodyBytes)
	}
}

// withRequestBodyLimit refuses a body whose declared length is over limit
// before reading any of it, so a client waiting for "100 Continue" sends
// none. The API handlers refuse a body of unknown length once they have
// read past the limit; after they have, and for a declared length over it,
// an HTTP/1.1 body is drained (within bounds) so the 413 reaches a client
// that is still sending.
func withRequestBodyLimit(handler http.Handler, limit int64) http.Handler {
	if limit <= 0 {
		return handler
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > limit {
			writeTooLarge(w, limit)
			// A client that asked whether to send the body got its answer
			// and sends nothing; reading would wait for it in vain.
			if r.Header.Get("Expect") == "" {
				drainRefusedBody(w, r, r.Body)
			}
			return
		}
		if r.ProtoMajor != 1 || r.Body == nil || r.Body == http.NoBody {
			// HTTP/2 ends just the request's stream, and the answer arrives.
			handler.ServeHTTP(w, r)
			return
		}
		body := &countingBody{body: r.Body}
		r.Body = body
		handler.ServeHTTP(w, r)
		if body.read.Load() > limit {
			drainRefusedBody(w, r, body.body)
		}
	})
}

// writeTooLarge answers as the API handlers do for a body over the limit.
func writeTooLarge(w http.ResponseWriter, limit int64) {
	writeStatus(w, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", limit)))
}

// writeStatus answers with the error's Status, as JSON, which every client
// of the API accepts.
func writeStatus(w http.ResponseWriter, statusError *apierrors.StatusError) {
	status := statusError.Status()
	status.Kind, status.APIVersion = "Status", "v1"
	data, err := json.Marshal(status)
	if err != nil {
		http.Error(w, status.Message, int(status.Code))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(status.Code))
	_, _ = w.Write(data)
}

// drainRefusedBody sends the answer written so far, then discards the rest
// of an HTTP/1.x body, up to maxDrainedBodyBytes and drainTimeout.
func drainRefusedBody(w http.ResponseWriter, r *http.Request, body io.Reader) {
	if r.ProtoMajor != 1 || body == nil {
		return
	}
	controller := http.NewResponseController(w)
	if err := controller.Flush(); err != nil {
		return // no way to send the answer first: let the server close
	}
	_ = controller.SetReadDeadline(time.Now().Add(drainTimeout))
	_, _ = io.CopyN(io.Discard, body, maxDrainedBodyBytes)
}

// countingBody counts what the handlers read of a request body; atomically,
// as a handler that timed out may still be reading. Its Close leaves the
// body open, so that what the handlers left unread can still be drained; the
// server closes the body when the request ends.
type countingBody struct {
	body io.ReadCloser
	read atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	b.read.Add(int64(n))
	return n, err
}

func (b *countingBody) Close() error { return nil }
