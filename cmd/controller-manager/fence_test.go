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
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestWriteFence: writes go out only within the renew deadline of the last
// renewal and until another holder is seen; reads always go out.
func TestWriteFence(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fence := newWriteFence(10 * time.Second)
	fence.now = func() time.Time { return now }
	var reached []string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = append(reached, r.Method)
	}))
	defer server.Close()
	client := &http.Client{Transport: fencedTransport{fence: fence, next: http.DefaultTransport}}
	send := func(method string) error {
		req, _ := http.NewRequest(method, server.URL+"/api/v1/namespaces/ns/pods", nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	steps := []struct {
		desc   string
		before func()
		method string
		want   string // "" for allowed, else part of the error
	}{
		{"before the lease is held", func() {}, http.MethodPost, "never held"},
		{"reads always", func() {}, http.MethodGet, ""},
		{"just renewed", func() { fence.renew(now) }, http.MethodPost, ""},
		{"within the deadline", func() { now = now.Add(9 * time.Second) }, http.MethodDelete, ""},
		{"past the deadline (frozen)", func() { now = now.Add(2 * time.Second) }, http.MethodPut, "last renewed 11s ago"},
		{"renewed again", func() { fence.renew(now) }, http.MethodPatch, ""},
		{"another holder", func() { fence.revoke() }, http.MethodPost, "another instance"},
		{"reads while fenced", func() {}, http.MethodGet, ""},
	}
	for _, s := range steps {
		s.before()
		reached = nil
		err := send(s.method)
		switch {
		case s.want == "" && (err != nil || len(reached) != 1):
			t.Errorf("%s: %s refused (%v) or not sent (%v)", s.desc, s.method, err, reached)
		case s.want != "" && (err == nil || !strings.Contains(err.Error(), s.want) || len(reached) != 0):
			t.Errorf("%s: %s gave %v and reached the server %v times; want refused with %q", s.desc, s.method, err, len(reached), s.want)
		}
	}
}
