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

package servingcert

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"tensorstack.dev/training/pkg/certs"
)

const testNamespace = "tensorstack-system"

func TestEtcdConfigValidate(t *testing.T) {
	cases := map[string]struct {
		change  func(*EtcdConfig)
		wantErr string
	}{
		"defaults": {change: func(*EtcdConfig) {}},
		"minutes, as the install test runs": {change: func(c *EtcdConfig) {
			c.CertValidity, c.RenewBefore, c.CheckInterval = 4*time.Minute, 3*time.Minute, 10*time.Second
		}},
		"no namespace":     {change: func(c *EtcdConfig) { c.Namespace = "" }, wantErr: "namespace"},
		"no members":       {change: func(c *EtcdConfig) { c.Members = 0 }, wantErr: "at least one member"},
		"no client name":   {change: func(c *EtcdConfig) { c.ClientCommonName = "" }, wantErr: "common name"},
		"no margin":        {change: func(c *EtcdConfig) { c.RenewBefore = 0 }, wantErr: "must be positive"},
		"short cert":       {change: func(c *EtcdConfig) { c.CertValidity = c.RenewBefore }, wantErr: "valid longer than their renewal margin"},
		"short CA":         {change: func(c *EtcdConfig) { c.CAValidity = c.CARenewBefore }, wantErr: "longer than its renewal margin"},
		"rare checks":      {change: func(c *EtcdConfig) { c.CheckInterval = c.RenewBefore }, wantErr: "check interval"},
		"cert outlives CA": {change: func(c *EtcdConfig) { c.CARenewBefore = c.CertValidity / 2 }, wantErr: "outlives the CA"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := DefaultEtcdConfig(testNamespace)
			tc.change(&c)
			err := c.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestEtcdCertificates: each certificate the CA issues, by its names and
// key usages: the members' serving and peer certificates serve and are
// presented as clients, training-apiserver's only as a client.
func TestEtcdCertificates(t *testing.T) {
	cfg := DefaultEtcdConfig(testNamespace)
	members := []string{
		"training-etcd-0.training-etcd.tensorstack-system.svc",
		"training-etcd-1.training-etcd.tensorstack-system.svc",
		"training-etcd-2.training-etcd.tensorstack-system.svc",
	}
	memberNames := append(slices.Clone(members), "*.training-etcd.tensorstack-system.svc", "training-etcd.tensorstack-system.svc")
	cases := []struct {
		role, secret, commonName string
		dnsNames                 []string
		ips                      []string
		// verifiesAs are the names a client dials the certificate at
		// (empty: it is no server's).
		verifiesAs []string
		server     bool
		client     bool
	}{
		{
			role: "server", secret: "training-etcd-server", commonName: "training-etcd",
			dnsNames: append(slices.Clone(memberNames), "localhost"), ips: []string{"127.0.0.1", "::1"},
			verifiesAs: append(slices.Clone(members), "training-etcd.tensorstack-system.svc", "localhost", "127.0.0.1"),
			server:     true, client: true,
		},
		{
			role: "peer", secret: "training-etcd-peer", commonName: "training-etcd-peer",
			dnsNames: memberNames, verifiesAs: members,
			server: true, client: true,
		},
		{
			role: "client", secret: "training-etcd-client", commonName: "training-apiserver",
			client: true,
		},
	}
	now := time.Now()
	authority, err := newCA(nil, nil, "test-ca", now, cfg.CAValidity)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(authority.current())
	specs := cfg.Certificates()
	if len(specs) != len(cases) {
		t.Fatalf("%d certificates, want %d", len(specs), len(cases))
	}
	for i, tc := range cases {
		t.Run(tc.role, func(t *testing.T) {
			spec := specs[i]
			if spec.Role != tc.role || spec.Secret != tc.secret {
				t.Fatalf("certificate %d is %s in %s, want %s in %s", i, spec.Role, spec.Secret, tc.role, tc.secret)
			}
			certPEM, keyPEM, err := authority.issue(spec, now, cfg.CertValidity)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
				t.Fatalf("certificate and key: %v", err)
			}
			read, err := certs.ParseCertificates(certPEM)
			if err != nil || len(read) != 1 {
				t.Fatalf("%d certificates, %v", len(read), err)
			}
			cert := read[0]
			if cert.Subject.CommonName != tc.commonName {
				t.Errorf("CN=%s, want %s", cert.Subject.CommonName, tc.commonName)
			}
			if !sameStrings(cert.DNSNames, tc.dnsNames) {
				t.Errorf("DNS names %q, want %q", cert.DNSNames, tc.dnsNames)
			}
			var ips []string
			for _, ip := range cert.IPAddresses {
				ips = append(ips, ip.String())
			}
			if !sameStrings(ips, tc.ips) {
				t.Errorf("IP addresses %q, want %q", ips, tc.ips)
			}
			if cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign != 0 {
				t.Errorf("a leaf certificate can sign certificates")
			}
			if got := cert.NotAfter.Sub(now.Truncate(time.Second)); got != cfg.CertValidity {
				t.Errorf("valid for %v, want %v", got, cfg.CertValidity)
			}
			verify := func(usage x509.ExtKeyUsage, name string) error {
				_, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{usage}, CurrentTime: now})
				return err
			}
			if err := verify(x509.ExtKeyUsageClientAuth, ""); (err == nil) != tc.client {
				t.Errorf("as a client certificate: %v, want usable %v", err, tc.client)
			}
			if err := verify(x509.ExtKeyUsageServerAuth, ""); (err == nil) != tc.server {
				t.Errorf("as a server certificate: %v, want usable %v", err, tc.server)
			}
			for _, name := range tc.verifiesAs {
				if err := verify(x509.ExtKeyUsageServerAuth, name); err != nil {
					t.Errorf("does not serve %s: %v", name, err)
				}
			}
			if tc.server {
				for _, name := range []string{"training-etcd-0.training-etcd.default.svc", "training-apiserver.tensorstack-system.svc", "example.com"} {
					if verify(x509.ExtKeyUsageServerAuth, name) == nil {
						t.Errorf("serves %s too", name)
					}
				}
			}
		})
	}
}

