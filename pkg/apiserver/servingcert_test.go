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
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWaitForServingCert(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	ctx := context.Background()

	if err := waitForServingCert(ctx, cert, key, 0, time.Millisecond); err != nil {
		t.Errorf("with no wait asked for: %v", err)
	}
	// An empty file is a Secret not written yet, not a certificate.
	if err := os.WriteFile(cert, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := waitForServingCert(ctx, cert, key, 50*time.Millisecond, 5*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "--tls-cert-wait") || !strings.Contains(err.Error(), cert) ||
		!strings.Contains(err.Error(), key) {
		t.Errorf("missing files: got %v, want an error naming the file and --tls-cert-wait", err)
	}

	done := make(chan error, 1)
	go func() { done <- waitForServingCert(ctx, cert, key, 5*time.Second, 5*time.Millisecond) }()
	time.Sleep(20 * time.Millisecond)
	for _, f := range []string{cert, key} {
		if err := os.WriteFile(f, []byte("pem"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Errorf("files written while waiting: %v", err)
	}
}

func TestWaitForEtcdCerts(t *testing.T) {
	dir := t.TempDir()
	cert, key, ca := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.crt")
	ctx := context.Background()
	if err := waitForEtcdCerts(ctx, []string{"", "", ""}, time.Second, time.Millisecond); err != nil {
		t.Errorf("plain-text etcd: %v", err)
	}
	for _, f := range []string{cert, key} {
		if err := os.WriteFile(f, []byte("pem"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	err := waitForEtcdCerts(ctx, []string{cert, key, ca}, 50*time.Millisecond, 5*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "etcd client certificate") || !strings.Contains(err.Error(), ca) ||
		strings.Contains(err.Error(), cert) {
		t.Errorf("the CA missing: got %v, want an error naming it and only it", err)
	}
	done := make(chan error, 1)
	go func() { done <- waitForEtcdCerts(ctx, []string{cert, key, ca}, 5*time.Second, 5*time.Millisecond) }()
	time.Sleep(20 * time.Millisecond)
	if err := os.WriteFile(ca, []byte("pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("the CA written while waiting: %v", err)
	}
}
