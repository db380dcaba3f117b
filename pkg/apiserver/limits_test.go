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
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	genericapiserver "k8s.io/apiserver/pkg/server"
)

// testBodyLimit is small, so that the tests send little.
const testBodyLimit = 1024

// limitedServer serves withRequestBodyLimit around a handler that reads the
// body as the API handlers do, up to one byte past the limit.
func limitedServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		data, err := io.ReadAll(io.LimitReader(r.Body, testBodyLimit+1))
		switch {
		case err != nil:
			http.Error(w, err.Error(), http.StatusBadRequest)
		case len(data) > testBodyLimit:
			writeTooLarge(w, testBodyLimit)
		default:
			_, _ = fmt.Fprintf(w, "read %d bytes", len(data))
		}
	})
	server := httptest.NewServer(withRequestBodyLimit(handler, testBodyLimit))
	t.Cleanup(server.Close)
	return server, &calls
}

// sendWholeBody writes the request, body and all, before it reads the
// answer, as curl does.
func sendWholeBody(t *testing.T, server *httptest.Server, head string, body []byte) (*http.Response, error) {
	t.Helper()
	conn, err := net.Dial("tcp", server.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, head); err != nil {
		return nil, err
	}
	if _, err := conn.Write(body); err != nil {
		return nil, fmt.Errorf("writing the body: %w", err)
	}
	return http.ReadResponse(bufio.NewReader(conn), nil)
}

func TestDeclaredLengthOverLimitRefusedUnread(t *testing.T) {
	server, calls := limitedServer(t)
	body := bytes.Repeat([]byte("x"), 4*1024*1024)
	head := fmt.Sprintf("POST / HTTP/1.1\r\nHost: test\r\nContent-Length: %d\r\n\r\n", len(body))
	resp, err := sendWholeBody(t, server, head, body)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(data), `"message":"Request entity too large: limit is 1024"`) {
		t.Errorf("answer %d %s, want 413 naming the limit", resp.StatusCode, data)
	}
	if calls.Load() != 0 {
		t.Errorf("the handler was called for a body declared over the limit")
	}
}

func TestChunkedBodyOverLimitDrained(t *testing.T) {
	server, calls := limitedServer(t)
	var chunked bytes.Buffer
	for range 1024 {
		fmt.Fprintf(&chunked, "%x\r\n%s\r\n", 4096, bytes.Repeat([]byte("x"), 4096))
	}
	chunked.WriteString("0\r\n\r\n")
	resp, err := sendWholeBody(t, server, "POST / HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n", chunked.Bytes())
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || calls.Load() != 1 {
		t.Errorf("answer %d after %d handler calls, want the handler's 413", resp.StatusCode, calls.Load())
	}
}

func TestBodyWithinLimitPasses(t *testing.T) {
	server, _ := limitedServer(t)
	for _, size := range []int{0, testBodyLimit} {
		resp, err := http.Post(server.URL, "application/json", io.MultiReader(bytes.NewReader(bytes.Repeat([]byte("x"), size))))
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if want := fmt.Sprintf("read %d bytes", size); resp.StatusCode != http.StatusOK || string(data) != want {
			t.Errorf("body of %d bytes: %d %s, want 200 %s", size, resp.StatusCode, data, want)
		}
	}
}

func TestApplyRequestLimits(t *testing.T) {
	config := genericapiserver.NewConfig(Codecs)
	// The default chain needs a complete configuration; the limit wraps
	// whichever chain is set.
	config.BuildHandlerChainFunc = func(handler http.Handler, _ *genericapiserver.Config) http.Handler { return handler }
	applyRequestLimits(config)
	if config.MaxRequestBodyBytes != MaxRequestBodyBytes {
		t.Errorf("MaxRequestBodyBytes = %d, want %d", config.MaxRequestBodyBytes, MaxRequestBodyBytes)
	}
	handler := config.BuildHandlerChainFunc(http.NotFoundHandler(), config)
	request := httptest.NewRequest(http.MethodPost, "/apis", strings.NewReader(""))
	request.ContentLength = MaxRequestBodyBytes + 1
	recorder := httptest.NewRecorder()
	handler.ServeHTTP(recorder, request)
	if recorder.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("a body declared over %d bytes: %d, want 413", MaxRequestBodyBytes, recorder.Code)
	}
}
