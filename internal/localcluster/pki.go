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
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"path/filepath"
	"time"
)

// pki issues the stack's throw-away certificates: ECDSA P-256 (fast to
// make), valid for ten years, for a cluster bound to 127.0.0.1. CAs are kept
// in memory for signing; everything is written through the Host.
type pki struct {
	host Host
	dir  string
	cas  map[string]*issuer
}

type issuer struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

type certKind int

const (
	clientCert certKind = iota
	serverCert
)

func newPKI(h Host, dir string) *pki {
	return &pki{host: h, dir: dir, cas: map[string]*issuer{}}
}

func (p *pki) path(name, ext string) string { return filepath.Join(p.dir, name+ext) }

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		panic(err) // the system's randomness failed: nothing else will work
	}
	return n
}

// ca makes a self-signed CA, NAME.crt and NAME.key.
func (p *pki) ca(name, cn string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("CA %s: %w", name, err)
	}
	cert, _ := x509.ParseCertificate(der)
	iss := &issuer{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
	p.cas[name] = iss
	if _, err := p.writeKey(name, key); err != nil {
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
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if kind == serverCert {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	for _, san := range sans {
		if ip := net.ParseIP(san); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, san)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, iss.cert, &key.PublicKey, iss.key)
	if err != nil {
		return nil, nil, fmt.Errorf("certificate %s: %w", name, err)
	}
	if keyPEM, err = p.writeKey(name, key); err != nil {
		return nil, nil, err
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return certPEM, keyPEM, p.host.WriteFile(p.path(name, ".crt"), certPEM, 0o644)
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
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	if _, err := p.writeKey(name, key); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	return p.host.WriteFile(p.path(name, ".pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}

func (p *pki) writeKey(name string, key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	return keyPEM, p.host.WriteFile(p.path(name, ".key"), keyPEM, 0o600)
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
