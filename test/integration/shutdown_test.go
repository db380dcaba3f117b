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

package integration

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	genericapiserver "k8s.io/apiserver/pkg/server"
	restclient "k8s.io/client-go/rest"

	"tensorstack.dev/training/pkg/apiserver"
	"tensorstack.dev/training/test/integration/framework"
)

// TestShutdownAsksClientsToRetry: a stopping server finishes the requests it
// has, and answers new ones 429 with Retry-After, which client-go (and
// kube-apiserver's clients behind it) retry on another replica, instead of
// closing connections that requests were already sent over. A rolling
// update of the installation relies on it (make test-install).
func TestShutdownAsksClientsToRetry(t *testing.T) {
	const slowPath = "/test/slow"
	started, release := make(chan struct{}), make(chan struct{})
	s := framework.StartTestServerWith(t, "", func(c *apiserver.Config) {
		build := c.GenericConfig.BuildHandlerChainFunc
		c.GenericConfig.BuildHandlerChainFunc = func(api http.Handler, gc *genericapiserver.Config) http.Handler {
			return build(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != slowPath {
					api.ServeHTTP(w, r)
					return
				}
				close(started)
				<-release
				_, _ = io.WriteString(w, "finished")
			}), gc)
		}
	})
	client, err := restclient.HTTPClientFor(s.Config)
	if err != nil {
		t.Fatal(err)
	}

	slow := make(chan string, 1)
	go func() {
		resp, err := client.Get(s.Config.Host + slowPath)
		if err != nil {
			slow <- err.Error()
			return
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		slow <- resp.Status + " " + string(body)
	}()
	<-started
	stopped := make(chan struct{})
	go func() { s.Stop(); close(stopped) }()

	// The server stops taking requests at once; it takes a moment to say so.
	create := strings.NewReader(`{"apiVersion":"batch.tensorstack.dev/v1beta1","kind":"PyTorchTrainingJob","metadata":{"name":"late"}}`)
	var refused *http.Response
	deadline := time.Now().Add(30 * time.Second)
	for refused == nil && time.Now().Before(deadline) {
		_, _ = create.Seek(0, io.SeekStart)
		resp, err := client.Post(s.Config.Host+"/apis/batch.tensorstack.dev/v1beta1/namespaces/default/pytorchtrainingjobs",
			"application/json", create)
		if err != nil {
			t.Fatalf("a request to the stopping server failed instead of being answered: %v", err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			refused = resp
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if refused == nil {
		t.Fatal("the stopping server never answered 429")
	}
	if refused.Header.Get("Retry-After") == "" {
		t.Errorf("429 without Retry-After: clients would not retry it")
	}

	close(release)
	if got := <-slow; got != "200 OK finished" {
		t.Errorf("the request in flight when the server began to stop got %q, want it finished", got)
	}
	select {
	case <-stopped:
	case <-time.After(time.Minute):
		t.Fatal("the server did not stop after its last request finished")
	}
}
