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

package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericoptions "k8s.io/apiserver/pkg/server/options"

	"tensorstack.dev/training/pkg/apiserver"
)

// The identities the fake kube-apiserver knows.
const (
	startupProxyName     = "front-proxy-client" // CN of the aggregator's front-proxy certificate
	startupProxiedUser   = "controller-via-aggregator"
	startupCertUser      = "controller-with-cert"
	startupToken         = "controller-token"
	startupTokenUser     = "controller-with-token"
	startupAnonymousUser = "system:anonymous"
)

// TestStartupRefusesNoAuthenticatedRequest starts the server with delegated
// authentication and authorization as a deployment has them (the CA bundles
// and request-header settings from kube-system/extension-apiserver-
// authentication, TokenReview and SubjectAccessReview, all from a fake
// kube-apiserver) and sends authenticated requests from the moment its port
// accepts connections: through the aggregator's front proxy, with a client
// certificate and with a token. None may be refused with 401 or 403; a 503
// with Retry-After, which clients retry, is allowed while the server loads
// its authentication configuration, and /readyz must not report ready while
// the server still answers so.
func TestStartupRefusesNoAuthenticatedRequest(t *testing.T) {
	pki := newStartupPKI(t)
	kube := startFakeKubeAPIServer(t, pki, 300*time.Millisecond)

	listener, port, err := genericoptions.CreateListener("tcp", "127.0.0.1:0", net.ListenConfig{})
	if err != nil {
		t.Fatalf("listening: %v", err)
	}
	options := apiserver.NewOptions()
	options.EmbeddedEtcdDir = t.TempDir()
	recommended := options.RecommendedOptions
	recommended.SecureServing.Listener = listener
	recommended.SecureServing.BindPort = port
	recommended.SecureServing.ServerCert.CertDirectory = t.TempDir()
	// As in artifacts/deploy/base/apiserver.yaml.
	options.AnonymousAuth = false
	recommended.Authentication.RemoteKubeConfigFile = kube.kubeconfig
	recommended.Authorization.RemoteKubeConfigFile = kube.kubeconfig
	recommended.Authorization.AlwaysAllowPaths = []string{"/healthz", "/readyz", "/livez"}
	// What needs more of a kube-apiserver than authentication and
	// authorization is off, as in the framework's standalone servers.
	recommended.CoreAPI = nil
	recommended.Admission = nil
	recommended.Features.EnablePriorityAndFairness = false

	if err := options.Validate(); err != nil {
		t.Fatalf("validating options: %v", err)
	}
	config, err := options.Config()
	if err != nil {
		t.Fatalf("configuring server: %v", err)
	}
	server, err := config.Complete().New()
	if err != nil {
		t.Fatalf("building server: %v", err)
	}

	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	apiPath := "/apis/batch.tensorstack.dev/v1beta1/namespaces/default/tensorflowtrainingjobs"
	clients := []startupClient{
		{name: "front proxy", client: pki.httpClient(t, pki.proxyCert), header: http.Header{
			"X-Remote-User":  {startupProxiedUser},
			"X-Remote-Group": {"system:authenticated"},
		}},
		{name: "client certificate", client: pki.httpClient(t, pki.userCert)},
		{name: "token", client: pki.httpClient(t, nil), header: http.Header{"Authorization": {"Bearer " + startupToken}}},
	}
	readyzClient := pki.httpClient(t, nil)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	results := make([][]startupResult, len(clients))
	var readyz []startupResult
	// Each client stops once it has had 20 answers of 200.
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = clients[i].hammer(ctx, base+apiPath, start, 20)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		readyz = startupClient{name: "readyz", client: readyzClient}.hammer(ctx, base+"/readyz", start, 5)
	}()

	runCtx, stopServer := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.Run(runCtx) }()
	t.Cleanup(func() {
		stopServer()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("server stopped with error: %v", err)
			}
		case <-time.After(time.Minute):
			t.Errorf("server did not stop within a minute")
		}
	})

	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(90 * time.Second):
		cancel()
		<-waited
		t.Errorf("the clients did not get their answers within 90s")
	}

	// A readyz answer of 200 that ended before an API request started means
	// the server was ready for that request.
	var firstReady time.Duration = -1
	for _, r := range readyz {
		if r.code == http.StatusOK && (firstReady < 0 || r.end < firstReady) {
			firstReady = r.end
		}
	}
	for i, c := range clients {
		counts := map[int]int{}
		var bad []string
		var firstBad, lastBad time.Duration
		for _, r := range results[i] {
			counts[r.code]++
			problem := ""
			switch {
			case r.code == http.StatusUnauthorized || r.code == http.StatusForbidden:
				problem = fmt.Sprintf("%d", r.code)
			case r.code == http.StatusServiceUnavailable && r.retryAfter == "":
				problem = "503 without Retry-After"
			case r.code == http.StatusServiceUnavailable && firstReady >= 0 && r.start > firstReady:
				problem = fmt.Sprintf("503 after /readyz answered 200 at %v", firstReady.Round(time.Millisecond))
			case r.code != http.StatusOK && r.code != http.StatusServiceUnavailable:
				problem = fmt.Sprintf("unexpected %d", r.code)
			}
			if problem == "" {
				continue
			}
			if len(bad) == 0 {
				firstBad = r.start
			}
			lastBad = r.end
			if len(bad) < 3 {
				bad = append(bad, fmt.Sprintf("%s at %v: %s", problem, r.start.Round(time.Millisecond), r.body))
			} else {
				bad = append(bad, "")
			}
		}
		t.Logf("%s: answers by status %v", c.name, counts)
		if len(bad) > 0 {
			t.Errorf("%s: %d bad answers between %v and %v after start, the first:\n%s", c.name, len(bad),
				firstBad.Round(time.Millisecond), lastBad.Round(time.Millisecond), strings.Join(bad[:min(3, len(bad))], "\n"))
		}
	}
	readyCounts := map[int]int{}
	for _, r := range readyz {
		readyCounts[r.code]++
	}
	t.Logf("/readyz: answers by status %v, first 200 at %v", readyCounts, firstReady.Round(time.Millisecond))
	t.Logf("fake kube-apiserver: %s", kube.summary())
}

