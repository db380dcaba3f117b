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

package cli

import (
	"context"
	"crypto/tls"
	"fmt"
	"html"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"tensorstack.dev/training/pkg/certs"
	"tensorstack.dev/training/pkg/dashboard"
)

type dashboardOptions struct {
	port      int
	noBrowser bool

	// inCluster serves the dashboard in the cluster: every user signs in
	// with their own bearer token.
	inCluster  bool
	listen     string
	tlsCert    string
	tlsKey     string
	sessionTTL time.Duration
	apiCAFile  string
}

func newDashboardCommand(e *env) *cobra.Command {
	var o dashboardOptions
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Open the training jobs dashboard in a browser",
		Long: `Serve the training jobs dashboard on 127.0.0.1 and open it in a browser.

The dashboard lists every job of every kind, live, in every namespace you may
list jobs in (else in your namespace); a job's page shows its conditions,
replicas, metrics, checkpoints, events, logs and spec; and it pauses, resumes,
deletes and creates jobs.

It acts with your kubeconfig's credentials (and kubectl's flags: --context,
--as, ...), so it may do what you may do, no more: what RBAC refuses is shown
refused, with the API server's message.

The URL printed carries a one-time sign-in token: the first browser to open it
trades it for a session cookie, and it signs in no other. Until then anyone
with the URL can act as you, so do not share it. Ctrl-C stops the server. docs/dashboard.md says more.`,
		Example: `  kubectl training dashboard
  kubectl training dashboard --port 8080 --no-browser
  kubectl training dashboard --context staging --as alice

  # In a Pod of the cluster (the Helm chart's dashboard.enabled), over HTTPS:
  kubectl-training dashboard --in-cluster --listen :8443 \
    --tls-cert-file /tls/tls.crt --tls-private-key-file /tls/tls.key`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), e)
		},
	}
	cmd.Flags().IntVar(&o.port, "port", 0, "The port to serve on, on 127.0.0.1; 0 picks a free one.")
	cmd.Flags().BoolVar(&o.noBrowser, "no-browser", false, "Print the URL only; do not open a browser.")
	cmd.Flags().BoolVar(&o.inCluster, "in-cluster", false, "Serve in a Pod of the cluster: each user signs in with their own "+
		"bearer token (at the sign-in page, or in the Authorization header of a proxy in front), and every request acts "+
		"with that token, never with the Pod's ServiceAccount.")
	cmd.Flags().StringVar(&o.listen, "listen", ":8443", "With --in-cluster: the address to serve HTTPS on.")
	cmd.Flags().StringVar(&o.tlsCert, "tls-cert-file", "", "With --in-cluster: the serving certificate (PEM), read again when it "+
		"changes; without one, a self-signed certificate.")
	cmd.Flags().StringVar(&o.tlsKey, "tls-private-key-file", "", "With --in-cluster: the serving certificate's private key (PEM).")
	cmd.Flags().DurationVar(&o.sessionTTL, "session-ttl", 12*time.Hour, "With --in-cluster: how long a sign-in lasts.")
	cmd.Flags().StringVar(&o.apiCAFile, "api-ca-file", serviceAccountCAFile, "With --in-cluster: the CA of the API server, "+
		"reached at KUBERNETES_SERVICE_HOST:KUBERNETES_SERVICE_PORT; the Pod needs no ServiceAccount token.")
	return cmd
}

// dashboardGCPercent is the garbage collector's target for the dashboard's
// server, unless GOGC says otherwise: a long-lived server whose work is
// light, where half of Go's default heap headroom costs no visible CPU and
// keeps its memory down (with 1000 jobs watched, 13 MiB of heap and stacks
// against 18 at the default; docs/benchmarks.md).
const dashboardGCPercent = 50

func (o *dashboardOptions) run(ctx context.Context, e *env) error {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(dashboardGCPercent)
	}
	if o.inCluster {
		return o.runInCluster(ctx, e)
	}
	if o.port < 0 || o.port > 65535 {
		return fmt.Errorf("--port %d: must be 0 (any free port) to 65535", o.port)
	}
	c, err := e.clients()
	if err != nil {
		return err
	}
	// Loopback only: the dashboard acts with the user's credentials, so
	// nobody else may reach it.
	listener, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(o.port)))
	if err != nil {
		return fmt.Errorf("listening for the dashboard: %w", err)
	}
	// Without Kueue's client the Queues page says so; the rest still serves.
	kueue, _ := e.kueueClient()
	server := dashboard.NewServer(dashboard.StaticClients{Training: c.training, Kube: c.kube, Kueue: kueue, Namespace: c.namespace})
	url := server.SignInURL(listener.Addr().String())
	fmt.Fprintf(e.streams.Out, "Serving the dashboard at\n\n    %s\n\nCtrl-C stops it.\n", url)
	if !o.noBrowser {
		defer openBrowser(e, url)()
	}
	return server.Serve(ctx, listener)
}

