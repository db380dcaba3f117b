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

package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"strings"
	"testing"
	"time"
)

func TestSelfSignedNamesItsHosts(t *testing.T) {
	c, err := SelfSigned("training-dashboard", "training-dashboard-0", "127.0.0.1", "")
	if err != nil {
		t.Fatal(err)
	}
	leaf := c.Leaf
	if leaf.Subject.CommonName != "training-dashboard" {
		t.Errorf("common name %q", leaf.Subject.CommonName)
	}
	for _, host := range []string{"training-dashboard-0", "127.0.0.1"} {
		if err := leaf.VerifyHostname(host); err != nil {
			t.Error(err)
		}
	}
	if err := leaf.VerifyHostname("elsewhere"); err == nil {
		t.Error("the certificate holds for a host it was not made for")
	}
	if len(leaf.DNSNames) != 1 || len(leaf.IPAddresses) != 1 {
		t.Errorf("names %v and addresses %v, want one of each (the empty host left out)", leaf.DNSNames, leaf.IPAddresses)
	}
	if !leaf.NotAfter.After(time.Now().Add(300 * 24 * time.Hour)) {
		t.Errorf("valid until %v, want about a year", leaf.NotAfter)
	}
	if err := leaf.CheckSignature(leaf.SignatureAlgorithm, leaf.RawTBSCertificate, leaf.Signature); err != nil {
		t.Errorf("not signed by its own key: %v", err)
	}
}

// TestCAIssues: a certificate the CA issues verifies against it for the
// usages asked, names its hosts, pairs with its key, and no other CA
// verifies it.
func TestCAIssues(t *testing.T) {
	now := time.Now()
	ca, err := NewCA(nil, pkix.Name{CommonName: "test-ca"}, now.Add(-time.Hour), now.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !ca.Cert.IsCA || !ca.Cert.MaxPathLenZero {
		t.Errorf("CA certificate: IsCA %v MaxPathLenZero %v, want both", ca.Cert.IsCA, ca.Cert.MaxPathLenZero)
	}
	names, ips := SplitHosts("etcd-0.etcd", "10.0.0.1")
	issued, err := ca.Issue(Request{
		Subject:     pkix.Name{CommonName: "etcd-0", Organization: []string{"TensorStack Training"}},
		DNSNames:    names,
		IPAddresses: ips,
		Usages:      []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		NotBefore:   now.Add(-time.Minute),
		NotAfter:    now.Add(time.Hour),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(issued.CertPEM, issued.KeyPEM); err != nil {
		t.Fatalf("certificate and key do not pair: %v", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	verify := func(roots *x509.CertPool, usage x509.ExtKeyUsage) error {
		_, err := issued.Cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}})
		return err
	}
	if err := verify(roots, x509.ExtKeyUsageServerAuth); err != nil {
		t.Errorf("does not verify as a server certificate: %v", err)
	}
	if err := verify(roots, x509.ExtKeyUsageClientAuth); err == nil {
		t.Error("verifies as a client certificate, which was not asked for")
	}
	other, err := NewCA(nil, pkix.Name{CommonName: "other-ca"}, now.Add(-time.Hour), now.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	otherRoots := x509.NewCertPool()
	otherRoots.AddCert(other.Cert)
	if err := verify(otherRoots, x509.ExtKeyUsageServerAuth); err == nil {
		t.Error("verifies against a CA that did not sign it")
	}
	for _, host := range []string{"etcd-0.etcd", "10.0.0.1"} {
		if err := issued.Cert.VerifyHostname(host); err != nil {
			t.Error(err)
		}
	}
	if issued.Cert.Subject.Organization[0] != "TensorStack Training" {
		t.Errorf("subject %v", issued.Cert.Subject)
	}
}

// TestNewCAKeepsAGivenKey: a CA made again for its key signs what the old
// one's certificate verifies, as a CA renewal needs.
func TestNewCAKeepsAGivenKey(t *testing.T) {
	now := time.Now()
	first, err := NewCA(nil, pkix.Name{CommonName: "ca"}, now.Add(-time.Hour), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	again, err := NewCA(first.Key, pkix.Name{CommonName: "ca"}, now.Add(-time.Hour), now.Add(48*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	issued, err := again.Issue(Request{Subject: pkix.Name{CommonName: "x"}, NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour),
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		t.Fatal(err)
	}
	if err := issued.Cert.CheckSignatureFrom(first.Cert); err != nil {
		t.Errorf("the old certificate of the same key does not verify it: %v", err)
	}
}

// TestKeysRoundTrip: a key written by EncodeKey reads back the same, and
// the older EC and RSA forms read too; what holds no key is an error.
func TestKeysRoundTrip(t *testing.T) {
	ec, _ := NewKey()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 1024) //nolint:gosec // a test key
	if err != nil {
		t.Fatal(err)
	}
	ecDER, _ := x509.MarshalECPrivateKey(ec)
	cases := map[string]struct {
		pem  []byte
		want interface {
			Equal(x crypto.PrivateKey) bool
		}
	}{
		"PKCS #8": {pem: must(EncodeKey(ec)), want: ec},
		"EC":      {pem: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: ecDER}), want: ec},
		"RSA":     {pem: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)}), want: rsaKey},
		"after a certificate": {pem: append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("x")}),
			must(EncodeKey(ec))...), want: ec},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseKey(tc.pem)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want.Equal(got) {
				t.Error("read back a different key")
			}
		})
	}
	if _, err := ParseKey([]byte("not PEM")); err == nil {
		t.Error("no error for data without a key")
	}
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	if _, err := EncodeKey(edKey); err != nil {
		t.Errorf("PKCS #8 takes an Ed25519 key: %v", err)
	}
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if pub, err := EncodePublicKey(p256.Public()); err != nil || len(pub) == 0 {
		t.Errorf("public key: %v", err)
	}
}

