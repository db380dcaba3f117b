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
	"context"
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
// in order: the Host check, the security headers, the sign-in, the session
// check and, for requests that change something, the CSRF checks. It puts the
// session, with the bearer token the request acts with, in the request's
// context.
type guard struct {
	sessions *sessions
	// hosts are the Host headers the local server answers to. Checking them
	// defeats DNS rebinding: a page of evil.example whose name was made to
	// resolve to 127.0.0.1 sends Host: evil.example. Empty in the cluster,
	// which users reach by whatever name its Service or Ingress has.
	hosts []string
	// inCluster signs users in with their own bearer tokens: at the sign-in
	// page, or through the Authorization header a proxy in front adds. Its
	// pages are served before the sign-in: they hold no data, and the
	// sign-in form is one of them.
	inCluster bool
	// verify asks the API server whom a proxy's token authenticates before
	// a session begins for it (in the cluster).
	verify func(ctx context.Context, token string) (string, error)
	// signIns limits each client's sign-ins.
	signIns *signInLimiter
	// crossOrigin refuses requests the browser says come from another
	// origin (Sec-Fetch-Site, else Origin against Host).
	crossOrigin *http.CrossOriginProtection
	next        http.Handler
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if len(g.hosts) > 0 && !slices.Contains(g.hosts, r.Host) {
		http.Error(w, "unexpected Host header "+r.Host, http.StatusMisdirectedRequest)
		return
	}
	setSecurityHeaders(w.Header())
	if !isSafeMethod(r.Method) {
		if err := g.crossOrigin.Check(r); err != nil {
			writeError(w, http.StatusForbidden, "cross-origin request refused: "+err.Error())
			return
		}
	}
	if !g.inCluster {
		if token := r.URL.Query().Get(tokenParam); token != "" && r.Method == http.MethodGet {
			g.signIn(w, r, token)
			return
		}
	} else if !strings.HasPrefix(r.URL.Path, "/api/") || r.URL.Path == signInPath {
		g.next.ServeHTTP(w, r)
		return
	}
	sess, ok := g.sessions.lookup(r)
	header := authorizationBearer(r)
	if !ok {
		if !g.inCluster || header == "" || !isSafeMethod(r.Method) {
			refuseWithoutSession(w, r, g.inCluster)
			return
		}
		// A proxy in front signs the user in: its header comes with every
		// request, and the session holds only the page's CSRF token. It
		// begins once the API server has accepted the token: a session for
		// any header would let anyone fill the server and sign others out.
		if !g.signIns.allow(w, r) {
			return
		}
		if _, err := g.verify(r.Context(), header); err != nil {
			writeAPIError(w, err)
			return
		}
		var id string
		id, sess = g.sessions.start("", header)
		http.SetCookie(w, sessionCookieFor(id, true))
	}
	if !isSafeMethod(r.Method) {
		if sent := r.Header.Get(csrfHeader); subtle.ConstantTimeCompare([]byte(sent), []byte(sess.csrf)) != 1 {
			writeError(w, http.StatusForbidden, "missing or wrong "+csrfHeader+" header: reload the page")
			return
		}
	}
	if header != "" {
		sess.bearerToken = header
	}
	if g.inCluster && sess.bearerToken == "" {
		refuseWithoutSession(w, r, true)
		return
	}
	g.next.ServeHTTP(w, r.WithContext(withSession(r.Context(), sess)))
}

// authorizationBearer is the token of the request's Authorization: Bearer
// header, and "" without one.
func authorizationBearer(r *http.Request) string {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// signIn exchanges the local server's URL token, once, for a session cookie
// and sends the browser to the same address without the token, so that it
// stays out of the history and of any Referer. A browser signed in already
// (the URL opened again) is sent on.
func (g *guard) signIn(w http.ResponseWriter, r *http.Request, token string) {
	if !g.signIns.allow(w, r) {
		return
	}
	if _, ok := g.sessions.lookup(r); !ok {
		if !g.sessions.redeemToken(token) {
			http.Error(w, "wrong or used token: the URL kubectl training dashboard printed signs in one browser, once; "+
				"run it again for a new one", http.StatusUnauthorized)
			return
		}
		id, _ := g.sessions.start("", "")
		http.SetCookie(w, sessionCookieFor(id, false))
	}
	clean := *r.URL
	query := clean.Query()
	query.Del(tokenParam)
	clean.RawQuery = query.Encode()
	http.Redirect(w, r, (&url.URL{Path: clean.Path, RawQuery: clean.RawQuery}).String(), http.StatusSeeOther)
}

// refuseWithoutSession answers a request of a browser that has not signed in:
// JSON for the page's API calls, a line of text for a person.
func refuseWithoutSession(w http.ResponseWriter, r *http.Request, inCluster bool) {
	message := "not signed in: open the URL kubectl training dashboard printed, with its token"
	if inCluster {
		message = "not signed in: sign in with your bearer token"
	}
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
