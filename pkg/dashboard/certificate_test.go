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
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tensorstack.dev/training/pkg/certs"
)

// writeCertificate writes a self-signed certificate for name, and its key,
// with the given modification time.
func writeCertificate(t *testing.T, certFile, keyFile, name string, modified time.Time) {
	t.Helper()
	c, err := certs.SelfSigned(name, name)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	for file, block := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: c.Certificate[0]}, keyFile: {Type: "PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(file, modified, modified); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCertificateReloaderServesTheRenewedCertificate(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if _, err := NewCertificateReloader(certFile, keyFile); err == nil {
		t.Error("no files: want an error at start")
	}
	start := time.Now().Add(-time.Minute)
	writeCertificate(t, certFile, keyFile, "first", start)
	r, err := NewCertificateReloader(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	served := func() string {
		c, err := r.GetCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return leaf.Subject.CommonName
	}
	if got := served(); got != "first" {
		t.Fatalf("served %q, want first", got)
	}
	writeCertificate(t, certFile, keyFile, "renewed", start.Add(time.Second))
	if got := served(); got != "renewed" {
		t.Errorf("after the renewal served %q, want renewed", got)
	}
	// A half-written renewal keeps the last good one.
	if err := os.WriteFile(certFile, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := served(); got != "renewed" {
		t.Errorf("with a broken file served %q, want the last good one", got)
	}
}
