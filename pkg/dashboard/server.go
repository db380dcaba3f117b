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
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Server is the dashboard's HTTP server: the front end and the JSON and
// event-stream API it calls.
type Server struct {
	source   ClientSource
	sessions *sessions
	signIns  *signInLimiter
	lists    listSlots
	feeds    *jobFeeds
	// inCluster is set on the server in the cluster.
	inCluster *InClusterOptions
}

// NewServer returns the local server: its requests to the Kubernetes API use
// the clients source gives for each of them, and a browser signs in with the
// URL SignInURL returns.
func NewServer(source ClientSource) *Server {
	return &Server{source: source, sessions: newSessions(), signIns: newSignInLimiter(), lists: newListSlots(), feeds: newJobFeeds()}
}

// InClusterOptions configure the dashboard that runs in the cluster.
type InClusterOptions struct {
	// Verify asks the API server who a sign-in token is and returns the
	// user's name: the cluster, not the dashboard, decides whom a token
	// authenticates.
	Verify func(ctx context.Context, token string) (string, error)
	// SessionTTL ends a session this long after its sign-in.
	SessionTTL time.Duration
}

// NewInClusterServer returns the server that runs in the cluster. Users sign
// in with their own bearer token, at its sign-in page or through the
// Authorization header of a proxy in front; source must build each request's
// clients from that token (TokenClients) and never from the server's own
// credentials. It must be served over HTTPS: its session cookie is Secure.
func NewInClusterServer(source ClientSource, opts InClusterOptions) *Server {
	return &Server{source: source, sessions: newTokenSessions(opts.SessionTTL), signIns: newSignInLimiter(),
		lists: newListSlots(), feeds: newJobFeeds(), inCluster: &opts}
}

// SignInURL is the address that opens the dashboard served on addr
// (host:port): it carries the token the first request trades for a session.
func (s *Server) SignInURL(addr string) string {
	return (&url.URL{Scheme: "http", Host: addr, Path: "/", RawQuery: url.Values{tokenParam: {s.sessions.token}}.Encode()}).String()
}

// Handler returns the dashboard's handler for a server listening on addr
// (host:port); it answers only requests addressed to it by that address or,
// on loopback, by localhost.
func (s *Server) Handler(addr string) http.Handler {
	if s.inCluster != nil {
		return &guard{
			sessions:    s.sessions,
			inCluster:   true,
			verify:      s.inCluster.Verify,
			signIns:     s.signIns,
			crossOrigin: http.NewCrossOriginProtection(),
			next:        s.routes(),
		}
	}
	hosts := []string{addr}
	if host, port, err := net.SplitHostPort(addr); err == nil && net.ParseIP(host).IsLoopback() {
		hosts = append(hosts, net.JoinHostPort("localhost", port))
	}
	return &guard{
		sessions:    s.sessions,
		hosts:       hosts,
		signIns:     s.signIns,
		crossOrigin: http.NewCrossOriginProtection(),
		next:        s.routes(),
	}
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	const job = "/api/namespaces/{namespace}/{resource}/{name}"
	mux.HandleFunc("GET /api/session", s.session)
	mux.HandleFunc("GET "+signInPath, s.signInMethod)
	mux.HandleFunc("POST "+signInPath, s.signIn)
	mux.HandleFunc("POST /api/signout", s.signOut)
	mux.HandleFunc("GET /api/jobs/watch", s.streaming(s.watchList))
	mux.HandleFunc("POST /api/jobs", s.create)
	mux.HandleFunc("GET /api/cluster", s.cluster)
	mux.HandleFunc("GET /api/queues/watch", s.streaming(s.watchQueues))
	mux.HandleFunc("GET /api/runtimes", s.runtimes)
	mux.HandleFunc("GET /api/tuningjobs", s.tuningJobs)
	mux.HandleFunc("GET /api/tuningjobs/{namespace}/{name}", s.tuningJob)
	mux.HandleFunc("GET /api/records", s.records)
	mux.HandleFunc("GET /api/records/{namespace}/{name}", s.record)
	mux.HandleFunc("DELETE /api/records/{namespace}/{name}", s.deleteRecord)
	mux.HandleFunc("GET "+job, s.jobDetail)
	mux.HandleFunc("DELETE "+job, s.delete)
	mux.HandleFunc("GET "+job+"/history", s.progressHistory)
	mux.HandleFunc("GET "+job+"/watch", s.streaming(s.watchJob))
	mux.HandleFunc("GET "+job+"/logs", s.streaming(s.logs))
	mux.HandleFunc("POST "+job+"/pause", s.pause)
	mux.HandleFunc("POST "+job+"/resume", s.resume)
	mux.HandleFunc("POST "+job+"/debug", s.debug)
	mux.HandleFunc("POST "+job+"/scale", s.scale)
	mux.Handle("/api/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such API: "+r.Method+" "+r.URL.Path)
	}))
	// Not "GET /": that and "/api/" would each be the more specific one
	// for some request, which ServeMux refuses.
	pages := frontEnd()
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isSafeMethod(r.Method) {
			writeError(w, http.StatusMethodNotAllowed, r.Method+" "+r.URL.Path+": the pages only read")
			return
		}
		pages.ServeHTTP(w, r)
	}))
	return mux
}

