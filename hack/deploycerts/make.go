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

package main

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tensorstack.dev/training/pkg/certs"
	"tensorstack.dev/training/pkg/controller/servingcert"
)

// The installation's names (artifacts/deploy/base).
const (
	namespace  = "tensorstack-system"
	service    = "training-apiserver"
	secret     = "training-apiserver-tls"
	apiService = "v1beta1.batch.tensorstack.dev"
)

const (
	caValidity = 3650 * 24 * time.Hour
	// renewWithin is how long before its end a certificate is issued anew.
	renewWithin = 30 * 24 * time.Hour
	// backdate starts a certificate's validity a little before now, for
	// clocks that lag.
	backdate = 5 * time.Minute
)

type maker struct {
	*options
	log func(format string, a ...any)
	now time.Time
}

func (m *maker) make() error {
	if err := os.MkdirAll(m.out, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(m.out, 0o700); err != nil {
		return err
	}
	if err := writeNames(filepath.Join(m.out, namesFile), names{clusterDomain: m.clusterDomain, sans: m.sans}); err != nil {
		return err
	}
	if err := m.serving(); err != nil {
		return err
	}
	if err := m.etcd(); err != nil {
		return err
	}
	m.log("wrote %s/{secret.yaml,apiservice-cabundle.yaml,kustomization.yaml,etcd/}", m.out)
	m.log("install with: kubectl apply -k artifacts/deploy/overlays/generated-certs")
	return nil
}

// serving keeps the CA and training-apiserver's serving certificate, and
// writes their Component.
func (m *maker) serving() error {
	ca, made, err := m.keepCA(m.out, "tensorstack-training-ca")
	if err != nil {
		return err
	}
	want := m.servingRequest()
	why := "the CA is new"
	if !made {
		why = m.whyIssue(filepath.Join(m.out, "tls"), ca, want)
	}
	if why == "" {
		m.log("keeping the serving certificate")
	} else {
		m.log("issuing the serving certificate (%s): %s", why, strings.Join(m.servingHosts(), ", "))
		if err := m.issue(filepath.Join(m.out, "tls"), ca, want); err != nil {
			return fmt.Errorf("the serving certificate: %w", err)
		}
	}
	files, err := readFiles(m.out, "tls.crt", "tls.key", "ca.crt")
	if err != nil {
		return err
	}
	secretYAML := tlsSecretYAML(secret, "app.kubernetes.io/name: training-apiserver", files[0], files[1], files[2])
	caBundle := fmt.Sprintf(`# Written by hack/deploy-certs.sh: kube-apiserver trusts this CA, and only
# this one, for %s.
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: %s
spec:
  caBundle: %s
`, apiService, apiService, base64.StdEncoding.EncodeToString(files[2]))
	component := `# Written by hack/deploy-certs.sh: the serving certificate of
# training-apiserver and the matching caBundle, as a kustomize Component.
apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
resources:
- secret.yaml
patches:
- path: apiservice-cabundle.yaml
`
	return errors.Join(
		os.WriteFile(filepath.Join(m.out, "secret.yaml"), []byte(secretYAML), 0o600),
		os.WriteFile(filepath.Join(m.out, "apiservice-cabundle.yaml"), []byte(caBundle), 0o644),
		os.WriteFile(filepath.Join(m.out, "kustomization.yaml"), []byte(component), 0o644),
	)
}

// tlsSecretYAML is a kubernetes.io/tls Secret of the installation's
// namespace, with one more label when label ("key: value") is not empty.
func tlsSecretYAML(name, label string, tlsCrt, tlsKey, caCrt []byte) string {
	if label != "" {
		label = "\n    " + label
	}
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf(`# Written by hack/deploy-certs.sh. Holds a private key: do not commit it.
apiVersion: v1
kind: Secret
metadata:
  name: %s
  namespace: %s
  labels:%s
    app.kubernetes.io/part-of: tensorstack-training
type: kubernetes.io/tls
data:
  tls.crt: %s
  tls.key: %s
  ca.crt: %s
`, name, namespace, label, b64(tlsCrt), b64(tlsKey), b64(caCrt))
}

// servingHosts are the names the serving certificate is for: the Service's,
// and the names given.
func (m *maker) servingHosts() []string {
	return append([]string{
		service,
		service + "." + namespace,
		service + "." + namespace + ".svc",
		service + "." + namespace + ".svc." + m.clusterDomain,
	}, m.sans...)
}

// servingRequest is what the serving certificate is for.
func (m *maker) servingRequest() certs.Request {
	names, ips := certs.SplitHosts(m.servingHosts()...)
	return certs.Request{
		Subject:     pkix.Name{CommonName: service + "." + namespace + ".svc"},
		DNSNames:    names,
		IPAddresses: ips,
		Usages:      []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		NotBefore:   m.now.Add(-backdate),
		NotAfter:    m.now.Add(time.Duration(m.days) * 24 * time.Hour),
	}
}

// etcd keeps the etcd CA and the certificates of its members and its
// client, and writes their Component. The etcd certificates have a CA of
// their own: a certificate of the serving CA must not open etcd.
func (m *maker) etcd() error {
	dir := filepath.Join(m.out, "etcd")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	ca, made, err := m.keepCA(dir, "tensorstack-training-etcd-ca")
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return err
	}
	var secrets []string
	for _, spec := range servingcert.DefaultEtcdConfig(namespace).Certificates() {
		base := filepath.Join(dir, spec.Role)
		want := spec.Request(m.now, time.Duration(m.days)*24*time.Hour)
		why := "the etcd CA is new"
		if !made {
			why = m.whyIssue(base, ca, want)
		}
		if why != "" {
			m.log("issuing the etcd %s certificate (%s)", spec.Role, why)
			if err := m.issue(base, ca, want); err != nil {
				return fmt.Errorf("the etcd %s certificate: %w", spec.Role, err)
			}
		}
		files, err := readFiles(dir, spec.Role+".crt", spec.Role+".key")
		if err != nil {
			return err
		}
		secrets = append(secrets, tlsSecretYAML(spec.Secret, "", files[0], files[1], caPEM))
	}
	component := `# Written by hack/deploy-certs.sh: the etcd cluster's certificates, as a
# kustomize Component.
apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
resources:
- secrets.yaml
`
	return errors.Join(
		os.WriteFile(filepath.Join(dir, "secrets.yaml"), []byte(strings.Join(secrets, "---\n")), 0o600),
		os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(component), 0o644),
	)
}

