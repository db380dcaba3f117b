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

	apiserverconfig "k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
)

// k8s.io/apiserver's delegated authentication (v0.37) builds its anonymous
// authenticator without the options' anonymous settings, so that every
// request without credentials is system:anonymous, and authorization, not
// authentication, refuses it: 403 where --anonymous-auth=false promises
// 401. restrictAnonymousAuthenticator applies the settings to the built
// authenticator instead.

// restrictedAnonymous drops the anonymous identity outside the allowed
// paths, so that such a request is unauthenticated (401).
type restrictedAnonymous struct {
	authenticator.Request
	// paths are where anonymous requests stay anonymous; none when
	// anonymous authentication is off.
	paths map[string]bool
}

func (a restrictedAnonymous) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	resp, ok, err := a.Request.AuthenticateRequest(req)
	if ok && resp != nil && resp.User != nil && resp.User.GetName() == user.Anonymous && !a.paths[req.URL.Path] {
		return nil, false, nil
	}
	return resp, ok, err
}

// restrictAnonymousAuthenticator returns authn limited to the anonymous
// settings, or authn itself when they allow anonymous requests everywhere.
func restrictAnonymousAuthenticator(settings *apiserverconfig.AnonymousAuthConfig, authn authenticator.Request) authenticator.Request {
	if authn == nil || settings == nil || (settings.Enabled && len(settings.Conditions) == 0) {
		return authn
	}
	paths := map[string]bool{}
	if settings.Enabled {
		for _, c := range settings.Conditions {
			paths[c.Path] = true
		}
	}
	return restrictedAnonymous{Request: authn, paths: paths}
}
