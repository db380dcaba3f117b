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

package install

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"
)

// checkDashboard: the dashboard the chart installs (dashboard.enabled)
// refuses a request without a token with a 401, signs a user in with their
// own token, and acts as that user: refused what the user may not do (a 403
// naming the user, not the dashboard), served once RBAC allows it.
func (e *env) checkDashboard(t *testing.T, job string) {
	t.Helper()
	port, stop := e.portForward(t, "svc/training-dashboard", 443)
	defer stop()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	// The Pod serves a certificate it signs itself (docs/dashboard.md).
	client := &http.Client{Timeout: 10 * time.Second, Jar: jar,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}}}
	base := "https://127.0.0.1:" + port
	call := func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}

	if code, body := call(http.MethodGet, "/api/session", ""); code != http.StatusUnauthorized {
		t.Errorf("the dashboard without a token: %d %s, want 401", code, body)
	}
	if code, _ := call(http.MethodPost, "/api/signin", `{"token":"not-a-token"}`); code != http.StatusUnauthorized {
		t.Errorf("a sign-in with a token the cluster refuses: %d, want 401", code)
	}
	// A user of the cluster: a ServiceAccount of the jobs' namespace.
	const account = "dashboard-user"
	user := fmt.Sprintf("system:serviceaccount:%s:%s", jobsNamespace, account)
	e.run(t, nil, "create", "serviceaccount", account, "--namespace", jobsNamespace)
	defer e.run(t, nil, "delete", "serviceaccount,rolebinding", account, "--namespace", jobsNamespace, "--ignore-not-found")
	token := strings.TrimSpace(e.run(t, nil, "create", "token", account, "--namespace", jobsNamespace, "--duration=10m"))
	signIn, _ := json.Marshal(map[string]string{"token": token})
	code, body := call(http.MethodPost, "/api/signin", string(signIn))
	if code != http.StatusOK || !strings.Contains(body, user) {
		t.Fatalf("sign-in with %s's token: %d %s", user, code, body)
	}
	if code, body := call(http.MethodGet, "/api/session", ""); code != http.StatusOK {
		t.Errorf("the session after signing in: %d %s", code, body)
	}
	jobPath := fmt.Sprintf("/api/namespaces/%s/pytorchtrainingjobs/%s", jobsNamespace, job)
	code, body = call(http.MethodGet, jobPath, "")
	if code != http.StatusForbidden || !strings.Contains(body, user) {
		t.Errorf("a job the user may not read: %d %s, want the API's 403 naming %s", code, body, user)
	}
	e.run(t, nil, "create", "rolebinding", account, "--namespace", jobsNamespace, "--clusterrole=tensorstack:training-view",
		"--serviceaccount="+jobsNamespace+":"+account)
	readable := waitFor(t, "the dashboard serving the job to "+user, time.Minute, time.Second, func(ctx context.Context) (bool, error) {
		code, _ := call(http.MethodGet, jobPath, "")
		return code == http.StatusOK, nil
	})
	t.Logf("the dashboard in the cluster: 401 without a token, %s signed in with its own, refused the job (403) and "+
		"served it %.1fs after a RoleBinding", user, readable.Seconds())
}
