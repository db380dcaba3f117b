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
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/generated/clientset/versioned/fake"
	"tensorstack.dev/training/pkg/jobclient"
)

// fixture is a dashboard served on loopback over fake clientsets, and a
// browser-like client: a cookie jar, and the session's CSRF token once
// signed in.
type fixture struct {
	t        *testing.T
	training *fake.Clientset
	kube     *kubefake.Clientset
	server   *Server
	http     *httptest.Server
	client   *http.Client
	csrf     string
}

func newFixture(t *testing.T, jobs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{t: t, training: fake.NewSimpleClientset(jobs...), kube: kubefake.NewClientset()}
	// The fake API knows no action subresources: answer them with the job,
	// as the server does for a job already in the asked-for mode.
	f.training.PrependReactor("create", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		create, ok := action.(clienttesting.CreateActionImpl)
		if !ok || (create.Subresource != "pause" && create.Subresource != "resume") {
			return false, nil, nil
		}
		job, err := f.training.Tracker().Get(create.Resource, create.Namespace, create.Name)
		return true, job, err
	})
	f.server = NewServer(StaticClients{Training: f.training, Kube: f.kube, Namespace: "team"})
	f.http = httptest.NewUnstartedServer(nil)
	f.http.Config.Handler = f.server.Handler(f.http.Listener.Addr().String())
	f.http.Start()
	t.Cleanup(f.http.Close)
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	f.client = &http.Client{
		Jar: jar,
		// The tests look at the sign-in's redirect themselves.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return f
}

// signIn trades the server's token for a session and reads its CSRF token,
// as the page does.
func (f *fixture) signIn() {
	f.t.Helper()
	resp := f.do(http.MethodGet, f.server.SignInURL(f.http.Listener.Addr().String()), "", nil)
	if resp.StatusCode != http.StatusSeeOther {
		f.t.Fatalf("sign-in: %s, want 303", resp.Status)
	}
	var session struct {
		CSRFToken string     `json:"csrfToken"`
		Kinds     []pageKind `json:"kinds"`
	}
	f.decode(f.do(http.MethodGet, f.url("/api/session"), "", nil), http.StatusOK, &session)
	if session.CSRFToken == "" {
		f.t.Fatal("the session has no CSRF token")
	}
	// The pages learn the kinds from the session: every kind of the table.
	if len(session.Kinds) != len(jobclient.Kinds) {
		f.t.Fatalf("the session names %d kinds, want %d: %+v", len(session.Kinds), len(jobclient.Kinds), session.Kinds)
	}
	for i, k := range jobclient.Kinds {
		if got := session.Kinds[i]; got.Kind != k.Name || got.Resource != k.Resource || got.ShortName != k.ShortName {
			f.t.Errorf("the session's kind %d is %+v, want %s", i, got, k.Name)
		}
	}
	f.csrf = session.CSRFToken
}

func (f *fixture) url(path string) string { return f.http.URL + path }

// do sends a request with the fixture's cookies and the given headers.
func (f *fixture) do(method, target, body string, header http.Header) *http.Response {
	f.t.Helper()
	req, err := http.NewRequest(method, target, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	for name, values := range header {
		req.Header[name] = values
	}
	resp, err := f.client.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// act sends a mutating request as the page does: same origin, CSRF header.
func (f *fixture) act(method, path, body string) *http.Response {
	f.t.Helper()
	return f.do(method, f.url(path), body, http.Header{
		"Origin":         {f.http.URL},
		"Sec-Fetch-Site": {"same-origin"},
		csrfHeader:       {f.csrf},
	})
}

// decode checks the answer's code and reads its JSON body into v.
func (f *fixture) decode(resp *http.Response, code int, v any) {
	f.t.Helper()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	if resp.StatusCode != code {
		f.t.Fatalf("%s %s: %s, want %d; body: %s", resp.Request.Method, resp.Request.URL.Path, resp.Status, code, body)
	}
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			f.t.Fatalf("decoding %s: %v", body, err)
		}
	}
}

func newPyTorchJob(namespace, name string) *v1beta1.PyTorchTrainingJob {
	return &v1beta1.PyTorchTrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
}

// parsedURL parses a URL the test built itself.
func parsedURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