// runInCluster serves the dashboard over HTTPS with no credentials of its
// own: the Pod's ServiceAccount gives only the API server's address and CA.
func (o *dashboardOptions) runInCluster(ctx context.Context, e *env) error {
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return fmt.Errorf("--tls-cert-file and --tls-private-key-file go together")
	}
	if o.sessionTTL <= 0 {
		return fmt.Errorf("--session-ttl %v: must be positive", o.sessionTTL)
	}
	getCertificate, err := o.servingCertificate(e)
	if err != nil {
		return err
	}
	config, err := inClusterAPI(o.apiCAFile)
	if err != nil {
		return err
	}
	// The users' namespace: -n, else default; not the Pod's own, where no
	// user's jobs are.
	namespace := "default"
	if ns, explicit, err := e.Namespace(); err == nil && explicit {
		namespace = ns
	}
	source := dashboard.TokenClients{Config: config, Namespace: namespace}
	server := dashboard.NewInClusterServer(source, dashboard.InClusterOptions{Verify: source.Verify, SessionTTL: o.sessionTTL})
	listener, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listening for the dashboard: %w", err)
	}
	fmt.Fprintf(e.streams.Out, "Serving the dashboard on https://%s; users sign in with their bearer tokens.\n", listener.Addr())
	return server.Serve(ctx, tls.NewListener(listener, &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: getCertificate,
		NextProtos:     []string{"h2", "http/1.1"},
	}))
}

// serviceAccountCAFile is where a Pod that mounts its ServiceAccount's token
// finds the cluster's CA.
const serviceAccountCAFile = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"

// inClusterAPI reaches the API server from a Pod with no credentials at all:
// the address from the environment the kubelet sets, the CA from caFile (the
// kube-root-ca.crt ConfigMap every namespace has, mounted, serves).
func inClusterAPI(caFile string) (*rest.Config, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, fmt.Errorf("--in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are unset: not in a Pod")
	}
	if _, err := os.Stat(caFile); err != nil {
		return nil, fmt.Errorf("--in-cluster: the API server's CA: %w", err)
	}
	return &rest.Config{Host: "https://" + net.JoinHostPort(host, port), TLSClientConfig: rest.TLSClientConfig{CAFile: caFile}}, nil
}

// servingCertificate is the files' certificate, read again as they renew, or
// without files one the dashboard signs itself, for the Pod's names.
func (o *dashboardOptions) servingCertificate(e *env) (func(*tls.ClientHelloInfo) (*tls.Certificate, error), error) {
	if o.tlsCert != "" {
		reloader, err := dashboard.NewCertificateReloader(o.tlsCert, o.tlsKey)
		if err != nil {
			return nil, err
		}
		return reloader.GetCertificate, nil
	}
	hosts := []string{"localhost", "127.0.0.1"}
	if name, err := os.Hostname(); err == nil {
		hosts = append(hosts, name)
	}
	certificate, err := certs.SelfSigned("training-dashboard", hosts...)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(e.streams.ErrOut, "No --tls-cert-file: serving a self-signed certificate; reach the dashboard through a proxy, "+
		"an Ingress or kubectl port-forward, or mount a certificate.")
	return func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return certificate, nil }, nil
}

// openBrowser opens the sign-in URL with xdg-open where there is one, and
// returns what removes what it left. The URL, token and all, stays off
// xdg-open's and the browser's command lines, which every user of the
// machine may read (ps): the browser opens a page only this user may read,
// which sends it on to the URL. Without xdg-open, or when it fails, the URL
// printed is the way in.
func openBrowser(e *env, url string) (cleanup func()) {
	cleanup = func() {}
	path, err := exec.LookPath("xdg-open")
	if err != nil {
		fmt.Fprintln(e.streams.ErrOut, "No xdg-open here to open a browser: open the URL above.")
		return cleanup
	}
	page, cleanup, err := writeRedirectPage(url)
	if err != nil {
		fmt.Fprintf(e.streams.ErrOut, "Could not write the page that opens the dashboard (%v): open the URL above.\n", err)
		return cleanup
	}
	cmd := exec.Command(path, page)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(e.streams.ErrOut, "Could not open a browser (%v): open the URL above.\n", err)
		return cleanup
	}
	// xdg-open returns once the browser has the page; reap it then.
	go func() { _ = cmd.Wait() }()
	return cleanup
}

// writeRedirectPage writes, in a new directory of the user's alone, an HTML
// page that sends the browser to url, and returns its path and what
// removes it.
func writeRedirectPage(url string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "kubectl-training-dashboard-")
	if err != nil {
		return "", func() {}, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	quoted := html.EscapeString(url)
	page := filepath.Join(dir, "open.html")
	content := fmt.Sprintf(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">
<meta http-equiv="refresh" content="0;url=%s"><title>Training jobs</title></head>
<body><a href="%s">Open the training jobs dashboard</a></body></html>
`, quoted, quoted)
	if err := os.WriteFile(page, []byte(content), 0o600); err != nil {
		cleanup()
		return "", func() {}, err
	}
	return page, cleanup, nil
}
