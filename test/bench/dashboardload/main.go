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

// Command dashboard-load is the load test of make bench-dashboard
// (hack/bench-dashboard.sh), run against the local control plane: it serves
// the dashboard as the release does in the cluster (kubectl training
// dashboard --in-cluster, every user signing in with their own token), signs
// a real user in, and then, at once,
//
//   - sends -forged sign-ins with tokens the API server refuses, half at the
//     sign-in page and half as a proxy's Authorization header, from -sources
//     loopback addresses (so that the per-address limit lets some through to
//     the API server);
//   - opens -streams event streams of the job list, signed in as other users
//     (ServiceAccounts), -stalled of which are never read.
//
// It samples the server's resident memory throughout and fails unless the
// real user is still signed in, no forged token got a session and the
// memory stayed under -memory-limit, the release's limit. It prints a
// markdown table, also written to -out.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"tensorstack.dev/training/pkg/certs"
	clientset "tensorstack.dev/training/pkg/generated/clientset/versioned"
	"tensorstack.dev/training/test/bench/internal/benchkit"
)

// namespace holds the load test's ServiceAccounts.
const namespace = "bench-dashboard-load"

type options struct {
	plugin      string
	jobs        int
	forged      int
	sources     int
	streams     int
	stalled     int
	users       int
	hold        time.Duration
	memoryLimit string
	out         string
}

func main() {
	var o options
	flag.StringVar(&o.plugin, "kubectl-training", "_output/bin/kubectl-training", "the plugin that serves the dashboard")
	flag.IntVar(&o.jobs, "jobs", 1000, "paused jobs the streams list")
	flag.IntVar(&o.forged, "forged", 10000, "sign-ins with tokens the API server refuses")
	flag.IntVar(&o.sources, "sources", 200, "loopback addresses the forged sign-ins come from")
	flag.IntVar(&o.streams, "streams", 200, "event streams of the job list")
	flag.IntVar(&o.stalled, "stalled", 20, "of the streams, how many are never read")
	flag.DurationVar(&o.hold, "hold", 30*time.Second, "how long the streams stay open, from when the flood starts")
	flag.IntVar(&o.users, "users", 5, "ServiceAccounts the streams are opened as (16 sessions of 8 streams each at most)")
	// artifacts/deploy/components/dashboard/dashboard.yaml's limit.
	flag.StringVar(&o.memoryLimit, "memory-limit", "256Mi", "the dashboard container's memory limit")
	flag.StringVar(&o.out, "out", "", "also write the table here")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "dashboard-load: %v\n", err)
		os.Exit(1)
	}
}

func run(o options) error {
	limit, err := resource.ParseQuantity(o.memoryLimit)
	if err != nil {
		return fmt.Errorf("-memory-limit: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(),
		&clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	tokens, err := serviceAccountTokens(ctx, kube, o.users+1)
	if err != nil {
		return err
	}
	if err := createJobs(ctx, config, o.jobs); err != nil {
		return err
	}
	server, err := startDashboard(ctx, o.plugin, config.Host, config.TLSClientConfig.CAData, config.TLSClientConfig.CAFile)
	if err != nil {
		return err
	}
	defer server.stop()

	// The real user signs in before the flood.
	real, err := server.signIn(tokens[0], nil)
	if err != nil {
		return fmt.Errorf("the real user's sign-in: %w", err)
	}
	peak := server.sampleMemory(ctx)
	start := time.Now()
	var wg sync.WaitGroup
	var streamResult streamsResult
	wg.Add(1)
	go func() {
		defer wg.Done()
		streamResult = server.openStreams(ctx, tokens[1:], o.streams, o.stalled, o.hold)
	}()
	forgedResult := server.forge(ctx, o.forged, o.sources)
	wg.Wait()
	elapsed := time.Since(start)

	signedIn := real.stillSignedIn()
	peakBytes := peak()
	report := fmt.Sprintf(`| measure | value |
|---|---|
| forged sign-ins (page / proxy header), from %d addresses | %d (%d / %d) |
| answered 401 (the API server refused the token) | %d |
| answered 429 (too many from one address) | %d |
| answered otherwise | %d |
| sessions forged tokens got | %d |
| streams opened (for %s), of them not read | %d, %d |
| streams refused | %d |
| what the streams read carried | %.1f MiB |
| the real user still signed in | %v |
| the server's peak resident memory | %.1f MiB (limit %s) |
| the whole load | %.1f s |
`, o.sources, forgedResult.total, forgedResult.page, forgedResult.header, forgedResult.unauthorized, forgedResult.tooMany,
		forgedResult.other, forgedResult.cookies, o.hold, streamResult.opened, streamResult.stalled, streamResult.refused,
		float64(streamResult.bytes)/(1<<20), signedIn,
		float64(peakBytes)/(1<<20), o.memoryLimit, elapsed.Seconds())
	fmt.Print(report)
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(report), 0o644); err != nil {
			return err
		}
	}
	var failures []string
	if !signedIn {
		failures = append(failures, "the real user was signed out")
	}
	if forgedResult.cookies > 0 {
		failures = append(failures, fmt.Sprintf("%d forged sign-ins got a session", forgedResult.cookies))
	}
	if peakBytes >= limit.Value() {
		failures = append(failures, fmt.Sprintf("the server's memory reached %d bytes, over its limit %s", peakBytes, o.memoryLimit))
	}
	if len(failures) > 0 {
		return errors.New(strings.Join(failures, "; "))
	}
	return nil
}