// keepCA reads the CA in dir (ca.crt, ca.key), or makes a new one when
// there is none, it is not good for another renewWithin, or --new-ca asks.
// It says whether the CA is new.
func (m *maker) keepCA(dir, commonName string) (*certs.CA, bool, error) {
	why := "--new-ca"
	if !m.newCA {
		var ca *certs.CA
		if ca, why = readCA(dir, m.now); why == "" {
			m.log("reusing the CA in %s", dir)
			return ca, false, nil
		}
	}
	m.log("creating a new CA in %s (%s)", dir, why)
	ca, err := certs.NewCA(nil, pkix.Name{CommonName: commonName}, m.now.Add(-backdate), m.now.Add(caValidity))
	if err != nil {
		return nil, false, err
	}
	keyPEM, err := certs.EncodeKey(ca.Key)
	if err != nil {
		return nil, false, err
	}
	if err := writePair(filepath.Join(dir, "ca"), certs.EncodeCertificates(ca.Cert), keyPEM); err != nil {
		return nil, false, err
	}
	return ca, true, nil
}

// readCA reads the CA in dir, and says why it cannot be used, if it cannot.
func readCA(dir string, now time.Time) (*certs.CA, string) {
	files, err := readFiles(dir, "ca.crt", "ca.key")
	if err != nil {
		return nil, "there is none"
	}
	ca, err := certs.ParseCA(files[0], files[1])
	if err != nil {
		return nil, err.Error()
	}
	if !now.Add(renewWithin).Before(ca.Cert.NotAfter) {
		return nil, "it expires within 30 days"
	}
	return ca, ""
}

// whyIssue says why the certificate at base (.crt, .key) is issued anew,
// or "" when it is kept.
func (m *maker) whyIssue(base string, ca *certs.CA, want certs.Request) string {
	if m.renew {
		return "--renew"
	}
	certPEM, _ := os.ReadFile(base + ".crt")
	keyPEM, _ := os.ReadFile(base + ".key")
	return certs.WhyRenew(certPEM, keyPEM, []*x509.Certificate{ca.Cert}, want, m.now, renewWithin)
}

func (m *maker) issue(base string, ca *certs.CA, want certs.Request) error {
	issued, err := ca.Issue(want)
	if err != nil {
		return err
	}
	return writePair(base, issued.CertPEM, issued.KeyPEM)
}

// writePair writes base.crt and base.key, the key readable by its owner
// only, each through a file renamed into place.
func writePair(base string, certPEM, keyPEM []byte) error {
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{{base + ".key", keyPEM, 0o600}, {base + ".crt", certPEM, 0o644}} {
		tmp := f.path + ".new"
		if err := os.WriteFile(tmp, f.data, f.mode); err != nil {
			return err
		}
		if err := os.Rename(tmp, f.path); err != nil {
			return err
		}
	}
	return nil
}

func readFiles(dir string, names ...string) ([][]byte, error) {
	out := make([][]byte, len(names))
	for i, name := range names {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		out[i] = data
	}
	return out, nil
}
