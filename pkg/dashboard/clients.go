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
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"tensorstack.dev/training/pkg/generated/clientset/versioned"
	"tensorstack.dev/training/pkg/kueueview"
)

// Clients reach the Kubernetes API as one user.
type Clients struct {
	// Training talks to batch.tensorstack.dev.
	Training versioned.Interface
	// Kube talks to the core API: pods, their logs, events.
	Kube kubernetes.Interface
	// Kueue talks to kueue.x-k8s.io and its visibility API, for the
	// Queues page; nil where the dashboard was built without it.
	Kueue kueueview.Client
	// Namespace is where the user works when a request names none, and the
	// one the job list falls back to when the user may not list jobs across
	// namespaces.
	Namespace string
}

// ClientSource gives the clients that serve one request. It is the seam
// between the dashboard and whose credentials it uses: the local server has
// one user, the kubeconfig's (StaticClients); the server in the cluster builds
// them from the bearer token of the request's user, and never uses its own
// (TokenClients).
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

// TokenClients is the ClientSource of the dashboard in the cluster: each
// request's clients carry the bearer token of the user who sent it (the
// guard puts it in the request's context), and nothing of the dashboard's own
// ServiceAccount.
type TokenClients struct {
	// Config reaches the API server; whatever credentials it holds are
	// dropped, only its address and CA are used.
	Config *rest.Config
	// Namespace is where users work when a request names none.
	Namespace string
}

// ClientsFor returns clients that act as the request's user.
func (t TokenClients) ClientsFor(r *http.Request) (Clients, error) {
	token := BearerToken(r.Context())
	if token == "" {
		return Clients{}, apierrors.NewUnauthorized("not signed in: sign in with your bearer token")
	}
	return t.clients(token)
}

// config reaches the API server as token's user, with nothing of the
// dashboard's own credentials.
func (t TokenClients) config(token string) *rest.Config {
	config := rest.AnonymousClientConfig(t.Config)
	config.BearerToken = token
	return config
}

func (t TokenClients) clients(token string) (Clients, error) {
	config := t.config(token)
	training, err := versioned.NewForConfig(config)
	if err != nil {
		return Clients{}, err
	}
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return Clients{}, err
	}
	kueue, err := kueueview.NewForConfig(config)
	if err != nil {
		return Clients{}, err
	}
	return Clients{Training: training, Kube: kube, Kueue: kueue, Namespace: t.Namespace}, nil
}

// Verify asks the API server whom token authenticates (a SelfSubjectReview,
// which every authenticated user may create) and returns the user's name; a
// token the cluster refuses is its 401.
func (t TokenClients) Verify(ctx context.Context, token string) (string, error) {
	// The core client only: every forged token of a flood is verified.
	kube, err := kubernetes.NewForConfig(t.config(token))
	if err != nil {
		return "", err
	}
	review, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return review.Status.UserInfo.Username, nil
}