// startupClient sends one kind of authenticated request.
type startupClient struct {
	name   string
	client *http.Client
	header http.Header
}

// startupResult is one answer, its times relative to the test's start.
type startupResult struct {
	start, end time.Duration
	code       int
	retryAfter string
	body       string
}

// hammer sends GETs to url one after the other, from before the server
// serves, until it has had wantOK answers of 200 or ctx ends. Requests that
// get no answer (the server is not serving yet) are retried at once.
func (c startupClient) hammer(ctx context.Context, url string, start time.Time, wantOK int) []startupResult {
	var results []startupResult
	ok := 0
	for ok < wantOK && ctx.Err() == nil {
		reqCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, url, nil)
		if err != nil {
			cancel()
			panic(err)
		}
		for k, v := range c.header {
			req.Header[k] = v
		}
		begin := time.Since(start)
		resp, err := c.client.Do(req)
		if err != nil {
			cancel()
			time.Sleep(2 * time.Millisecond)
			continue
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
		cancel()
		results = append(results, startupResult{
			start: begin, end: time.Since(start), code: resp.StatusCode,
			retryAfter: resp.Header.Get("Retry-After"), body: strings.TrimSpace(string(body)),
		})
		if resp.StatusCode == http.StatusOK {
			ok++
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
	return results
}

// startupPKI holds the certificates of a cluster: the client CA, the
// front-proxy CA and a certificate signed by each.
type startupPKI struct {
	clientCA, proxyCA   []byte // PEM
	userCert, proxyCert *tls.Certificate
}

func newStartupPKI(t *testing.T) *startupPKI {
	t.Helper()
	clientCA, clientCAKey, clientCAPEM := newStartupCA(t, "client-ca")
	proxyCA, proxyCAKey, proxyCAPEM := newStartupCA(t, "front-proxy-ca")
	return &startupPKI{
		clientCA:  clientCAPEM,
		proxyCA:   proxyCAPEM,
		userCert:  newStartupClientCert(t, clientCA, clientCAKey, startupCertUser),
		proxyCert: newStartupClientCert(t, proxyCA, proxyCAKey, startupProxyName),
	}
}

func newStartupCA(t *testing.T, name string) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func newStartupClientCert(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, name string) *tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: name, Organization: []string{"system:authenticated"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// httpClient returns a client of its own (its own connections) that
// presents cert, if any, whichever CAs the server names in its handshake, as
// kube-apiserver's proxy does. The server's certificate is self-signed.
func (p *startupPKI) httpClient(t *testing.T, cert *tls.Certificate) *http.Client {
	tlsConfig := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the test server's self-signed certificate
	if cert != nil {
		tlsConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	transport := &http.Transport{TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true, TLSHandshakeTimeout: 5 * time.Second}
	t.Cleanup(transport.CloseIdleConnections)
	return &http.Client{Transport: transport}
}

// fakeKubeAPIServer answers what delegated authentication and authorization
// ask of kube-apiserver.
type fakeKubeAPIServer struct {
	kubeconfig string

	mu                      sync.Mutex
	lists, gets, watches    int
	tokenReviews, sars      int
	deniedUsers             map[string]int
	firstListAt, firstGetAt time.Time
}

// startFakeKubeAPIServer serves the extension-apiserver-authentication
// ConfigMap, TokenReview and SubjectAccessReview on 127.0.0.1. A LIST of
// ConfigMaps (what an informer does first) takes listDelay, as it may on a
// busy kube-apiserver. SubjectAccessReview allows every user but
// system:anonymous.
func startFakeKubeAPIServer(t *testing.T, pki *startupPKI, listDelay time.Duration) *fakeKubeAPIServer {
	t.Helper()
	f := &fakeKubeAPIServer{deniedUsers: map[string]int{}}
	configMap := corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "extension-apiserver-authentication", Namespace: "kube-system", ResourceVersion: "7"},
		Data: map[string]string{
			"client-ca-file":                     string(pki.clientCA),
			"requestheader-client-ca-file":       string(pki.proxyCA),
			"requestheader-allowed-names":        `["` + startupProxyName + `"]`,
			"requestheader-username-headers":     `["X-Remote-User"]`,
			"requestheader-group-headers":        `["X-Remote-Group"]`,
			"requestheader-extra-headers-prefix": `["X-Remote-Extra-"]`,
			"requestheader-uid-headers":          `["X-Remote-Uid"]`,
		},
	}
	stop := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication", func(w http.ResponseWriter, r *http.Request) {
		f.count(&f.gets, &f.firstGetAt)
		writeFakeJSON(w, configMap)
	})
	mux.HandleFunc("GET /api/v1/namespaces/kube-system/configmaps", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") == "true" {
			initialEvents := r.URL.Query().Get("sendInitialEvents") == "true"
			if initialEvents { // client-go's streaming list
				f.count(&f.lists, &f.firstListAt)
				select {
				case <-time.After(listDelay):
				case <-r.Context().Done():
					return
				}
			} else {
				f.count(&f.watches, nil)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			if initialEvents {
				encoder := json.NewEncoder(w)
				_ = encoder.Encode(metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Object: &configMap}})
				_ = encoder.Encode(metav1.WatchEvent{Type: "BOOKMARK", Object: runtime.RawExtension{Object: &corev1.ConfigMap{
					TypeMeta: configMap.TypeMeta,
					ObjectMeta: metav1.ObjectMeta{ResourceVersion: configMap.ResourceVersion,
						Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}},
				}}})
			}
			http.NewResponseController(w).Flush() //nolint:errcheck
			select {
			case <-r.Context().Done():
			case <-stop:
			}
			return
		}
		f.count(&f.lists, &f.firstListAt)
		select {
		case <-time.After(listDelay):
		case <-r.Context().Done():
			return
		}
		writeFakeJSON(w, corev1.ConfigMapList{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"},
			ListMeta: metav1.ListMeta{ResourceVersion: "7"},
			Items:    []corev1.ConfigMap{configMap},
		})
	})
	mux.HandleFunc("POST /apis/authentication.k8s.io/v1/tokenreviews", func(w http.ResponseWriter, r *http.Request) {
		f.count(&f.tokenReviews, nil)
		var review authenticationv1.TokenReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if review.Spec.Token == startupToken {
			review.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{
				Username: startupTokenUser, Groups: []string{"system:authenticated"},
			}}
		}
		writeFakeJSON(w, review)
	})
	mux.HandleFunc("POST /apis/authorization.k8s.io/v1/subjectaccessreviews", func(w http.ResponseWriter, r *http.Request) {
		var review authorizationv1.SubjectAccessReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.sars++
		review.Status.Allowed = review.Spec.User != "" && review.Spec.User != startupAnonymousUser
		if !review.Status.Allowed {
			f.deniedUsers[review.Spec.User]++
			review.Status.Reason = "fake kube-apiserver: anonymous requests are not allowed"
		}
		f.mu.Unlock()
		writeFakeJSON(w, review)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		t.Logf("fake kube-apiserver: unexpected %s %s", r.Method, r.URL)
		http.NotFound(w, r)
	})

	server := httptest.NewUnstartedServer(mux)
	server.EnableHTTP2 = true
	server.StartTLS()
	t.Cleanup(server.Close)
	t.Cleanup(func() { close(stop) }) // first: ends the open watches

	serverCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: training-apiserver
  user:
    token: training-apiserver-token
contexts:
- name: fake
  context: {cluster: fake, user: training-apiserver}
current-context: fake
`, server.URL, base64.StdEncoding.EncodeToString(serverCA))
	f.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(f.kubeconfig, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fakeKubeAPIServer) count(n *int, first *time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	*n++
	if first != nil && first.IsZero() {
		*first = time.Now()
	}
}

func (f *fakeKubeAPIServer) summary() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fmt.Sprintf("%d ConfigMap GETs, %d LISTs, %d WATCHes, %d TokenReviews, %d SubjectAccessReviews, denied %v",
		f.gets, f.lists, f.watches, f.tokenReviews, f.sars, f.deniedUsers)
}

func writeFakeJSON(w http.ResponseWriter, obj any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(obj)
}