// TestCertificatesRoundTrip: certificates encoded together read back in
// order, and blocks of other types are skipped.
func TestCertificatesRoundTrip(t *testing.T) {
	a, _ := SelfSigned("a", "a.example")
	b, _ := SelfSigned("b", "192.0.2.1")
	data := EncodeCertificates(a.Leaf, b.Leaf)
	data = append(data, must(EncodeKey(a.PrivateKey.(*ecdsa.PrivateKey)))...)
	got, err := ParseCertificates(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Subject.CommonName != "a" || got[1].Subject.CommonName != "b" {
		t.Fatalf("read %d certificates, want a then b", len(got))
	}
	if !got[1].IPAddresses[0].Equal(net.ParseIP("192.0.2.1")) {
		t.Errorf("addresses %v", got[1].IPAddresses)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestWhyRenew: each reason to issue a certificate anew is found, and a good
// one is kept.
func TestWhyRenew(t *testing.T) {
	now := time.Now()
	ca, err := NewCA(nil, pkix.Name{CommonName: "ca"}, now.Add(-time.Hour), now.Add(1000*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewCA(nil, pkix.Name{CommonName: "other"}, now.Add(-time.Hour), now.Add(1000*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want := Request{Subject: pkix.Name{CommonName: "svc"}, DNSNames: []string{"svc.ns.svc", "svc"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(100 * time.Hour)}
	issue := func(by *CA, change func(*Request)) *Issued {
		r := want
		if change != nil {
			change(&r)
		}
		issued, err := by.Issue(r)
		if err != nil {
			t.Fatal(err)
		}
		return issued
	}
	good := issue(ca, nil)
	cases := []struct {
		name            string
		certPEM, keyPEM []byte
		wantReason      string // a part of the reason; "" for none
	}{
		{name: "good", certPEM: good.CertPEM, keyPEM: good.KeyPEM},
		{name: "none", wantReason: "there is none"},
		{name: "another key", certPEM: good.CertPEM, keyPEM: issue(ca, nil).KeyPEM, wantReason: "do not make a pair"},
	}
	changed := []struct {
		name       string
		by         *CA
		change     func(*Request)
		wantReason string
	}{
		{name: "names in another order are the same", by: ca, change: func(r *Request) { r.DNSNames = []string{"svc", "svc.ns.svc"} }},
		{name: "another CA", by: other, wantReason: "does not verify"},
		{name: "ends within the margin", by: ca, change: func(r *Request) { r.NotAfter = now.Add(time.Hour) }, wantReason: "expires"},
		{name: "other names", by: ca, change: func(r *Request) { r.DNSNames = []string{"svc"} }, wantReason: "names"},
		{name: "another address", by: ca, change: func(r *Request) { r.IPAddresses = nil }, wantReason: "names"},
		{name: "another common name", by: ca, change: func(r *Request) { r.Subject.CommonName = "x" }, wantReason: "names"},
		{name: "another usage", by: ca, change: func(r *Request) {
			r.Usages = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		}, wantReason: "usages"},
	}
	for _, c := range changed {
		issued := issue(c.by, c.change)
		cases = append(cases, struct {
			name            string
			certPEM, keyPEM []byte
			wantReason      string
		}{c.name, issued.CertPEM, issued.KeyPEM, c.wantReason})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := WhyRenew(tc.certPEM, tc.keyPEM, []*x509.Certificate{ca.Cert}, want, now, 10*time.Hour)
			if (tc.wantReason == "") != (got == "") || !strings.Contains(got, tc.wantReason) {
				t.Errorf("reason %q, want one with %q", got, tc.wantReason)
			}
		})
	}
}

// TestParseCA: a CA reads back from its PEM; a certificate that is not a
// CA's, or not the key's, is refused.
func TestParseCA(t *testing.T) {
	now := time.Now()
	ca, err := NewCA(nil, pkix.Name{CommonName: "ca"}, now.Add(-time.Hour), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	caKey := must(EncodeKey(ca.Key))
	got, err := ParseCA(EncodeCertificates(ca.Cert), caKey)
	if err != nil || !got.Cert.Equal(ca.Cert) || !SamePublicKey(got.Key.Public(), ca.Key.Public()) {
		t.Fatalf("read back %v, %v", got, err)
	}
	leaf, err := ca.Issue(Request{Subject: pkix.Name{CommonName: "leaf"}, NotBefore: now, NotAfter: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewKey()
	for name, pair := range map[string][2][]byte{
		"a leaf certificate": {leaf.CertPEM, leaf.KeyPEM},
		"another key":        {EncodeCertificates(ca.Cert), must(EncodeKey(other))},
		"no certificate":     {nil, caKey},
	} {
		if _, err := ParseCA(pair[0], pair[1]); err == nil {
			t.Errorf("%s: read as a CA", name)
		}
	}
}