// streaming wraps the handler of an event stream: the stream counts against
// its session's maxStreamsPerSession, and ends with the session.
func (s *Server) streaming(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, done, ok := s.sessions.openStream(r.Context(), sessionFrom(r.Context()))
		if !ok {
			writeError(w, http.StatusTooManyRequests, fmt.Sprintf(
				"this session has %d event streams open already (each page of the dashboard holds two or three): close some", maxStreamsPerSession))
			return
		}
		defer done()
		next(w, r.WithContext(ctx))
	}
}

// Serve serves the dashboard on l until ctx ends, then gives open requests
// (event streams above all) a moment to finish.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	server := &http.Server{
		Handler: s.Handler(l.Addr().String()),
		// No write timeout: event streams are open for as long as a page.
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	done := make(chan error, 1)
	go func() { done <- server.Serve(l) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := server.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// session gives the page what it needs to act: the CSRF token of its session,
// which it keeps in memory only, and the namespace the user works in.
func (s *Server) session(w http.ResponseWriter, r *http.Request) {
	c, err := s.source.ClientsFor(r)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"csrfToken": sessionFrom(r.Context()).csrf, "namespace": c.Namespace,
		"inCluster": s.inCluster != nil, "kinds": kindsForPages()})
}

// signInPath is where the page in the cluster posts the user's bearer token.
const signInPath = "/api/signin"

// maxSignInBytes bounds a sign-in's body: a ServiceAccount token or an OIDC
// ID token is a few KiB.
const maxSignInBytes = 32 << 10

// signIn opens a session for the bearer token the body carries, once the API
// server has said whom it authenticates; its refusal (a 401) is the answer.
// Only the server in the cluster signs in this way.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	if s.inCluster == nil {
		writeError(w, http.StatusNotFound, "this dashboard signs in with the URL kubectl training dashboard printed")
		return
	}
	var body struct {
		Token string `json:"token"`
	}
	if err := decodeOptionalJSON(http.MaxBytesReader(w, r.Body, maxSignInBytes), &body); err != nil {
		writeError(w, http.StatusBadRequest, "reading the sign-in: "+err.Error())
		return
	}
	token := strings.TrimSpace(body.Token)
	if token == "" {
		writeError(w, http.StatusBadRequest, "token: required")
		return
	}
	if !s.signIns.allow(w, r) {
		return
	}
	user, err := s.inCluster.Verify(r.Context(), token)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	id, _ := s.sessions.start(token, token)
	http.SetCookie(w, sessionCookieFor(id, true))
	writeJSON(w, http.StatusOK, map[string]string{"user": user})
}

// signInMethod tells the page, before any session, that this server signs in
// with bearer tokens; the local server does not (404).
func (s *Server) signInMethod(w http.ResponseWriter, r *http.Request) {
	if s.inCluster == nil {
		writeError(w, http.StatusNotFound, "this dashboard signs in with the URL kubectl training dashboard printed")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"signIn": "bearerToken"})
}

// signOut ends the request's session; the browser forgets its cookie.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request) {
	s.sessions.end(r)
	cookie := sessionCookieFor("", s.inCluster != nil)
	cookie.MaxAge = -1
	http.SetCookie(w, cookie)
	writeJSON(w, http.StatusOK, map[string]string{"message": "signed out"})
}