// keeperTest is a fake cluster with the installation's empty Secrets, and
// a clock.
type keeperTest struct {
	t        *testing.T
	client   *fake.Clientset
	recorder *record.FakeRecorder
	keeper   *EtcdKeeper
	now      time.Time
}

func newKeeperTest(t *testing.T, cfg EtcdConfig) *keeperTest {
	t.Helper()
	k := &keeperTest{t: t, client: fake.NewClientset(), recorder: record.NewFakeRecorder(100), now: time.Now()}
	for _, name := range cfg.Secrets() {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cfg.Namespace, Name: name,
			Annotations: map[string]string{ManagedByAnnotation: ManagedByValue}}, Type: corev1.SecretTypeOpaque}
		if _, err := k.client.CoreV1().Secrets(cfg.Namespace).Create(context.Background(), secret, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	k.keeper = NewEtcdKeeper(k.client, k.recorder, cfg)
	k.keeper.now = func() time.Time { return k.now }
	return k
}

// sync runs a Sync and returns the names of the Secrets it wrote.
func (k *keeperTest) sync() []string {
	k.t.Helper()
	k.client.ClearActions()
	if err := k.keeper.Sync(context.Background()); err != nil {
		k.t.Fatalf("Sync: %v", err)
	}
	var written []string
	for _, a := range k.client.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok {
			written = append(written, u.GetObject().(*corev1.Secret).Name)
		}
	}
	return written
}

func (k *keeperTest) secret(name string) *corev1.Secret {
	k.t.Helper()
	s, err := k.client.CoreV1().Secrets(testNamespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		k.t.Fatal(err)
	}
	return s
}

func (k *keeperTest) cert(name string) *x509.Certificate {
	k.t.Helper()
	read, err := certs.ParseCertificates(k.secret(name).Data[corev1.TLSCertKey])
	if err != nil || len(read) == 0 {
		k.t.Fatalf("Secret %s: no certificate (%v)", name, err)
	}
	return read[0]
}

func (k *keeperTest) annotate(name, key, value string) {
	k.t.Helper()
	s := k.secret(name)
	s.Annotations[key] = value
	if _, err := k.client.CoreV1().Secrets(testNamespace).Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		k.t.Fatal(err)
	}
}

// verifies: the certificate verifies with the CA certificates of caPEM, as
// a process that loaded them would, now.
func (k *keeperTest) verifies(cert *x509.Certificate, caPEM []byte) error {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	_, err := cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: k.now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	return err
}

var leafSecrets = []string{"training-etcd-server", "training-etcd-peer", "training-etcd-client"}

