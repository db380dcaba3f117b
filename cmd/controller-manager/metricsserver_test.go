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
	"context"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
)

// tokenUsers authenticates the bearer tokens it knows.
type tokenUsers map[string]string

func (u tokenUsers) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return nil, false, nil
	}
	if token == "broken" {
		return nil, false, errors.New("TokenReview failed")
	}
	name, ok := u[token]
	if !ok {
		return nil, false, nil
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: name}}, true, nil
}

// pathGrants allows users what it lists as "verb path"; "error" fails.
type pathGrants map[string][]string

func (g pathGrants) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetUser().GetName() == "error" {
		return authorizer.DecisionNoOpinion, "", errors.New("SubjectAccessReview failed")
	}
	if a.IsResourceRequest() {
		return authorizer.DecisionNoOpinion, "resource request", nil
	}
	for _, grant := range g[a.GetUser().GetName()] {
		if grant == a.GetVerb()+" "+a.GetPath() {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, "no RBAC policy matched", nil
}

func TestDelegatedAuth(t *testing.T) {
	served := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) })
	h := withDelegatedAuth(klog.Background(), served,
		tokenUsers{"scraper-token": "scraper", "other-token": "other", "err-token": "error"},
		authorizer.AuthorizerFunc(pathGrants{"scraper": {"get /metrics"}}.Authorize))
	cases := []struct {
		name, token, method, path string
		want                      int
	}{
		{"no token", "", http.MethodGet, "/metrics", http.StatusUnauthorized},
		{"unknown token", "guess", http.MethodGet, "/metrics", http.StatusUnauthorized},
		{"review fails", "broken", http.MethodGet, "/metrics", http.StatusUnauthorized},
		{"user without the role", "other-token", http.MethodGet, "/metrics", http.StatusForbidden},
		{"scraper", "scraper-token", http.MethodGet, "/metrics", http.StatusOK},
		{"scraper, another path", "scraper-token", http.MethodGet, "/debug/pprof/", http.StatusForbidden},
		{"scraper, another verb", "scraper-token", http.MethodPost, "/metrics", http.StatusForbidden},
		{"authorization cannot be asked", "err-token", http.MethodGet, "/metrics", http.StatusInternalServerError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.path, nil)
			if tc.token != "" {
				r.Header.Set("Authorization", "Bearer "+tc.token)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("status %d (%q), want %d", w.Code, strings.TrimSpace(w.Body.String()), tc.want)
			}
			if tc.want == http.StatusOK && w.Body.String() != "metrics" {
				t.Errorf("body %q", w.Body.String())
			}
			if tc.want == http.StatusForbidden && !strings.Contains(w.Body.String(), tc.path) {
				t.Errorf("403 %q does not name the path", w.Body.String())
			}
		})
	}
}

// TestMetricsCertificateFollowsItsFiles replaces the files of
// --metrics-cert-dir and expects the endpoint to serve the new certificate.
func TestMetricsCertificateFollowsItsFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(host string) {
		t.Helper()
		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		// As a mounted Secret changes: the key first would not parse with
		// the old certificate, so write both, then swap.
		for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
			if err := os.WriteFile(filepath.Join(dir, name+".new"), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range []string{"tls.key", "tls.crt"} {
			if err := os.Rename(filepath.Join(dir, name+".new"), filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	served := func(get func() (string, error)) string {
		t.Helper()
		cn, err := get()
		if err != nil {
			t.Fatal(err)
		}
		return cn
	}
	write("first")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	getCert, err := metricsCertificate(ctx, klog.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	commonName := func() (string, error) {
		c, err := getCert(nil)
		if err != nil {
			return "", err
		}
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			return "", err
		}
		return leaf.Subject.CommonName, nil
	}
	if cn := served(commonName); !strings.HasPrefix(cn, "first") {
		t.Fatalf("serving %q, want the first certificate", cn)
	}
	write("second")
	deadline := time.Now().Add(30 * time.Second)
	for cn := served(commonName); !strings.HasPrefix(cn, "second"); cn = served(commonName) {
		if time.Now().After(deadline) {
			t.Fatalf("still serving %q 30 s after the files changed", cn)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestSelfSignedMetricsCertificate(t *testing.T) {
	getCert, err := metricsCertificate(context.Background(), klog.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := getCert(nil)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if leaf.Subject.CommonName == "" || time.Until(leaf.NotAfter) < 300*24*time.Hour {
		t.Errorf("self-signed certificate %q valid until %s", leaf.Subject.CommonName, leaf.NotAfter)
	}
}
