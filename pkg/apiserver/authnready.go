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
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/apiserver/pkg/server/healthz"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

// Where kube-apiserver publishes the CA bundles and request-header settings
// that delegated authentication reads.
const (
	authenticationConfigMapNamespace = metav1.NamespaceSystem
	authenticationConfigMapName      = "extension-apiserver-authentication"
	clientCAKey                      = "client-ca-file"
	requestHeaderCAKey               = "requestheader-client-ca-file"
)

const (
	// authnSyncPeriod is how often the server looks whether the CA bundles
	// have arrived.
	authnSyncPeriod = 50 * time.Millisecond
	// authnRetryAfterSeconds is what a request refused while they load is
	// told to wait.
	authnRetryAfterSeconds = 1
)

// authnSources holds the CA bundles of delegated authentication that come
// from the extension-apiserver-authentication ConfigMap.
//
// k8s.io/apiserver fills those bundles from an informer that only starts
// with the secure server: its "initial population" (RunOnce) reads the
// informer's still empty cache, so for the first LIST round trip to
// kube-apiserver, and the informer's 100ms sync poll, client certificates
// (the aggregator's front-proxy certificate included) cannot be verified.
// Such requests fall through to system:anonymous and are refused with 403.
//
// Until every bundle the ConfigMap has is loaded, the server answers API
// requests with 503 and Retry-After, which clients retry, and /readyz
// reports not ready; the health paths answer as usual.
type authnSources struct {
	// client reads the ConfigMap, to know which bundles to wait for.
	client kubernetes.Interface
	// providers are the ConfigMap-backed bundles by their key.
	providers map[string]dynamiccertificates.CAContentProvider
	synced    chan struct{}
}

// prepareAuthnSources makes the client CA of delegated authentication one
// the server can watch for, when it comes from the ConfigMap. It must be
// called before the authentication options are applied; it returns nil when
// no bundle comes from the ConfigMap.
func prepareAuthnSources(authn *genericoptions.DelegatingAuthenticationOptions) (*authnSources, error) {
	if authn == nil || authn.SkipInClusterLookup {
		return nil, nil
	}
	client, err := delegatedAuthenticationClient(authn)
	if err != nil || client == nil {
		// Applying the options reports the error.
		return nil, nil //nolint:nilerr
	}
	s := &authnSources{client: client, providers: map[string]dynamiccertificates.CAContentProvider{}, synced: make(chan struct{})}
	if authn.ClientCert == (genericoptions.ClientCertAuthenticationOptions{}) {
		// What the options would build themselves, made here so the server
		// can see when it is loaded.
		clientCA, err := dynamiccertificates.NewDynamicCAFromConfigMapController("client-ca",
			authenticationConfigMapNamespace, authenticationConfigMapName, clientCAKey, client)
		if err != nil {
			return nil, fmt.Errorf("unable to load configmap based client CA file: %w", err)
		}
		authn.ClientCert.CAContentProvider = clientCA
		s.providers[clientCAKey] = clientCA
	}
	return s, nil
}

// delegatedAuthenticationClient is the client the authentication options
// build to reach kube-apiserver: from --authentication-kubeconfig, else the
// in-cluster configuration.
func delegatedAuthenticationClient(authn *genericoptions.DelegatingAuthenticationOptions) (kubernetes.Interface, error) {
	var config *rest.Config
	var err error
	if authn.RemoteKubeConfigFile != "" {
		loadingRules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: authn.RemoteKubeConfigFile}
		config, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loadingRules, &clientcmd.ConfigOverrides{}).ClientConfig()
	} else {
		config, err = rest.InClusterConfig()
		if err != nil && authn.RemoteKubeConfigFileOptional {
			return nil, nil
		}
	}
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(config)
}

// complete adds the request-header CA bundle, if the applied options read it
// from the ConfigMap, and says whether there is anything to wait for.
func (s *authnSources) complete(config *genericapiserver.Config) bool {
	if s == nil {
		return false
	}
	if rh := config.Authentication.RequestHeaderConfig; rh != nil {
		if provider, ok := rh.CAContentProvider.(*genericoptions.DynamicRequestHeaderController); ok {
			s.providers[requestHeaderCAKey] = provider
		}
	}
	return len(s.providers) > 0
}

// install puts the gate in front of the handler chain and the check into
// /readyz.
func (s *authnSources) install(config *genericapiserver.Config) {
	buildChain := config.BuildHandlerChainFunc
	config.BuildHandlerChainFunc = func(handler http.Handler, c *genericapiserver.Config) http.Handler {
		return s.gate(buildChain(handler, c))
	}
	config.AddReadyzChecks(healthz.NamedCheck("authentication-sources", func(*http.Request) error {
		if !s.isSynced() {
			return errors.New("the client CA bundles of delegated authentication are not loaded yet")
		}
		return nil
	}))
}

// start waits in the background until the bundles are loaded. The bundles'
// own controllers start with the secure server, before the post-start hooks.
func (s *authnSources) start(server *genericapiserver.GenericAPIServer) error {
	return server.AddPostStartHook("authentication-sources", func(ctx genericapiserver.PostStartHookContext) error {
		go s.waitSynced(ctx)
		return nil
	})
}

func (s *authnSources) isSynced() bool {
	select {
	case <-s.synced:
		return true
	default:
		return false
	}
}

// waitSynced closes synced once every bundle that the ConfigMap has is
// loaded. A bundle the ConfigMap lacks is not waited for: kube-apiserver
// does not authenticate that way.
func (s *authnSources) waitSynced(ctx context.Context) {
	begin := time.Now()
	var expected []string
	err := wait.PollUntilContextCancel(ctx, authnSyncPeriod, true, func(ctx context.Context) (bool, error) {
		if expected == nil {
			getCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			configMap, err := s.client.CoreV1().ConfigMaps(authenticationConfigMapNamespace).Get(getCtx, authenticationConfigMapName, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				expected = []string{}
			case err != nil:
				klog.V(2).InfoS("Reading the authentication ConfigMap", "err", err)
				return false, nil
			default:
				expected = []string{}
				for key := range s.providers {
					if strings.TrimSpace(configMap.Data[key]) != "" {
						expected = append(expected, key)
					}
				}
				sort.Strings(expected)
			}
		}
		for _, key := range expected {
			if len(s.providers[key].CurrentCABundleContent()) == 0 {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return
	}
	klog.InfoS("Authentication sources loaded; serving API requests", "bundles", expected, "after", time.Since(begin))
	close(s.synced)
}

// gate answers 503 with Retry-After to everything but the health checks
// until the bundles are loaded.
func (s *authnSources) gate(handler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.isSynced() || isHealthPath(r.URL.Path) {
			handler.ServeHTTP(w, r)
			return
		}
		err := apierrors.NewServiceUnavailable("the server is loading its authentication configuration, try again shortly")
		err.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: authnRetryAfterSeconds}
		w.Header().Set("Retry-After", fmt.Sprint(authnRetryAfterSeconds))
		writeStatus(w, err)
	})
}

// isHealthPath says whether path is /healthz, /livez, /readyz or one of
// their individual checks.
func isHealthPath(path string) bool {
	for _, health := range []string{"/healthz", "/livez", "/readyz"} {
		if path == health || strings.HasPrefix(path, health+"/") {
			return true
		}
	}
	return false
}
