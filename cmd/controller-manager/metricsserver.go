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

package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/certs"
)

// The metrics endpoint serves HTTPS, and answers only a request whose bearer
// token kube-apiserver accepts (a TokenReview) from a user it allows to get
// the path (a SubjectAccessReview of the non-resource URL, as the ClusterRole
// training-metrics-reader grants for /metrics): the delegated authentication
// and authorization of kube-controller-manager and of Kueue's metrics.
// Profiles are served there only with --profiling, behind the same checks.
// Plain HTTP without checks is an explicit choice for a local stack
// (--metrics-secure=false).

const (
	// authCacheTTL is how long a token's review and an access decision are
	// reused: a scrape every few seconds then costs kube-apiserver one
	// review of each kind per TTL.
	authCacheTTL = 10 * time.Second
	// authReviewTimeout bounds a review, so that a slow kube-apiserver
	// fails a scrape instead of holding it.
	authReviewTimeout = 10 * time.Second
)

// metricsEndpoint is what serves the metrics: its handler and, when
// secure, its TLS configuration.
type metricsEndpoint struct {
	handler http.Handler
	tls     *tls.Config
}

// newMetricsEndpoint builds the endpoint the options ask for. Reviews go
// through kube, which must be a client that writes while standing by: a
// review is a create.
func newMetricsEndpoint(ctx context.Context, logger klog.Logger, opts *options, kube kubernetes.Interface) (*metricsEndpoint, error) {
	h := metricsMux(opts.profiling)
	if !opts.metricsSecure {
		logger.Info("Serving metrics over plain HTTP without authentication (--metrics-secure=false)")
		return &metricsEndpoint{handler: h}, nil
	}
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:                &apiserver.AnonymousAuthConfig{Enabled: false},
		TokenAccessReviewClient:  kube.AuthenticationV1(),
		TokenAccessReviewTimeout: authReviewTimeout,
		WebhookRetryBackoff:      genericoptions.DefaultAuthWebhookRetryBackoff(),
		CacheTTL:                 authCacheTTL,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("building the metrics authenticator: %w", err)
	}
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: kube.AuthorizationV1(),
		AllowCacheTTL:             authCacheTTL,
		DenyCacheTTL:              authCacheTTL,
		WebhookRetryBackoff:       genericoptions.DefaultAuthWebhookRetryBackoff(),
	}.New()
	if err != nil {
		return nil, fmt.Errorf("building the metrics authorizer: %w", err)
	}
	cert, err := metricsCertificate(ctx, logger, opts.metricsCertDir)
	if err != nil {
		return nil, err
	}
	return &metricsEndpoint{
		handler: withDelegatedAuth(logger, h, authn, authz),
		tls:     &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: cert, NextProtos: []string{"h2", "http/1.1"}},
	}, nil
}

// metricsMux serves /metrics, and /debug/pprof when profiling.
func metricsMux(profiling bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", legacyregistry.Handler())
	if profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// withDelegatedAuth lets a request through once kube-apiserver has said who
// sent it and that they may get its path: 401 without a token it accepts,
// 403 without the permission, 500 when it cannot be asked.
func withDelegatedAuth(logger klog.Logger, next http.Handler, authn authenticator.Request, authz authorizer.Authorizer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, ok, err := authn.AuthenticateRequest(r)
		if err != nil {
			logger.V(2).Info("Refused a metrics request: authentication failed", "err", err)
		}
		if !ok || err != nil {
			http.Error(w, "Unauthorized: a bearer token that kube-apiserver accepts is needed", http.StatusUnauthorized)
			return
		}
		attrs := authorizer.AttributesRecord{
			User: res.User, Verb: strings.ToLower(r.Method), Path: r.URL.Path, ResourceRequest: false,
		}
		decision, reason, err := authz.Authorize(r.Context(), attrs)
		if err != nil {
			logger.Error(err, "Could not authorize a metrics request", "user", res.User.GetName(), "path", r.URL.Path)
			http.Error(w, "authorization could not be checked", http.StatusInternalServerError)
			return
		}
		if decision != authorizer.DecisionAllow {
			msg := fmt.Sprintf("Forbidden: user %q may not %s %s", res.User.GetName(), attrs.Verb, attrs.Path)
			if reason != "" {
				msg += ": " + reason
			}
			http.Error(w, msg, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// metricsCertificate serves tls.crt and tls.key of certDir, read again
// when they change (a mounted Secret that cert-manager renews), or, with no
// directory, a self-signed certificate made at start-up, as
// kube-controller-manager does: scrapers then skip verification and rely
// on the token.
func metricsCertificate(ctx context.Context, logger klog.Logger, certDir string) (func(*tls.ClientHelloInfo) (*tls.Certificate, error), error) {
	if certDir == "" {
		host, _ := os.Hostname()
		cert, err := certs.SelfSigned(component, host, "localhost")
		if err != nil {
			return nil, fmt.Errorf("making the metrics endpoint's self-signed certificate: %w", err)
		}
		logger.Info("Serving metrics with a self-signed certificate (no --metrics-cert-dir)")
		return func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cert, nil }, nil
	}
	files, err := dynamiccertificates.NewDynamicServingContentFromFiles("metrics-serving-cert",
		filepath.Join(certDir, "tls.crt"), filepath.Join(certDir, "tls.key"))
	if err != nil {
		return nil, fmt.Errorf("reading the metrics endpoint's certificate from %s: %w", certDir, err)
	}
	go files.Run(ctx, 1)
	var (
		mu         sync.Mutex
		parsedFrom []byte
		parsed     *tls.Certificate
	)
	return func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		certPEM, keyPEM := files.CurrentCertKeyContent()
		content := bytes.Join([][]byte{certPEM, keyPEM}, nil)
		mu.Lock()
		defer mu.Unlock()
		if parsed != nil && bytes.Equal(parsedFrom, content) {
			return parsed, nil
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("the certificate in %s: %w", certDir, err)
		}
		parsedFrom, parsed = content, &cert
		return parsed, nil
	}, nil
}
