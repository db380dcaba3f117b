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

// Package dashboard is the web dashboard of kubectl training: a small HTTP
// server on loopback that shows training jobs and acts on them with the
// caller's own credentials, and the front end it serves from the binary.
//
// Every request to the Kubernetes API is made with the clients a
// ClientSource gives for that request, so the dashboard adds no privilege:
// what RBAC refuses the user is refused on the page, with the API server's
// own status. The local server (kubectl training dashboard) uses the
// kubeconfig's credentials; an in-cluster server would give each request a
// client built from that user's bearer token instead.
//
// The server guards itself as Jupyter does: a random token in the URL it
// prints is exchanged for an HttpOnly, SameSite=Strict session cookie; every
// mutating request must carry the session's CSRF token in a header and come
// from the server's own origin; pages are served under a Content-Security-
// Policy that allows no inline script.
package dashboard
