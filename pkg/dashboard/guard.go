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
	"crypto/subtle"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// contentSecurityPolicy lets pages run only the bundle's own scripts and
// styles and talk only to this server: no inline script, no eval, no frames.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// guard wraps the dashboard's handler with what every request passes through,
// in order: the Host check, the security headers, the sign-in with the URL's
// token, the session check and, for requests that change something, the CSRF
// checks.
type guard struct {
	sessions *sessions
	// hosts are the Host headers the server answers to. Checking them
	// defeats DNS rebinding: a page of evil.example whose name was made to
	// resolve to 127.0.0.1 sends Host: evil.example.
	hosts []string
	// crossOrigin refuses requests the browser says come from another
	// origin (Sec-Fetch-Site, else Origin against Host).
	crossOrigin *http.CrossOriginProtection
	next        http.Handler
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !slices.Contains(g.hosts, r.Host) {
		http.Error(w, "unexpected Host header "+r.Host, http.StatusMisdirectedRequest)
		return
	}
	setSecurityHeaders(w.Header())
	if token := r.URL.Query().Get(tokenParam); token != "" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		g.signIn(w, r, token)
		return
	}
	csrf, ok := g.sessions.lookup(r)
	if !ok {
		refuseWithoutSession(w, r)
		return
	}
	if !isSafeMethod(r.Method) {
		if err := g.crossOrigin.Check(r); err != nil {
			writeError(w, http.StatusForbidden, "cross-origin request refused: "+err.Error())
			return
		}
		if sent := r.Header.Get(csrfHeader); subtle.ConstantTimeCompare([]byte(sent), []byte(csrf)) != 1 {
			writeError(w, http.StatusForbidden, "missing or wrong "+csrfHeader+" header: reload the page")
			return
		}
	}
	g.next.ServeHTTP(w, r)
}

// signIn exchanges the URL's token for a session cookie and sends the browser
// to the same address without the token, so that it stays out of the
// history and of any Referer.
func (g *guard) signIn(w http.ResponseWriter, r *http.Request, token string) {
	if !g.sessions.validToken(token) {
		http.Error(w, "wrong token: open the URL kubectl training dashboard printed", http.StatusUnauthorized)
		return
	}
	http.SetCookie(w, sessionCookieFor(g.sessions.start()))
	clean := *r.URL
	query := clean.Query()
	query.Del(tokenParam)
	clean.RawQuery = query.Encode()
	http.Redirect(w, r, (&url.URL{Path: clean.Path, RawQuery: clean.RawQuery}).String(), http.StatusSeeOther)
}

// refuseWithoutSession answers a request of a browser that has not signed in:
// JSON for the page's API calls, a line of text for a person.
func refuseWithoutSession(w http.ResponseWriter, r *http.Request) {
	const message = "not signed in: open the URL kubectl training dashboard printed, with its token"
	if strings.HasPrefix(r.URL.Path, "/api/") {
		writeError(w, http.StatusUnauthorized, message)
		return
	}
	http.Error(w, message, http.StatusUnauthorized)
}

func setSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// isSafeMethod tells whether a method only reads, as RFC 9110 defines it.
func isSafeMethod(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	return false
}
