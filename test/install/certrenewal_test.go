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
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Certificates of minutes for the Helm installation, serving and etcd's, so
// that the test sees them renewed: one is renewed a minute after it was
// issued, and still has three minutes left while the kubelet brings the new
// one into the pods.
var shortCertificates = []string{
	"--set", "controllerManager.extraArgs={--serving-cert-validity=4m,--serving-cert-renew-before=3m,--serving-cert-check-interval=10s," +
		"--etcd-cert-validity=4m,--etcd-cert-renew-before=3m,--etcd-cert-check-interval=10s}",
}

// servedCertificates are the fingerprints of the serving certificate each
// training-apiserver pod presents, by pod.
func (e *env) servedCertificates(t *testing.T) map[string]string {
	t.Helper()
	pods, err := e.kube.CoreV1().Pods(systemNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=training-apiserver"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		port, stop := e.portForward(t, "pod/"+p.Name, 8443)
		// Only the certificate is looked at; kube-apiserver verifies it
		// against the APIService's caBundle on every real request.
		conn, err := tls.Dial("tcp", "127.0.0.1:"+port, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reads the served certificate only
		if err != nil {
			stop()
			t.Fatalf("TLS to %s: %v", p.Name, err)
		}
		// By fingerprint: cert-controller gives every certificate serial 1.
		sum := sha256.Sum256(conn.ConnectionState().PeerCertificates[0].Raw)
		out[p.Name] = hex.EncodeToString(sum[:8])
		_ = conn.Close()
		stop()
	}
	return out
}

// getLoad lists jobs through kube-apiserver, as kubectl get does, until
// stopped, and runs the real kubectl now and then. It keeps the failures and
// the longest stretch without an answer.
type getLoad struct {
	mu         sync.Mutex
	requests   int
	failures   []string
	lastAnswer time.Time
	longestGap time.Duration
	stop       chan struct{}
	done       chan struct{}
}

func startGets(e *env) *getLoad {
	l := &getLoad{stop: make(chan struct{}), done: make(chan struct{}), lastAnswer: time.Now()}
	go func() {
		defer close(l.done)
		ticker := time.NewTicker(100 * time.Millisecond)
		defer ticker.Stop()
		for i := 0; ; i++ {
			select {
			case <-l.stop:
				return
			case <-ticker.C:
			}
			var err error
			if i%20 == 0 {
				_, err = e.tryRun(nil, "get", "pytorchtrainingjobs", "--all-namespaces")
			} else {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err = e.jobs.BatchV1beta1().PyTorchTrainingJobs(jobsNamespace).List(ctx, metav1.ListOptions{})
				cancel()
			}
			now := time.Now()
			l.mu.Lock()
			l.requests++
			if err != nil {
				l.failures = append(l.failures, fmt.Sprintf("%s: %v", now.Format("15:04:05.000"), err))
			} else {
				l.longestGap = max(l.longestGap, now.Sub(l.lastAnswer))
				l.lastAnswer = now
			}
			l.mu.Unlock()
		}
	}()
	return l
}

func (l *getLoad) finish() (int, []string) {
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.requests, l.failures
}

// longestWithoutAnswer is the longest time between two answered gets, or
// from the start (or the last answer) to the end: call it after finish.
func (l *getLoad) longestWithoutAnswer() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return max(l.longestGap, time.Since(l.lastAnswer))
}

// waitRenewed waits until every apiserver pod presents a certificate other
// than the one it presented first: a renewal reached every pod.
func (e *env) waitRenewed(t *testing.T, first map[string]string, timeout time.Duration) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	seen := map[string]map[string]bool{}
	for pod, fingerprint := range first {
		seen[pod] = map[string]bool{fingerprint: true}
	}
	for {
		done := true
		for pod, fingerprint := range e.servedCertificates(t) {
			if seen[pod] == nil {
				seen[pod] = map[string]bool{}
			}
			seen[pod][fingerprint] = true
			if len(seen[pod]) < 2 {
				done = false
			}
		}
		if done {
			distinct := map[string]bool{}
			for _, fingerprints := range seen {
				for f := range fingerprints {
					distinct[f] = true
				}
			}
			return len(distinct), time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("the serving certificates were not renewed within %v: %v", timeout, seen)
		}
		time.Sleep(5 * time.Second)
	}
}
