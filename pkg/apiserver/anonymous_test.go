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

package apiserver

import (
	"net/http"
	"net/http/httptest"
	"testing"

	apiserverconfig "k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
)

// everyoneAnonymous authenticates "Bearer alice" as alice and everything
// else as system:anonymous, as the delegated authenticator does.
var everyoneAnonymous = authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
	if r.Header.Get("Authorization") == "Bearer alice" {
		return &authenticator.Response{User: &user.DefaultInfo{Name: "alice"}}, true, nil
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}}, true, nil
})

func TestRestrictAnonymousAuthenticator(t *testing.T) {
	healthOnly := &apiserverconfig.AnonymousAuthConfig{Enabled: true, Conditions: []apiserverconfig.AnonymousAuthCondition{{Path: "/readyz"}}}
	for _, tc := range []struct {
		name     string
		settings *apiserverconfig.AnonymousAuthConfig
		path     string
		token    bool
		want     string // the user, "" for unauthenticated
	}{
		{"anonymous everywhere", &apiserverconfig.AnonymousAuthConfig{Enabled: true}, "/metrics", false, user.Anonymous},
		{"health path", healthOnly, "/readyz", false, user.Anonymous},
		{"metrics without credentials", healthOnly, "/metrics", false, ""},
		{"metrics with a token", healthOnly, "/metrics", true, "alice"},
		{"anonymous off", &apiserverconfig.AnonymousAuthConfig{Enabled: false}, "/readyz", false, ""},
		{"no settings", nil, "/metrics", false, user.Anonymous},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, tc.path, nil)
			if tc.token {
				r.Header.Set("Authorization", "Bearer alice")
			}
			resp, ok, err := restrictAnonymousAuthenticator(tc.settings, everyoneAnonymous).AuthenticateRequest(r)
			got := ""
			if ok {
				got = resp.User.GetName()
			}
			if err != nil || got != tc.want {
				t.Errorf("user %q (err %v), want %q", got, err, tc.want)
			}
		})
	}
}
