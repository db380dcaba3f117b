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
	"crypto/rand"
	"crypto/subtle"
	"net/http"
	"sync"
)

const (
	// sessionCookie holds the session's ID. HttpOnly keeps it from the page's
	// scripts, SameSite=Strict from requests other sites start.
	sessionCookie = "tensorstack-dashboard-session"
	// csrfHeader carries the session's CSRF token on every mutating request.
	// A page of another origin can neither read the token nor, without a
	// CORS preflight this server never grants, send the header.
	csrfHeader = "X-Dashboard-CSRF"
	// tokenParam is the URL parameter of the sign-in token.
	tokenParam = "token"
)

// sessions signs browsers in: the token the command prints, shown once in a
// URL, is exchanged for a session whose ID lives only in an HttpOnly cookie.
// Sessions live as long as the server: it is one user's, on loopback, for as
// long as the command runs.
type sessions struct {
	// token is what the URL carries to sign in.
	token string

	mu sync.Mutex
	// csrf maps a session's ID to its CSRF token.
	csrf map[string]string
}

func newSessions() *sessions {
	return &sessions{token: rand.Text(), csrf: map[string]string{}}
}

// validToken tells whether the sign-in token is the server's, in constant
// time so that the comparison reveals nothing of it.
func (s *sessions) validToken(token string) bool {
	return subtle.ConstantTimeCompare([]byte(token), []byte(s.token)) == 1
}

// start opens a session and returns its ID.
func (s *sessions) start() string {
	id := rand.Text()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.csrf[id] = rand.Text()
	return id
}

// lookup returns the CSRF token of the request's session, and false when the
// request has no session of this server.
func (s *sessions) lookup(r *http.Request) (csrf string, ok bool) {
	cookie, err := r.Cookie(sessionCookie)
	if err != nil {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	csrf, ok = s.csrf[cookie.Value]
	return csrf, ok
}

// sessionCookieFor is the cookie that carries a session's ID. It is not
// Secure: the local server speaks plain HTTP on loopback, which browsers
// treat as a secure context.
func sessionCookieFor(id string) *http.Cookie {
	return &http.Cookie{
		Name:     sessionCookie,
		Value:    id,
		Path:     "/",
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
	}
}
