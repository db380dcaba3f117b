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
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// fakeAPI stands for kube-apiserver: it authenticates the bearer token
// "alice-token" as alice, answers SelfSubjectReviews, gets of one job,
// lists of runtimes (one ClusterTrainingRuntime, no TrainingRuntime in
// team) and the list and get of one search in team, refuses any other
// token with a 401, and records the Authorization header of every request.
type fakeAPI struct {
	mu             sync.Mutex
	authorizations []string
}

func (a *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.authorizations = append(a.authorizations, r.Header.Get("Authorization"))
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	user := map[string]string{"Bearer alice-token": "alice", "Bearer proxied-token": "bob"}[r.Header.Get("Authorization")]
	if user == "" {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401,"message":"Unauthorized"}`)
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/apis/authentication.k8s.io/v1/selfsubjectreviews":
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview",
			"status": map[string]any{"userInfo": map[string]any{"username": user}}})
	case r.URL.Path == "/apis/batch.tensorstack.dev/v1beta1/namespaces/team/pytorchtrainingjobs/mnist/pause":
		_ = json.NewEncoder(w).Encode(newPyTorchJob("team", "mnist"))
	case r.Method == http.MethodGet && r.URL.Path == "/apis/batch.tensorstack.dev/v1beta1/clustertrainingruntimes":
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "ClusterTrainingRuntimeList",
			"items": []any{newClusterRuntime("torch-distributed", pyTorchTemplate("registry.example/torch:2"))}})
	case r.Method == http.MethodGet && r.URL.Path == "/apis/batch.tensorstack.dev/v1beta1/namespaces/team/trainingruntimes":
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "TrainingRuntimeList", "items": []any{}})
	case r.Method == http.MethodGet && r.URL.Path == "/apis/batch.tensorstack.dev/v1beta1/namespaces/team/tuningjobs":
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "TuningJobList",
			"items": []any{newSearch("team", "lr", 1)}})
	case r.Method == http.MethodGet && r.URL.Path == "/apis/batch.tensorstack.dev/v1beta1/namespaces/team/tuningjobs/lr":
		_ = json.NewEncoder(w).Encode(newSearch("team", "lr", 1))
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"not found"}`)
	}
}

func (a *fakeAPI) seen() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.authorizations...)
}

// inClusterFixture serves the in-cluster dashboard over HTTPS, its clients
// pointed at a fake API, with credentials of its own that must never be used.
func inClusterFixture(t *testing.T) (*httptest.Server, *http.Client, *fakeAPI, *Server) {
	t.Helper()
	api := &fakeAPI{}
	apiServer := httptest.NewServer(api)
	t.Cleanup(apiServer.Close)
	source := TokenClients{Config: &rest.Config{Host: apiServer.URL, BearerToken: "the-dashboards-own-token"}, Namespace: "team"}
	server := NewInClusterServer(source, InClusterOptions{Verify: source.Verify, SessionTTL: time.Hour})
	dashboard := httptest.NewTLSServer(server.Handler(""))
	t.Cleanup(dashboard.Close)
	client := dashboard.Client()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	client.Jar = jar
	return dashboard, client, api, server
}

func send(t *testing.T, client *http.Client, method, url, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, string(data)
}

func TestInClusterRefusesWithoutAToken(t *testing.T) {
	dashboard, client, api, _ := inClusterFixture(t)
	if resp, body := send(t, client, http.MethodGet, dashboard.URL+"/api/session", "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a session without signing in: %d %s, want 401", resp.StatusCode, body)
	}
	if resp, body := send(t, client, http.MethodGet, dashboard.URL+"/api/signin", "", nil); resp.StatusCode != http.StatusOK ||
		!strings.Contains(body, "bearerToken") {
		t.Errorf("the sign-in method: %d %s, want the bearer token's", resp.StatusCode, body)
	}
	// The page itself holds no data: its sign-in form must load.
	if resp, _ := send(t, client, http.MethodGet, dashboard.URL+"/", "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("the page before signing in: %d, want 200", resp.StatusCode)
	}
	// A token the cluster refuses: the API's 401, and no session.
	resp, body := send(t, client, http.MethodPost, dashboard.URL+"/api/signin", `{"token":"stolen"}`, nil)
	if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("a refused token: %d %s, cookies %v; want 401 and none", resp.StatusCode, body, resp.Cookies())
	}
	if resp, body := send(t, client, http.MethodPost, dashboard.URL+"/api/signin", `{}`, nil); resp.StatusCode != http.StatusBadRequest ||
		!strings.Contains(body, "token: required") {
		t.Errorf("no token: %d %s, want 400 naming it", resp.StatusCode, body)
	}
	// The URL sign-in of the local server does not exist here.
	if resp, _ := send(t, client, http.MethodGet, dashboard.URL+"/api/session?token=anything", "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a URL token: %d, want 401", resp.StatusCode)
	}
	for _, seen := range api.seen() {
		if strings.Contains(seen, "the-dashboards-own-token") {
			t.Fatalf("the dashboard used its own credentials: %q", seen)
		}
	}
}

