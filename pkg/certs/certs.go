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

// Package certs makes the project's X.509 certificates, in one way for every
// place that needs one: ECDSA P-256 keys (fast to make, where RSA takes a
// large part of a second), CAs and the certificates they sign, serving
// certificates signed by their own key, and the PEM forms of each.
//
// Its users: the local stack's PKI (internal/localcluster), the etcd
// certificates the controller keeps (pkg/controller/servingcert), the
// self-signed serving certificates of the metrics server and the dashboard,
// the installation's certificates (hack/deploy-certs.sh) and the e2e
// tests' users.
package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// NewKey makes a private key of the kind every certificate here has.
func NewKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

// serialNumber is a random, positive serial number of up to 128 bits.
func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	return n.Add(n, big.NewInt(1)), nil
}

// CA is a certificate authority: its key and its certificate.
type CA struct {
	Key  crypto.Signer
	Cert *x509.Certificate
}

// NewCA makes a self-signed CA certificate for key (a new key when nil),
// valid from notBefore to notAfter. It signs certificates only, not other
// CAs.
func NewCA(key crypto.Signer, subject pkix.Name, notBefore, notAfter time.Time) (*CA, error) {
	if key == nil {
		k, err := NewKey()
		if err != nil {
			return nil, fmt.Errorf("generating the CA key: %w", err)
		}
		key = k
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	template := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               subject,
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	cert, err := create(template, template, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("creating the CA certificate %q: %w", subject.CommonName, err)
	}
	return &CA{Key: key, Cert: cert}, nil
}

// ParseCA reads a CA from PEM: the first certificate of certPEM, and the
// key of keyPEM. It is an error when the certificate is not a CA's, or not
// the key's.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	read, err := ParseCertificates(certPEM)
	if err != nil {
		return nil, err
	}
	if len(read) == 0 {
		return nil, errors.New("no certificate in PEM")
	}
	key, err := ParseKey(keyPEM)
	if err != nil {
		return nil, err
	}
	if !read[0].IsCA || !SamePublicKey(read[0].PublicKey, key.Public()) {
		return nil, errors.New("the certificate is not a CA's, or not the key's")
	}
	return &CA{Key: key, Cert: read[0]}, nil
}

// SamePublicKey says whether a and b are the same public key.
func SamePublicKey(a, b crypto.PublicKey) bool {
	e, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && e.Equal(b)
}

// Request is what a certificate is for.
type Request struct {
	Subject     pkix.Name
	DNSNames    []string
	IPAddresses []net.IP
	// Usages are the extended key usages: server, client, or both.
	Usages              []x509.ExtKeyUsage
	NotBefore, NotAfter time.Time
}

// Issued is a certificate the CA signed, with its new key, in PEM.
type Issued struct {
	Cert            *x509.Certificate
	CertPEM, KeyPEM []byte
}

// Issue signs a certificate for a new key as r asks.
func (ca *CA) Issue(r Request) (*Issued, error) {
	key, err := NewKey()
	if err != nil {
		return nil, fmt.Errorf("generating a key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	template := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               r.Subject,
		DNSNames:              r.DNSNames,
		IPAddresses:           r.IPAddresses,
		NotBefore:             r.NotBefore,
		NotAfter:              r.NotAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           r.Usages,
		BasicConstraintsValid: true,
	}
	cert, err := create(template, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, fmt.Errorf("signing the certificate %q: %w", r.Subject.CommonName, err)
	}
	keyPEM, err := EncodeKey(key)
	if err != nil {
		return nil, err
	}
	return &Issued{Cert: cert, CertPEM: EncodeCertificates(cert), KeyPEM: keyPEM}, nil
}

// SelfSigned makes a serving certificate named commonName, signed by its
// own key, for hosts (names or IP addresses; empty ones are left out),
// valid for a year: for a server reached through something that does not
// check it (a scraper told to skip the check, a proxy, a port-forward).
func SelfSigned(commonName string, hosts ...string) (*tls.Certificate, error) {
	key, err := NewKey()
	if err != nil {
		return nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	names, ips := SplitHosts(hosts...)
	template := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		DNSNames:              names,
		IPAddresses:           ips,
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	leaf, err := create(template, template, key.Public(), key)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{leaf.Raw}, PrivateKey: key, Leaf: leaf}, nil
}

// SplitHosts sorts hosts into DNS names and IP addresses, leaving empty
// ones out.
func SplitHosts(hosts ...string) (names []string, ips []net.IP) {
	for _, host := range hosts {
		switch ip := net.ParseIP(host); {
		case host == "":
		case ip != nil:
			ips = append(ips, ip)
		default:
			names = append(names, host)
		}
	}
	return names, ips
}

func create(template, parent *x509.Certificate, public crypto.PublicKey, signer crypto.Signer) (*x509.Certificate, error) {
	der, err := x509.CreateCertificate(rand.Reader, template, parent, public, signer)
	if err != nil {
		return nil, err
	}
	return x509.ParseCertificate(der)
}
