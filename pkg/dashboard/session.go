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
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"sync"
	"time"
)

const (
	// sessionCookie holds the session's ID. HttpOnly keeps it from the page's
	// scripts, SameSite=Strict from requests other sites start.
	sessionCookie = "tensorstack-dashboard-session"
	// secureCookiePrefix names the cookie over HTTPS: a browser takes a
	// cookie of this name only from a secure origin, for the whole host and
	// no wider (Secure, Path=/, no Domain), so that no other host of the
	// domain, nor a page over plain HTTP, can set one the server would read.
	secureCookiePrefix = "__Host-"
	// csrfHeader carries the session's CSRF token on every mutating request.
	// A page of another origin can neither read the token nor, without a
	// CORS preflight this server never grants, send the header.
	csrfHeader = "X-Dashboard-CSRF"
	// tokenParam is the URL parameter of the local server's sign-in token.
	tokenParam = "token"
	// maxSessions bounds the sessions a server keeps: past it, signing in
	// ends the session that would expire first.
	maxSessions = 10000
	// maxSessionsPerUser bounds the sessions of one token: past it, signing
	// in again ends that token's oldest, so that one user, or a stolen
	// token, cannot fill the server and sign everyone else out.
	maxSessionsPerUser = 16
	// maxStreamsPerSession bounds a session's open event streams (the job
	// list, a job's page, followed logs): a page holds two or three, and a
	// client that opens more, or stops reading them, holds no more of the
	// server than this.
	maxStreamsPerSession = 8
)

// session is one signed-in browser.
type session struct {
	// id is the session's ID, which its cookie carries.
	id   string
	csrf string
	// bearerToken is the token the user signed in with, on the server in
	// the cluster: every request of the session acts with it. Empty on the
	// local server, whose clients are the kubeconfig's, and for a session a
	// proxy's Authorization header authenticates.
	bearerToken string
	// expires is when the session ends; zero: with the server.
	expires time.Time
	// user is a digest of the token the API server accepted when the
	// session began, for maxSessionsPerUser; empty on the local server.
	user string
	// started orders a user's sessions, oldest first.
	started time.Time
	// ended is closed when the session ends (sign-out, expiry, eviction):
	// its event streams end with it.
	ended chan struct{}
	// streams counts its open event streams, in the stored session.
	streams int
}

// sessions signs browsers in. On the local server the token the command
// prints, shown once in a URL, is exchanged for a session; in the cluster the
// user's own bearer token is, at the sign-in page. Either way the session's
// ID lives only in an HttpOnly cookie.
type sessions struct {
	// token is what the local server's URL carries to sign in, once: empty
	// once used, and in the cluster, where no URL signs anyone in.
	token string
	// ttl is how long a session lasts; zero: as long as the server.
	ttl time.Duration
	// secure: the sessions of the server in the cluster, served over HTTPS,
	// whose cookie has the __Host- prefix.
	secure bool

	now func() time.Time

	mu   sync.Mutex
	byID map[string]*session
}

func newSessions() *sessions {
	return &sessions{token: rand.Text(), now: time.Now, byID: map[string]*session{}}
}

// newTokenSessions are the sessions of the server in the cluster: opened
// with a bearer token, for ttl each.
func newTokenSessions(ttl time.Duration) *sessions {
	return &sessions{ttl: ttl, secure: true, now: time.Now, byID: map[string]*session{}}
}

// redeemToken tells whether the sign-in token is the server's, in constant
// time so that the comparison reveals nothing of it, and spends it: the URL
// signs in one browser, and a copy of it (a history, a screen share) no
// other.
func (s *sessions) redeemToken(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token == "" || subtle.ConstantTimeCompare([]byte(token), []byte(s.token)) != 1 {
		return false
	}
	s.token = ""
	return true
}

// start opens a session acting with bearerToken (empty: the server's own
// clients or the request's header) for the user whose accepted token
// verified is (empty on the local server), and returns its ID and the
// session.
func (s *sessions) start(bearerToken, verified string) (string, session) {
	id := rand.Text()
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var user string
	if verified != "" {
		sum := sha256.Sum256([]byte(verified))
		user = hex.EncodeToString(sum[:])
		s.limitUserLocked(user)
	}
	if len(s.byID) >= maxSessions {
		s.evictLocked(now)
	}
	var expires time.Time
	if s.ttl > 0 {
		expires = now.Add(s.ttl)
	}
	sess := &session{id: id, csrf: rand.Text(), bearerToken: bearerToken, expires: expires, user: user, started: now,
		ended: make(chan struct{})}
	s.byID[id] = sess
	return id, *sess
}

