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
	"net"
	"net/http"
	"net/url"
	"time"
)

// Server is the dashboard's HTTP server: the front end and the JSON and
// event-stream API it calls.
type Server struct {
	source   ClientSource
	sessions *sessions
}

// NewServer returns a server whose requests to the Kubernetes API use the
// clients source gives for each of them.
func NewServer(source ClientSource) *Server {
	return &Server{source: source, sessions: newSessions()}
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
	hosts := []string{addr}
	if host, port, err := net.SplitHostPort(addr); err == nil && net.ParseIP(host).IsLoopback() {
		hosts = append(hosts, net.JoinHostPort("localhost", port))
	}
	return &guard{
		sessions:    s.sessions,
		hosts:       hosts,
		crossOrigin: http.NewCrossOriginProtection(),
		next:        s.routes(),
	}
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	const job = "/api/namespaces/{namespace}/{resource}/{name}"
	mux.HandleFunc("GET /api/session", s.session)
	mux.HandleFunc("GET /api/jobs/watch", s.watchList)
	mux.HandleFunc("POST /api/jobs", s.create)
	mux.HandleFunc("GET "+job, s.jobDetail)
	mux.HandleFunc("DELETE "+job, s.delete)
	mux.HandleFunc("GET "+job+"/watch", s.watchJob)
	mux.HandleFunc("GET "+job+"/logs", s.logs)
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
	csrf, _ := s.sessions.lookup(r) // the guard let only sessions through
	c, err := s.source.ClientsFor(r)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"csrfToken": csrf, "namespace": c.Namespace})
}
