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
	"net/http"

	"k8s.io/client-go/kubernetes"

	"tensorstack.dev/training/pkg/generated/clientset/versioned"
)

// Clients reach the Kubernetes API as one user.
type Clients struct {
	// Training talks to batch.tensorstack.dev.
	Training versioned.Interface
	// Kube talks to the core API: pods, their logs, events.
	Kube kubernetes.Interface
	// Namespace is where the user works when a request names none, and the
	// one the job list falls back to when the user may not list jobs across
	// namespaces.
	Namespace string
}

// ClientSource gives the clients that serve one request. It is the seam
// between the dashboard and whose credentials it uses: the local server has
// one user, the kubeconfig's; a server in the cluster would build clients from
// the bearer token the request carries, and never use its own.
type ClientSource interface {
	ClientsFor(r *http.Request) (Clients, error)
}

// StaticClients is the ClientSource of the local dashboard: every request is
// the kubeconfig's user's.
type StaticClients Clients

// ClientsFor returns the same clients for every request.
func (s StaticClients) ClientsFor(*http.Request) (Clients, error) {
	return Clients(s), nil
}