// limitUserLocked ends the user's oldest sessions while it holds
// maxSessionsPerUser, to make room for one more.
func (s *sessions) limitUserLocked(user string) {
	for {
		var oldest string
		n := 0
		for id, sess := range s.byID {
			if sess.user != user {
				continue
			}
			n++
			if oldest == "" || sess.started.Before(s.byID[oldest].started) {
				oldest = id
			}
		}
		if n < maxSessionsPerUser {
			return
		}
		s.dropLocked(oldest)
	}
}

// evictLocked drops the expired sessions and, when none had, the one that
// would expire first.
func (s *sessions) evictLocked(now time.Time) {
	var first string
	for id, sess := range s.byID {
		if sess.expired(now) {
			s.dropLocked(id)
			continue
		}
		if first == "" || sess.expires.Before(s.byID[first].expires) {
			first = id
		}
	}
	if len(s.byID) >= maxSessions && first != "" {
		s.dropLocked(first)
	}
}

// dropLocked ends a session, and with it its event streams.
func (s *sessions) dropLocked(id string) {
	if sess, ok := s.byID[id]; ok {
		close(sess.ended)
		delete(s.byID, id)
	}
}

// openStream counts an event stream of sess. Its context ends with the
// request's, or with the session: at sign-out, eviction or its expiry; call
// done when the stream ends. It returns false when the session has ended or
// holds maxStreamsPerSession streams already.
func (s *sessions) openStream(ctx context.Context, sess session) (context.Context, func(), bool) {
	s.mu.Lock()
	stored, ok := s.byID[sess.id]
	if !ok || stored.streams >= maxStreamsPerSession {
		s.mu.Unlock()
		return nil, nil, false
	}
	stored.streams++
	s.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	stop := cancel
	if !stored.expires.IsZero() {
		var cancelAtExpiry context.CancelFunc
		ctx, cancelAtExpiry = context.WithDeadline(ctx, stored.expires)
		stop = func() { cancelAtExpiry(); cancel() }
	}
	go func() {
		select {
		case <-stored.ended:
			stop()
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		stop()
		s.mu.Lock()
		stored.streams--
		s.mu.Unlock()
	}, true
}

func (sess *session) expired(now time.Time) bool {
	return !sess.expires.IsZero() && !now.Before(sess.expires)
}

// lookup returns the request's session, and false when it has none of this
// server or it expired.
func (s *sessions) lookup(r *http.Request) (session, bool) {
	cookie, err := r.Cookie(sessionCookieName(s.secure))
	if err != nil {
		return session{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.byID[cookie.Value]
	if !ok {
		return session{}, false
	}
	if sess.expired(s.now()) {
		s.dropLocked(cookie.Value)
		return session{}, false
	}
	return *sess, true
}

// end closes the request's session.
func (s *sessions) end(r *http.Request) {
	if cookie, err := r.Cookie(sessionCookieName(s.secure)); err == nil {
		s.mu.Lock()
		s.dropLocked(cookie.Value)
		s.mu.Unlock()
	}
}

// sessionCookieName is the session cookie's name over HTTPS (secure) or not.
func sessionCookieName(secure bool) string {
	if secure {
		return secureCookiePrefix + sessionCookie
	}
	return sessionCookie
}

// sessionCookieFor is the cookie that carries a session's ID. secure marks it
// for HTTPS only, under the __Host- prefix: the server in the cluster; the
// local server speaks plain HTTP on loopback, which browsers treat as a
// secure context.
func sessionCookieFor(id string, secure bool) *http.Cookie {
	return &http.Cookie{
		Name:     sessionCookieName(secure),
		Value:    id,
		Path:     "/",
		HttpOnly: true,
		Secure:   secure,
		SameSite: http.SameSiteStrictMode,
	}
}

// requestSessionKey carries the request's session in its context, from the
// guard to the handlers and the ClientSource, with the bearer token the
// request acts with in its bearerToken.
type requestSessionKey struct{}

func withSession(ctx context.Context, sess session) context.Context {
	return context.WithValue(ctx, requestSessionKey{}, sess)
}

func sessionFrom(ctx context.Context) session {
	sess, _ := ctx.Value(requestSessionKey{}).(session)
	return sess
}

// BearerToken is the token the request's user acts with on the server in the
// cluster, and "" when there is none.
func BearerToken(ctx context.Context) string {
	return sessionFrom(ctx).bearerToken
}
