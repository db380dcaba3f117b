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

package install

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The etcd certificates' Secrets (artifacts/deploy/components/managed-etcd-certs).
var etcdCertSecrets = []string{"training-etcd-server", "training-etcd-peer", "training-etcd-client"}

const etcdMembers = 3

// etcdClient is the client certificate training-apiserver uses, read from
// its Secret as an administrator would for a backup (docs/install.md).
type etcdClient struct {
	caFile, certFile, keyFile string
}

func (e *env) etcdClient(t *testing.T) etcdClient {
	t.Helper()
	secret, err := e.kube.CoreV1().Secrets(systemNamespace).Get(context.Background(), "training-etcd-client", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(e.workDir, "etcd-client")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	c := etcdClient{caFile: filepath.Join(dir, "ca.crt"), certFile: filepath.Join(dir, "tls.crt"), keyFile: filepath.Join(dir, "tls.key")}
	for file, key := range map[string]string{c.caFile: "ca.crt", c.certFile: "tls.crt", c.keyFile: "tls.key"} {
		if len(secret.Data[key]) == 0 {
			t.Fatalf("Secret training-etcd-client has no %s", key)
		}
		if err := os.WriteFile(file, secret.Data[key], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// etcdctlArgs are the flags that make etcdctl a client with this
// certificate.
func (c etcdClient) etcdctlArgs() []string {
	return []string{"--cacert=" + c.caFile, "--cert=" + c.certFile, "--key=" + c.keyFile}
}

func (e *env) tryEtcdctl(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, e.etcdctl, append([]string{"--dial-timeout=5s", "--command-timeout=10s"}, args...)...).CombinedOutput()
	return string(out), err
}

// testEtcdTLS: etcd answers a client with a certificate of its CA, and
// refuses one without a certificate, one in plain HTTP, and on the peer
// port anyone but a member.
func testEtcdTLS(t *testing.T, e *env) {
	client := e.etcdClient(t)
	port, stop := e.portForward(t, "pod/training-etcd-0", 2379)
	defer stop()
	endpoint := "--endpoints=https://127.0.0.1:" + port

	if out, err := e.tryEtcdctl(append(client.etcdctlArgs(), endpoint, "endpoint", "health")...); err != nil {
		t.Fatalf("etcdctl with training-apiserver's client certificate: %v\n%s", err, out)
	}
	out, err := e.tryEtcdctl(endpoint, "--cacert="+client.caFile, "endpoint", "health")
	if err == nil {
		t.Errorf("etcdctl without a client certificate was served:\n%s", out)
	} else {
		t.Logf("etcdctl without a client certificate: refused (%s)", lastLine(out))
	}
	out, err = e.tryEtcdctl("--endpoints=http://127.0.0.1:"+port, "endpoint", "health")
	if err == nil {
		t.Errorf("etcdctl in plain HTTP was served:\n%s", out)
	} else {
		t.Logf("etcdctl in plain HTTP: refused (%s)", lastLine(out))
	}
	// The peer port: the CA's client certificate is no member's.
	peerPort, stopPeer := e.portForward(t, "pod/training-etcd-0", 2380)
	defer stopPeer()
	pair, err := tls.LoadX509KeyPair(client.certFile, client.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	caPEM, err := os.ReadFile(client.caFile)
	if err != nil {
		t.Fatal(err)
	}
	roots.AppendCertsFromPEM(caPEM)
	for name, certs := range map[string][]tls.Certificate{"no certificate": nil, "training-apiserver's client certificate": {pair}} {
		httpc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: roots, Certificates: certs, ServerName: "training-etcd-0.training-etcd.tensorstack-system.svc", MinVersion: tls.VersionTLS12}}}
		resp, err := httpc.Get("https://127.0.0.1:" + peerPort + "/version")
		if err == nil {
			_ = resp.Body.Close()
			t.Errorf("the peer port answered a client with %s: %s", name, resp.Status)
			continue
		}
		t.Logf("the peer port, a client with %s: refused (%v)", name, err)
	}
}

// servedEtcdCertificates are the fingerprints of the certificate each etcd
// member serves on its client port, by member.
func (e *env) servedEtcdCertificates(t *testing.T, client etcdClient) map[string]string {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(client.certFile, client.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i := range etcdMembers {
		member := fmt.Sprintf("training-etcd-%d", i)
		port, stop := e.portForward(t, "pod/"+member, 2379)
		conn, err := tls.Dial("tcp", "127.0.0.1:"+port, &tls.Config{Certificates: []tls.Certificate{pair},
			InsecureSkipVerify: true}) //nolint:gosec // reads the served certificate only; etcdctl verifies it elsewhere
		if err != nil {
			stop()
			t.Logf("TLS to %s: %v", member, err)
			continue
		}
		sum := sha256.Sum256(conn.ConnectionState().PeerCertificates[0].Raw)
		out[member] = hex.EncodeToString(sum[:8])
		_ = conn.Close()
		stop()
	}
	return out
}

func (e *env) secretCertificates(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, name := range etcdCertSecrets {
		s, err := e.kube.CoreV1().Secrets(systemNamespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out[name] = s.Data["tls.crt"]
	}
	return out
}

// testEtcdRotation renews every etcd certificate while a client creates
// jobs through the API, and requires every acknowledged create to be read
// back, no request to fail, and every member to serve its new certificate.
func testEtcdRotation(t *testing.T, e *env) {
	client := e.etcdClient(t)
	firstServed := e.servedEtcdCertificates(t, client)
	if len(firstServed) != etcdMembers {
		t.Fatalf("TLS reached %d of %d etcd members", len(firstServed), etcdMembers)
	}
	firstSecrets := e.secretCertificates(t)
	load := startCreates(e, "rotation", 200*time.Millisecond)
	time.Sleep(5 * time.Second)

	start := time.Now()
	stamp := start.UTC().Format(time.RFC3339)
	for _, name := range etcdCertSecrets {
		e.run(t, nil, "annotate", "--namespace", systemNamespace, "--overwrite", "secret", name, "batch.tensorstack.dev/renew="+stamp)
	}
	issued := waitFor(t, "the controller-manager renewing the etcd certificates", 2*time.Minute, time.Second,
		func(ctx context.Context) (bool, error) {
			now := e.secretCertificates(t)
			for _, name := range etcdCertSecrets {
				if bytes.Equal(now[name], firstSecrets[name]) {
					return false, nil
				}
			}
			return true, nil
		})
	t.Logf("the controller-manager renewed the 3 etcd certificates %.1fs after they were asked for", issued.Seconds())
	served := waitFor(t, "every etcd member serving its renewed certificate", 6*time.Minute, 5*time.Second,
		func(ctx context.Context) (bool, error) {
			now := e.servedEtcdCertificates(t, client)
			for member, fingerprint := range firstServed {
				if now[member] == "" || now[member] == fingerprint {
					return false, nil
				}
			}
			return true, nil
		})
	t.Logf("every etcd member served its renewed certificate %.0fs after the renewal (the kubelet's Secret sync)", served.Seconds())
	// Connections made after the renewal, with the renewed files on both
	// sides: a member restarted rejoins its peers and the apiservers.
	e.run(t, nil, "delete", "pod", "--namespace", systemNamespace, "training-etcd-1", "--grace-period=0", "--force")
	waitFor(t, "the installation whole again", 3*time.Minute, time.Second, e.rolledOut)
	time.Sleep(10 * time.Second)

	requests, failures, acked := load.finish()
	t.Logf("during the rotation: %d creates acknowledged of %d sent, %d failed", len(acked), requests, len(failures))
	if len(failures) > 0 {
		t.Errorf("%d of %d creates failed while the etcd certificates were renewed; the first:\n%s", len(failures), requests,
			strings.Join(failures[:min(10, len(failures))], "\n"))
	}
	e.checkStored(t, acked)
	if !t.Failed() {
		t.Logf("all %d acknowledged creates read back", len(acked))
	}
	e.run(t, nil, "delete", "pytorchtrainingjobs", "--namespace", jobsNamespace, "-l", rotationLabel, "--wait=true", "--timeout=5m")
}

const rotationLabel = "install-test/rotation"

// createLoad creates paused jobs until stopped, and keeps them all.
type createLoad struct {
	mu       sync.Mutex
	requests int
	failures []string
	acked    []string
	stop     chan struct{}
	done     chan struct{}
}

func startCreates(e *env, prefix string, every time.Duration) *createLoad {
	l := &createLoad{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		for i := 0; ; i++ {
			select {
			case <-l.stop:
				return
			case <-ticker.C:
			}
			job := pausedJob(fmt.Sprintf("%s-%d", prefix, i))
			job.Labels = map[string]string{rotationLabel: "true"}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := e.jobs.BatchV1beta1().PyTorchTrainingJobs(jobsNamespace).Create(ctx, job, metav1.CreateOptions{})
			cancel()
			l.mu.Lock()
			l.requests++
			if err != nil {
				l.failures = append(l.failures, fmt.Sprintf("%s create %s: %v", time.Now().Format("15:04:05.000"), job.Name, err))
			} else {
				l.acked = append(l.acked, job.Name)
			}
			l.mu.Unlock()
		}
	}()
	return l
}

func (l *createLoad) finish() (int, []string, []string) {
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.requests, l.failures, l.acked
}

// certificateEnd is the end of the certificate in a PEM file.
func certificateEnd(t *testing.T, file string) time.Time {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s: no PEM", file)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert.NotAfter
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
