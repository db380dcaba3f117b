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
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestSignInTradesTheTokenForASessionCookie: the URL's token signs in one
// browser, once; the same URL in another browser is refused, and in the
// one signed in already only drops the token from the address.
func TestSignInTradesTheTokenForASessionCookie(t *testing.T) {
	f := newFixture(t)
	signIn := parsedURL(t, f.server.SignInURL(f.http.Listener.Addr().String()))
	token := f.server.sessions.token

	wrong := *signIn
	wrong.RawQuery = "token=not-the-token"
	resp := f.do(http.MethodGet, wrong.String(), "", nil)
	if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("a wrong token: %s with %d cookies, want 401 and none", resp.Status, len(resp.Cookies()))
	}

	resp = f.do(http.MethodGet, signIn.String(), "", nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the right token: %s, want 303", resp.Status)
	}
	if location := resp.Header.Get("Location"); strings.Contains(location, "token") {
		t.Errorf("the redirect keeps the token in the address: %q", location)
	}
	cookies := resp.Cookies()
	if len(cookies) != 1 || cookies[0].Name != sessionCookie {
		t.Fatalf("cookies %v, want the session cookie alone", cookies)
	}
	if c := cookies[0]; !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Value == "" || strings.Contains(c.Value, token) {
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict and a value other than the token", c)
	}

	// Another browser: no cookie jar.
	other := &http.Client{CheckRedirect: f.client.CheckRedirect}
	resp, err := other.Get(signIn.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("the token again, in another browser: %s with %d cookies, want 401 and none", resp.Status, len(resp.Cookies()))
	}
	resp = f.do(http.MethodGet, signIn.String(), "", nil)
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 0 || strings.Contains(resp.Header.Get("Location"), "token") {
		t.Errorf("the token again, in the browser it signed in: %s with %d cookies to %q, want 303 to the address without it",
			resp.Status, len(resp.Cookies()), resp.Header.Get("Location"))
	}
}

func TestGuardRefuses(t *testing.T) {
	job := newPyTorchJob("team", "mnist")
	const pause = "/api/namespaces/team/pytorchtrainingjobs/mnist/pause"
	tests := map[string]struct {
		signedIn bool
		method   string
		path     string
		header   func(f *fixture) http.Header
		want     int
		// wantMessage is part of the answer's message; "" for an answer
		// that is not refused.
		wantMessage string
	}{
		"the API without a session": {
			method: http.MethodGet, path: "/api/session",
			want: http.StatusUnauthorized, wantMessage: "not signed in",
		},
		"a page without a session": {
			method: http.MethodGet, path: "/",
			want: http.StatusUnauthorized, wantMessage: "not signed in",
		},
		"another Host, as after DNS rebinding": {
			signedIn: true, method: http.MethodGet, path: "/api/session",
			header: func(*fixture) http.Header { return http.Header{"Host": {"evil.example"}} },
			want:   http.StatusMisdirectedRequest, wantMessage: "unexpected Host",
		},
		"an action without the CSRF header": {
			signedIn: true, method: http.MethodPost, path: pause,
			header: func(f *fixture) http.Header { return http.Header{"Origin": {f.http.URL}} },
			want:   http.StatusForbidden, wantMessage: csrfHeader,
		},
		"an action with another session's CSRF token": {
			signedIn: true, method: http.MethodPost, path: pause,
			header: func(f *fixture) http.Header {
				return http.Header{"Origin": {f.http.URL}, csrfHeader: {"not-" + f.csrf}}
			},
			want: http.StatusForbidden, wantMessage: csrfHeader,
		},
		"an action a cross-site page sends": {
			signedIn: true, method: http.MethodPost, path: pause,
			header: func(f *fixture) http.Header {
				return http.Header{"Sec-Fetch-Site": {"cross-site"}, csrfHeader: {f.csrf}}
			},
			want: http.StatusForbidden, wantMessage: "cross-origin",
		},
		"an action from another origin, in a browser without Sec-Fetch-Site": {
			signedIn: true, method: http.MethodPost, path: pause,
			header: func(f *fixture) http.Header {
				return http.Header{"Origin": {"http://evil.example"}, csrfHeader: {f.csrf}}
			},
			want: http.StatusForbidden, wantMessage: "cross-origin",
		},
		"an action with the session's CSRF token, same origin": {
			signedIn: true, method: http.MethodPost, path: pause,
			header: func(f *fixture) http.Header {
				return http.Header{"Origin": {f.http.URL}, "Sec-Fetch-Site": {"same-origin"}, csrfHeader: {f.csrf}}
			},
			want: http.StatusOK,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, job.DeepCopy())
			if tc.signedIn {
				f.signIn()
			}
			header := http.Header{}
			if tc.header != nil {
				header = tc.header(f)
			}
			req, err := http.NewRequest(tc.method, f.url(tc.path), strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			req.Header = header
			if host := header.Get("Host"); host != "" {
				req.Host = host
			}
			resp, err := f.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body strings.Builder
			if _, err := io.Copy(&body, resp.Body); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.want || !strings.Contains(body.String(), tc.wantMessage) {
				t.Errorf("%s %s: %s %q, want %d with %q", tc.method, tc.path, resp.Status, body.String(), tc.want, tc.wantMessage)
			}
			if paused := hasAction(f, "create", "pause"); paused != (tc.want == http.StatusOK && tc.method == http.MethodPost) {
				t.Errorf("the pause reached the API: %v, want %v", paused, !paused)
			}
		})
	}
}

func TestPagesHaveAStrictContentSecurityPolicy(t *testing.T) {
	f := newFixture(t)
	f.signIn()
	resp := f.do(http.MethodGet, f.url("/"), "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /: %s", resp.Status)
	}
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("Content-Security-Policy %q allows inline script or eval", csp)
	}
}

// hasAction tells whether the fake training API saw a verb on a subresource.
func hasAction(f *fixture, verb, subresource string) bool {
	for _, a := range f.training.Actions() {
		if a.GetVerb() == verb && a.GetSubresource() == subresource {
			return true
		}
	}
	return false
}