// serviceAccountTokens makes n ServiceAccounts that may read training jobs
// (the view role) and returns a token of each.
func serviceAccountTokens(ctx context.Context, kube kubernetes.Interface, n int) ([]string, error) {
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	var tokens []string
	for i := range n {
		name := fmt.Sprintf("user-%d", i)
		_, err := kube.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: namespace + "-" + name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}},
		}
		if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
		request, err := kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		tokens = append(tokens, request.Status.Token)
	}
	return tokens, nil
}

// createJobs makes n paused jobs (so no pod) in the namespace, for the
// streams to list, unless they exist.
func createJobs(ctx context.Context, config *rest.Config, n int) error {
	config = rest.CopyConfig(config)
	config.QPS, config.Burst = 200, 400
	training, err := clientset.NewForConfig(config)
	if err != nil {
		return err
	}
	for i := range n {
		job := benchkit.OurJob(namespace, fmt.Sprintf("load-%d", i), benchkit.JobOptions{Paused: true})
		_, err := training.BatchV1beta1().TensorFlowTrainingJobs(namespace).Create(ctx, job, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating job %d of %d: %w", i+1, n, err)
		}
	}
	return nil
}

// dashboard is the dashboard's server, as it runs in the cluster.
type dashboard struct {
	cmd  *exec.Cmd
	dir  string
	url  string
	root *x509.CertPool
}

// startDashboard serves the dashboard on a free loopback port with a
// certificate made here, reaching the API server at host as a Pod reaches
// its Service.
func startDashboard(ctx context.Context, plugin, host string, caData []byte, caFile string) (*dashboard, error) {
	dir, err := os.MkdirTemp("", "dashboard-load-")
	if err != nil {
		return nil, err
	}
	d := &dashboard{dir: dir}
	if len(caData) == 0 {
		if caData, err = os.ReadFile(caFile); err != nil {
			return nil, err
		}
	}
	apiCA := filepath.Join(dir, "api-ca.crt")
	if err := os.WriteFile(apiCA, caData, 0o600); err != nil {
		return nil, err
	}
	certificate, err := certs.SelfSigned("dashboard-load", "127.0.0.1")
	if err != nil {
		return nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certificate.Certificate[0]})
	keyDER, err := x509.MarshalPKCS8PrivateKey(certificate.PrivateKey)
	if err != nil {
		return nil, err
	}
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	d.root = x509.NewCertPool()
	d.root.AppendCertsFromPEM(certPEM)

	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	address := listener.Addr().String()
	listener.Close()
	apiHost, apiPort, err := net.SplitHostPort(strings.TrimPrefix(host, "https://"))
	if err != nil {
		return nil, fmt.Errorf("the API server's address %q: %w", host, err)
	}
	d.cmd = exec.CommandContext(ctx, plugin, "dashboard", "--in-cluster", "-n", namespace, "--listen", address,
		"--tls-cert-file", certFile, "--tls-private-key-file", keyFile, "--api-ca-file", apiCA)
	d.cmd.Env = append(os.Environ(), "KUBERNETES_SERVICE_HOST="+apiHost, "KUBERNETES_SERVICE_PORT="+apiPort)
	d.cmd.Stderr = os.Stderr
	if err := d.cmd.Start(); err != nil {
		return nil, err
	}
	d.url = "https://" + address
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := d.client(nil, nil).Get(d.url + "/api/signin")
		if err == nil {
			resp.Body.Close()
			return d, nil
		}
		if time.Now().After(deadline) {
			d.stop()
			return nil, fmt.Errorf("the dashboard did not answer at %s: %w", d.url, err)
		}
	}
}

func (d *dashboard) stop() {
	if d.cmd != nil && d.cmd.Process != nil {
		_ = d.cmd.Process.Kill()
		_ = d.cmd.Wait()
	}
	_ = os.RemoveAll(d.dir)
}

