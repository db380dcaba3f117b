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
	"net/http"
	"net/http/httptest"
	"testing"

	genericoptions "k8s.io/apiserver/pkg/server/options"
)

func TestAuthnGate(t *testing.T) {
	s := &authnSources{synced: make(chan struct{})}
	gated := s.gate(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	serve := func(path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		gated.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w
	}
	for _, path := range []string{"/apis/batch.tensorstack.dev/v1beta1", "/api", "/openapi/v2", "/healthzz", "/metrics"} {
		if w := serve(path); w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" {
			t.Errorf("%s before the sources load: %d, Retry-After %q; want 503 with Retry-After 1", path, w.Code, w.Header().Get("Retry-After"))
		}
	}
	for _, path := range []string{"/healthz", "/livez", "/readyz", "/readyz/etcd", "/livez/ping"} {
		if w := serve(path); w.Code != http.StatusTeapot {
			t.Errorf("%s before the sources load: %d, want it served", path, w.Code)
		}
	}
	close(s.synced)
	if w := serve("/apis/batch.tensorstack.dev/v1beta1"); w.Code != http.StatusTeapot {
		t.Errorf("API request after the sources load: %d, want it served", w.Code)
	}
}

func TestNoAuthnSourcesWithoutInClusterLookup(t *testing.T) {
	authn := genericoptions.NewDelegatingAuthenticationOptions()
	authn.SkipInClusterLookup = true
	if s, err := prepareAuthnSources(authn); s != nil || err != nil {
		t.Errorf("prepareAuthnSources with SkipInClusterLookup = %v, %v; want nothing to wait for", s, err)
	}
	if s, err := prepareAuthnSources(nil); s != nil || err != nil {
		t.Errorf("prepareAuthnSources(nil) = %v, %v; want nothing to wait for", s, err)
	}
}