func TestInClusterSignInActsAsTheUser(t *testing.T) {
	dashboard, client, api, _ := inClusterFixture(t)
	resp, body := send(t, client, http.MethodPost, dashboard.URL+"/api/signin", `{"token":"alice-token"}`, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"user":"alice"`) {
		t.Fatalf("sign-in: %d %s", resp.StatusCode, body)
	}
	cookies := resp.Cookies()
	if len(cookies) != 1 || !cookies[0].Secure || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode ||
		cookies[0].Name != "__Host-tensorstack-dashboard-session" || cookies[0].Path != "/" || cookies[0].Domain != "" {
		t.Errorf("session cookie %+v, want one __Host- cookie: Secure, HttpOnly, SameSite=Strict, Path=/, no Domain", cookies)
	}
	if strings.Contains(cookies[0].Value, "alice-token") {
		t.Error("the cookie carries the token")
	}
	resp, body = send(t, client, http.MethodGet, dashboard.URL+"/api/session", "", nil)
	var session struct {
		CSRFToken string `json:"csrfToken"`
		Namespace string `json:"namespace"`
		InCluster bool   `json:"inCluster"`
	}
	if err := json.Unmarshal([]byte(body), &session); resp.StatusCode != http.StatusOK || err != nil || session.CSRFToken == "" ||
		!session.InCluster || session.Namespace != "team" {
		t.Fatalf("session: %d %s", resp.StatusCode, body)
	}
	// An action needs the CSRF token, and goes to the API with the user's
	// token.
	pause := dashboard.URL + "/api/namespaces/team/pytorchtrainingjobs/mnist/pause"
	if resp, _ := send(t, client, http.MethodPost, pause, "{}", nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("an action without the CSRF token: %d, want 403", resp.StatusCode)
	}
	if resp, body := send(t, client, http.MethodPost, pause, "{}", map[string]string{csrfHeader: session.CSRFToken}); resp.StatusCode != http.StatusOK {
		t.Errorf("pause: %d %s", resp.StatusCode, body)
	}
	seen := api.seen()
	if last := seen[len(seen)-1]; last != "Bearer alice-token" {
		t.Errorf("the pause reached the API with %q, want alice's token", last)
	}
	// Signed out, the session is gone.
	send(t, client, http.MethodPost, dashboard.URL+"/api/signout", "", map[string]string{csrfHeader: session.CSRFToken})
	if resp, _ := send(t, client, http.MethodGet, dashboard.URL+"/api/session", "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("after signing out: %d, want 401", resp.StatusCode)
	}
	for _, seen := range api.seen() {
		if strings.Contains(seen, "the-dashboards-own-token") {
			t.Fatalf("the dashboard used its own credentials: %q", seen)
		}
	}
}

// A proxy in front (OAuth2 Proxy, say) adds the user's token to every
// request: the dashboard acts with it, and still wants its CSRF token for
// actions.
func TestInClusterActsWithAProxysToken(t *testing.T) {
	dashboard, client, api, _ := inClusterFixture(t)
	proxied := map[string]string{"Authorization": "Bearer proxied-token"}
	resp, body := send(t, client, http.MethodGet, dashboard.URL+"/api/session", "", proxied)
	var session struct {
		CSRFToken string `json:"csrfToken"`
	}
	if err := json.Unmarshal([]byte(body), &session); resp.StatusCode != http.StatusOK || err != nil || session.CSRFToken == "" {
		t.Fatalf("session behind a proxy: %d %s", resp.StatusCode, body)
	}
	pause := dashboard.URL + "/api/namespaces/team/pytorchtrainingjobs/mnist/pause"
	if resp, _ := send(t, client, http.MethodPost, pause, "{}", proxied); resp.StatusCode != http.StatusForbidden {
		t.Errorf("an action without the CSRF token: %d, want 403", resp.StatusCode)
	}
	proxied[csrfHeader] = session.CSRFToken
	if resp, body := send(t, client, http.MethodPost, pause, "{}", proxied); resp.StatusCode != http.StatusOK {
		t.Errorf("pause: %d %s", resp.StatusCode, body)
	}
	seen := api.seen()
	if last := seen[len(seen)-1]; last != "Bearer proxied-token" {
		t.Errorf("the pause reached the API with %q, want the proxy's token", last)
	}
	// The session alone, without the proxy's header, acts as nobody.
	if resp, _ := send(t, client, http.MethodGet, dashboard.URL+"/api/session", "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the proxy's session without its header: %d, want 401", resp.StatusCode)
	}
}

func TestSessionsExpireAndStayBounded(t *testing.T) {
	s := newTokenSessions(time.Hour)
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now }
	id, _ := s.start("t", "")
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.AddCookie(sessionCookieFor(id, true))
	if _, ok := s.lookup(req); !ok {
		t.Fatal("a new session is not found")
	}
	now = now.Add(time.Hour)
	if _, ok := s.lookup(req); ok {
		t.Error("a session outlived its hour")
	}
	for i := 0; i < maxSessions+10; i++ {
		now = now.Add(time.Second)
		s.start("t", "")
	}
	if n := len(s.byID); n > maxSessions {
		t.Errorf("%d sessions kept, want at most %d", n, maxSessions)
	}
}

// TestInClusterForgedTokensOpenNoSession: a request whose Authorization
// header carries a token the API server refuses gets the API's 401 and no
// session; a flood of them from one client is cut off with 429s, and the
// users signed in stay signed in.
func TestInClusterForgedTokensOpenNoSession(t *testing.T) {
	dashboard, client, _, server := inClusterFixture(t)
	if resp, body := send(t, client, http.MethodPost, dashboard.URL+signInPath, `{"token":"alice-token"}`, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("alice's sign-in: %d %s", resp.StatusCode, body)
	}
	// A client of its own: no cookie jar, so no alice's session.
	flood := &http.Client{Transport: dashboard.Client().Transport}
	refused, limited := 0, 0
	for i := range 3 * signInBurst {
		resp, body := send(t, flood, http.MethodGet, dashboard.URL+"/api/session", "",
			map[string]string{"Authorization": fmt.Sprintf("Bearer forged-%d", i)})
		switch resp.StatusCode {
		case http.StatusUnauthorized:
			refused++
		case http.StatusTooManyRequests:
			limited++
			if resp.Header.Get("Retry-After") == "" {
				t.Errorf("a 429 without Retry-After: %s", body)
			}
		default:
			t.Fatalf("a forged token: %d %s, want 401 or 429", resp.StatusCode, body)
		}
		if len(resp.Cookies()) > 0 {
			t.Fatalf("a forged token got a cookie: %v", resp.Cookies())
		}
	}
	if refused == 0 || limited == 0 {
		t.Errorf("%d refused by the API and %d limited, want both: the first up to the burst, the rest limited", refused, limited)
	}
	server.sessions.mu.Lock()
	n := len(server.sessions.byID)
	server.sessions.mu.Unlock()
	if n != 1 {
		t.Errorf("%d sessions, want alice's alone", n)
	}
	if resp, body := send(t, client, http.MethodGet, dashboard.URL+"/api/session", "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("alice after the flood: %d %s, want her session", resp.StatusCode, body)
	}
}

func TestSessionsPerUserAreBounded(t *testing.T) {
	s := newTokenSessions(time.Hour)
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now }
	bob, _ := s.start("bob-token", "bob-token")
	var alice []string
	for range maxSessionsPerUser + 5 {
		now = now.Add(time.Second)
		id, _ := s.start("alice-token", "alice-token")
		alice = append(alice, id)
	}
	found := func(id string) bool {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.AddCookie(sessionCookieFor(id, true))
		_, ok := s.lookup(req)
		return ok
	}
	if !found(bob) {
		t.Error("bob's session went when alice signed in again and again")
	}
	kept := 0
	for i, id := range alice {
		if found(id) {
			kept++
			if i < len(alice)-maxSessionsPerUser {
				t.Errorf("alice's session %d of %d kept, want only her newest %d", i+1, len(alice), maxSessionsPerUser)
			}
		}
	}
	if kept != maxSessionsPerUser {
		t.Errorf("alice keeps %d sessions, want %d", kept, maxSessionsPerUser)
	}
}

func TestSignInLimiter(t *testing.T) {
	l := newSignInLimiter()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return now }
	try := func(addr string) int {
		req := httptest.NewRequest(http.MethodPost, signInPath, nil)
		req.RemoteAddr = addr
		rec := httptest.NewRecorder()
		if l.allow(rec, req) {
			return http.StatusOK
		}
		return rec.Code
	}
	for i := range signInBurst {
		if code := try("192.0.2.1:4000"); code != http.StatusOK {
			t.Fatalf("sign-in %d of the burst: %d", i+1, code)
		}
	}
	if code := try("192.0.2.1:4001"); code != http.StatusTooManyRequests {
		t.Errorf("past the burst, from another port of the same address: %d, want 429", code)
	}
	if code := try("192.0.2.2:4000"); code != http.StatusOK {
		t.Errorf("another client: %d, want its own burst", code)
	}
	now = now.Add(time.Minute / signInsPerMinute)
	if code := try("192.0.2.1:4000"); code != http.StatusOK {
		t.Errorf("after one interval: %d, want one more sign-in", code)
	}
	if code := try("192.0.2.1:4000"); code != http.StatusTooManyRequests {
		t.Errorf("a second one in the same interval: %d, want 429", code)
	}
}