func TestEtcdKeeperIssuesOnce(t *testing.T) {
	k := newKeeperTest(t, DefaultEtcdConfig(testNamespace))
	written := k.sync()
	if want := append([]string{"training-etcd-ca"}, leafSecrets...); !slices.Equal(written, want) {
		t.Fatalf("first Sync wrote %q, want %q", written, want)
	}
	caSecret := k.secret("training-etcd-ca")
	if len(caSecret.Data[caKeyKey]) == 0 || len(caSecret.Data[caCertKey]) == 0 {
		t.Fatalf("the CA Secret has no CA: keys %v", keys(caSecret.Data))
	}
	for _, name := range leafSecrets {
		s := k.secret(name)
		if got := keys(s.Data); !slices.Equal(got, []string{"ca.crt", "tls.crt", "tls.key"}) {
			t.Errorf("Secret %s holds %q, want ca.crt, tls.crt and tls.key: no CA key where pods mount it", name, got)
		}
		if !bytes.Equal(s.Data[caCertKey], caSecret.Data[caCertKey]) {
			t.Errorf("Secret %s: ca.crt is not the CA's", name)
		}
		if err := k.verifies(k.cert(name), caSecret.Data[caCertKey]); err != nil {
			t.Errorf("Secret %s: %v", name, err)
		}
		if s.Annotations[ManagedByAnnotation] != ManagedByValue {
			t.Errorf("Secret %s lost its annotation", name)
		}
	}
	if len(k.recorder.Events) != 4 {
		t.Errorf("%d events, want one per Secret written", len(k.recorder.Events))
	}
	if written := k.sync(); len(written) != 0 {
		t.Errorf("a second Sync wrote %q; nothing had changed", written)
	}
}

func TestEtcdKeeperRenews(t *testing.T) {
	cfg := DefaultEtcdConfig(testNamespace)
	cases := map[string]struct {
		// change happens after the first Sync; advance moves the clock.
		change  func(k *keeperTest)
		advance time.Duration
		// written are the Secrets the next Sync writes; renewed those
		// whose certificate is new.
		written, renewed []string
		newCAKey         bool
	}{
		"nothing due": {advance: cfg.CertValidity - cfg.RenewBefore - time.Hour},
		"asked for": {
			change:  func(k *keeperTest) { k.annotate("training-etcd-server", RenewAnnotation, "now") },
			written: []string{"training-etcd-server"}, renewed: []string{"training-etcd-server"},
		},
		"within the margin": {
			advance: cfg.CertValidity - cfg.RenewBefore + time.Hour,
			written: leafSecrets, renewed: leafSecrets,
		},
		"certificate emptied": {
			change: func(k *keeperTest) {
				s := k.secret("training-etcd-client")
				s.Data = nil
				if _, err := k.client.CoreV1().Secrets(testNamespace).Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			},
			written: []string{"training-etcd-client"}, renewed: []string{"training-etcd-client"},
		},
		"more members": {
			change:  func(k *keeperTest) { k.keeper.cfg.Members = 5 },
			written: []string{"training-etcd-server", "training-etcd-peer"}, renewed: []string{"training-etcd-server", "training-etcd-peer"},
		},
		"the CA near its end: renewed with its key, certificates kept": {
			advance: cfg.CAValidity - cfg.CARenewBefore + time.Hour,
			// The certificates are long expired by then: all renewed.
			written: append([]string{"training-etcd-ca"}, leafSecrets...), renewed: leafSecrets,
		},
		"the CA asked for": {
			change:  func(k *keeperTest) { k.annotate("training-etcd-ca", RenewAnnotation, "now") },
			written: append([]string{"training-etcd-ca"}, leafSecrets...), // ca.crt only
		},
		"the CA's key lost": {
			change: func(k *keeperTest) {
				s := k.secret("training-etcd-ca")
				delete(s.Data, caKeyKey)
				if _, err := k.client.CoreV1().Secrets(testNamespace).Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			},
			written: append([]string{"training-etcd-ca"}, leafSecrets...), renewed: leafSecrets, newCAKey: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			k := newKeeperTest(t, cfg)
			k.sync()
			before := map[string]*corev1.Secret{}
			for _, s := range append([]string{"training-etcd-ca"}, leafSecrets...) {
				before[s] = k.secret(s)
			}
			oldCA := before["training-etcd-ca"].Data[caCertKey]
			if tc.change != nil {
				tc.change(k)
			}
			k.now = k.now.Add(tc.advance)
			written := k.sync()
			if !sameStrings(written, tc.written) {
				t.Errorf("Sync wrote %q, want %q", written, tc.written)
			}
			caSecret := k.secret("training-etcd-ca")
			sameKey := bytes.Equal(caSecret.Data[caKeyKey], before["training-etcd-ca"].Data[caKeyKey])
			if sameKey == tc.newCAKey {
				t.Errorf("the CA's key changed: %v, want %v", !sameKey, tc.newCAKey)
			}
			for _, name := range leafSecrets {
				s := k.secret(name)
				renewed := !bytes.Equal(s.Data[corev1.TLSCertKey], before[name].Data[corev1.TLSCertKey])
				if renewed != slices.Contains(tc.renewed, name) {
					t.Errorf("Secret %s renewed: %v, want %v", name, renewed, !renewed)
				}
				if _, asked := s.Annotations[RenewAnnotation]; asked {
					t.Errorf("Secret %s keeps the annotation %s", name, RenewAnnotation)
				}
				if !bytes.Equal(s.Data[caCertKey], caSecret.Data[caCertKey]) {
					t.Errorf("Secret %s: ca.crt is not the CA Secret's", name)
				}
				// A process started before the change, with the old CA
				// file, trusts what is issued now, unless the key was
				// lost.
				if err := k.verifies(k.cert(name), oldCA); (err == nil) == tc.newCAKey {
					t.Errorf("Secret %s's certificate with the CA loaded before: %v", name, err)
				}
				if err := k.verifies(k.cert(name), caSecret.Data[caCertKey]); err != nil {
					t.Errorf("Secret %s's certificate with the current CA: %v", name, err)
				}
			}
			if _, asked := caSecret.Annotations[RenewAnnotation]; asked {
				t.Errorf("the CA Secret keeps the annotation %s", RenewAnnotation)
			}
			if written := k.sync(); len(written) != 0 {
				t.Errorf("the next Sync wrote %q; nothing had changed", written)
			}
		})
	}
}

