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

package localcluster

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"time"

	"tensorstack.dev/training/pkg/certs"
)

// pki issues the stack's throw-away certificates (pkg/certs), valid for ten
// years, for a cluster bound to 127.0.0.1. CAs are kept in memory for
// signing; everything is written through the Host.
type pki struct {
	host Host
	dir  string
	cas  map[string]*issuer
}

type issuer struct {
	ca  *certs.CA
	pem []byte
}

type certKind int

const (
	clientCert certKind = iota
	serverCert
)

// pkiValidity is how long the stack's certificates hold.
const pkiValidity = 10 * 365 * 24 * time.Hour

func newPKI(h Host, dir string) *pki {
	return &pki{host: h, dir: dir, cas: map[string]*issuer{}}
}

func (p *pki) path(name, ext string) string { return filepath.Join(p.dir, name+ext) }

// ca makes a self-signed CA, NAME.crt and NAME.key.
func (p *pki) ca(name, cn string) error {
	now := time.Now()
	ca, err := certs.NewCA(nil, pkix.Name{CommonName: cn}, now.Add(-time.Hour), now.Add(pkiValidity))
	if err != nil {
		return fmt.Errorf("CA %s: %w", name, err)
	}
	iss := &issuer{ca: ca, pem: certs.EncodeCertificates(ca.Cert)}
	p.cas[name] = iss
	keyPEM, err := certs.EncodeKey(ca.Key)
	if err != nil {
		return err
	}
	if err := p.host.WriteFile(p.path(name, ".key"), keyPEM, 0o600); err != nil {
		return err
	}
	return p.host.WriteFile(p.path(name, ".crt"), iss.pem, 0o644)
}

// cert issues NAME.crt and NAME.key, signed by CA ca, for the subject
// (organizations, common name); sans are IP addresses or DNS names.
func (p *pki) cert(ca, name string, orgs []string, cn string, kind certKind, sans ...string) (certPEM, keyPEM []byte, err error) {
	iss, ok := p.cas[ca]
	if !ok {
		return nil, nil, fmt.Errorf("certificate %s: no CA %s made yet", name, ca)
	}
	usage := x509.ExtKeyUsageClientAuth
	if kind == serverCert {
		usage = x509.ExtKeyUsageServerAuth
	}
	names, ips := certs.SplitHosts(sans...)
	now := time.Now()
	issued, err := iss.ca.Issue(certs.Request{
		Subject:     pkix.Name{CommonName: cn, Organization: orgs},
		DNSNames:    names,
		IPAddresses: ips,
		Usages:      []x509.ExtKeyUsage{usage},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(pkiValidity),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("certificate %s: %w", name, err)
	}
	if err := p.host.WriteFile(p.path(name, ".key"), issued.KeyPEM, 0o600); err != nil {
		return nil, nil, err
	}
	return issued.CertPEM, issued.KeyPEM, p.host.WriteFile(p.path(name, ".crt"), issued.CertPEM, 0o644)
}

// client issues client certificate NAME and a kubeconfig for it at file.
func (p *pki) client(file, server, name string, orgs []string, user string) error {
	certPEM, keyPEM, err := p.cert("ca", name, orgs, user, clientCert)
	if err != nil {
		return err
	}
	return p.kubeconfig(file, server, "ca", user, certPEM, keyPEM)
}

// keypair makes NAME.key and NAME.pub (service-account token signing, ES256).
func (p *pki) keypair(name string) error {
	key, err := certs.NewKey()
	if err != nil {
		return err
	}
	keyPEM, err := certs.EncodeKey(key)
	if err != nil {
		return err
	}
	if err := p.host.WriteFile(p.path(name, ".key"), keyPEM, 0o600); err != nil {
		return err
	}
	pub, err := certs.EncodePublicKey(key.Public())
	if err != nil {
		return err
	}
	return p.host.WriteFile(p.path(name, ".pub"), pub, 0o644)
}

// kubeconfig writes a kubeconfig for user with CA ca and the client
// certificate embedded, so it can be copied anywhere.
func (p *pki) kubeconfig(file, server, ca, user string, certPEM, keyPEM []byte) error {
	b64 := base64.StdEncoding.EncodeToString
	data := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %s
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: local
  context:
    cluster: local
    user: %s
current-context: local
`, server, b64(p.cas[ca].pem), user, b64(certPEM), b64(keyPEM), user)
	return p.host.WriteFile(file, []byte(data), 0o600)
}