// client is a browser of its own: a cookie jar (nil: none), from the
// loopback address source (nil: any).
func (d *dashboard) client(jar http.CookieJar, source net.IP) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	if source != nil {
		dialer.LocalAddr = &net.TCPAddr{IP: source}
	}
	return &http.Client{
		Jar: jar,
		Transport: &http.Transport{
			DialContext:       dialer.DialContext,
			TLSClientConfig:   &tls.Config{RootCAs: d.root, MinVersion: tls.VersionTLS12},
			DisableKeepAlives: source != nil,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// user is a browser signed in.
type user struct {
	d      *dashboard
	client *http.Client
}

// signIn signs a token in at the sign-in page, from source.
func (d *dashboard) signIn(token string, source net.IP) (*user, error) {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, err
	}
	u := &user{d: d, client: d.client(jar, source)}
	body, _ := json.Marshal(map[string]string{"token": token})
	resp, err := u.client.Post(d.url+"/api/signin", "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		text, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("%s: %s", resp.Status, text)
	}
	return u, nil
}

func (u *user) stillSignedIn() bool {
	resp, err := u.client.Get(u.d.url + "/api/session")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// forgedResult counts the answers to forged sign-ins.
type forgedResult struct {
	total, page, header                   int
	unauthorized, tooMany, other, cookies int
}

// forge sends n sign-ins with tokens the API server refuses, from sources
// loopback addresses in turn, 32 at a time.
func (d *dashboard) forge(ctx context.Context, n, sources int) forgedResult {
	clients := make([]*http.Client, sources)
	for i := range clients {
		clients[i] = d.client(nil, net.IPv4(127, 0, byte(1+i/250), byte(2+i%250)))
	}
	var unauthorized, tooMany, other, cookies, page, header atomic.Int64
	work := make(chan int)
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				var req *http.Request
				token := fmt.Sprintf("forged-%d-%s", i, strconv.FormatInt(time.Now().UnixNano(), 36))
				if i%2 == 0 {
					body, _ := json.Marshal(map[string]string{"token": token})
					req, _ = http.NewRequestWithContext(ctx, http.MethodPost, d.url+"/api/signin", bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					page.Add(1)
				} else {
					req, _ = http.NewRequestWithContext(ctx, http.MethodGet, d.url+"/api/session", nil)
					req.Header.Set("Authorization", "Bearer "+token)
					header.Add(1)
				}
				resp, err := clients[i%sources].Do(req)
				if err != nil {
					other.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusUnauthorized:
					unauthorized.Add(1)
				case http.StatusTooManyRequests:
					tooMany.Add(1)
				default:
					other.Add(1)
				}
				if len(resp.Cookies()) > 0 {
					cookies.Add(1)
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	return forgedResult{total: n, page: int(page.Load()), header: int(header.Load()), unauthorized: int(unauthorized.Load()),
		tooMany: int(tooMany.Load()), other: int(other.Load()), cookies: int(cookies.Load())}
}

// streamsResult says what became of the event streams.
type streamsResult struct {
	opened, refused, stalled int
	// bytes is what the streams read carried.
	bytes int64
}

// openStreams opens n streams of the job list as the users of tokens, 8 to
// a session, reads all but stalled of them for hold, and then closes them
// all. The streams not read stop reading at once.
func (d *dashboard) openStreams(ctx context.Context, tokens []string, n, stalled int, hold time.Duration) streamsResult {
	const perSession = 8
	var result streamsResult
	var mu sync.Mutex
	var wg sync.WaitGroup
	var sessions []*user
	for i := 0; i*perSession < n; i++ {
		// Each session from an address of its own: sign-ins are limited
		// per address.
		u, err := d.signIn(tokens[i%len(tokens)], net.IPv4(127, 0, 3, byte(2+i)))
		if err != nil {
			fmt.Fprintf(os.Stderr, "dashboard-load: a streaming user's sign-in: %v\n", err)
			continue
		}
		sessions = append(sessions, u)
	}
	if len(sessions) == 0 {
		return result
	}
	holding, stop := context.WithTimeout(ctx, hold)
	defer stop()
	var read atomic.Int64
	for i := range n {
		u := sessions[(i/perSession)%len(sessions)]
		reads := i >= stalled
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(holding, http.MethodGet, d.url+"/api/jobs/watch", nil)
			resp, err := u.client.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			mu.Lock()
			if resp.StatusCode != http.StatusOK {
				result.refused++
			} else {
				result.opened++
				if !reads {
					result.stalled++
				}
			}
			mu.Unlock()
			if resp.StatusCode == http.StatusOK && reads {
				n, _ := io.Copy(io.Discard, resp.Body)
				read.Add(n)
			}
			<-holding.Done()
		}()
	}
	wg.Wait()
	result.bytes = read.Load()
	return result
}

// sampleMemory samples the server's resident memory every 50 ms until ctx
// ends, and returns what reads the peak.
func (d *dashboard) sampleMemory(ctx context.Context) func() int64 {
	var peak atomic.Int64
	status := fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid)
	read := func() {
		data, err := os.ReadFile(status)
		if err != nil {
			return
		}
		for _, line := range strings.Split(string(data), "\n") {
			// VmHWM is the peak resident set the kernel saw.
			if value, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(value), "kB")), 10, 64)
				if err == nil && kb*1024 > peak.Load() {
					peak.Store(kb * 1024)
				}
			}
		}
	}
	go func() {
		for ctx.Err() == nil {
			read()
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return func() int64 {
		read()
		return peak.Load()
	}
}