// TestEtcdKeeperRenewedCA: a process that loaded the CA before its renewal
// (a running etcd or apiserver) verifies certificates issued after it, and
// the bundle keeps the old CA certificate until its end.
func TestEtcdKeeperRenewedCA(t *testing.T) {
	cfg := DefaultEtcdConfig(testNamespace)
	k := newKeeperTest(t, cfg)
	k.sync()
	oldCA := k.secret("training-etcd-ca").Data[caCertKey]
	k.now = k.now.Add(cfg.CAValidity - cfg.CARenewBefore + time.Hour)
	k.sync()
	bundle, err := certs.ParseCertificates(k.secret("training-etcd-ca").Data[caCertKey])
	if err != nil || len(bundle) != 2 {
		t.Fatalf("the bundle after a renewal holds %d certificates (%v), want the new and the old", len(bundle), err)
	}
	if !bytes.Contains(k.secret("training-etcd-ca").Data[caCertKey], oldCA) {
		t.Errorf("the bundle lost the old CA certificate before its end")
	}
	for _, name := range leafSecrets {
		if err := k.verifies(k.cert(name), oldCA); err != nil {
			t.Errorf("%s with the CA loaded before the renewal: %v", name, err)
		}
	}
	// Past the old certificate's end, it leaves the bundle.
	k.now = bundle[1].NotAfter.Add(time.Hour)
	k.sync()
	if bundle, _ := certs.ParseCertificates(k.secret("training-etcd-ca").Data[caCertKey]); len(bundle) != 1 {
		t.Errorf("the bundle holds %d certificates after the old one ended, want 1", len(bundle))
	}
}

// TestEtcdKeeperLeavesOthersSecrets: a Secret without the annotation is
// never written, and the error names it.
func TestEtcdKeeperLeavesOthersSecrets(t *testing.T) {
	for _, name := range append([]string{"training-etcd-ca"}, leafSecrets...) {
		t.Run(name, func(t *testing.T) {
			k := newKeeperTest(t, DefaultEtcdConfig(testNamespace))
			s := k.secret(name)
			s.Annotations = map[string]string{"cert-manager.io/certificate-name": name}
			s.Data = map[string][]byte{corev1.TLSCertKey: []byte("theirs")}
			if _, err := k.client.CoreV1().Secrets(testNamespace).Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			k.client.ClearActions()
			err := k.keeper.Sync(context.Background())
			if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), ManagedByAnnotation) {
				t.Errorf("Sync: %v, want an error naming %s and the annotation", err, name)
			}
			if got := k.secret(name).Data[corev1.TLSCertKey]; string(got) != "theirs" {
				t.Errorf("Secret %s was written", name)
			}
			if err := k.keeper.CheckSecrets(context.Background()); err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("CheckSecrets: %v, want an error naming %s", err, name)
			}
		})
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sameStrings(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
