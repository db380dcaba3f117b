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

package framework

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"tensorstack.dev/training/internal/localcluster"
)

// UserConfig returns a client configuration for user (with groups) that
// authenticates with a fresh client certificate signed by the cluster CA
// (E2E_LOCAL_DIR/pki/ca.crt), the way kube-apiserver's --client-ca-file
// expects: the common name is the user, the organizations its groups.
func (f *Framework) UserConfig(user string, groups ...string) *rest.Config {
	f.T.Helper()
	pki := filepath.Join(f.Env.LocalDir, "pki")
	caCert, err := readCert(filepath.Join(pki, "ca.crt"))
	if err != nil {
		f.T.Fatal(err)
	}
	caKey, err := readKey(filepath.Join(pki, "ca.key"))
	if err != nil {
		f.T.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.T.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		f.T.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: user, Organization: groups},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		f.T.Fatalf("signing a client certificate for %s: %v", user, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		f.T.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(f.Config)
	cfg.CertData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	cfg.KeyData = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	return cfg
}

func readCert(path string) (*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%s: no PEM data", path)
	}
	return x509.ParseCertificate(block.Bytes)
}

func readKey(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, fmt.Errorf("%s: no private key", path)
		}
		switch block.Type {
		case "EC PRIVATE KEY":
			return x509.ParseECPrivateKey(block.Bytes)
		case "RSA PRIVATE KEY":
			return x509.ParsePKCS1PrivateKey(block.Bytes)
		case "PRIVATE KEY":
			k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
			if err != nil {
				return nil, err
			}
			s, ok := k.(crypto.Signer)
			if !ok {
				return nil, fmt.Errorf("%s: unsupported key %T", path, k)
			}
			return s, nil
		}
	}
}

// AnonymousHTTPClient is a plain HTTPS client that trusts the CA in caFile
// (the cluster CA when empty) and presents no credentials.
func (f *Framework) AnonymousHTTPClient(caFile string) *http.Client {
	f.T.Helper()
	pool := x509.NewCertPool()
	var pemData []byte
	var err error
	switch {
	case caFile != "":
		pemData, err = os.ReadFile(caFile)
	case len(f.Config.CAData) > 0:
		pemData = f.Config.CAData
	default:
		pemData, err = os.ReadFile(f.Config.CAFile)
	}
	if err != nil {
		f.T.Fatal(err)
	}
	if !pool.AppendCertsFromPEM(pemData) {
		f.T.Fatalf("no CA certificate in %q", caFile)
	}
	return &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}
}

// LocalSetting reads a setting of the running stack (its state file in
// E2E_LOCAL_DIR), such as LOCAL_TRAINING_PORT.
func (f *Framework) LocalSetting(name string) string {
	f.T.Helper()
	st, err := localcluster.Load(f.Env.LocalDir)
	if err != nil {
		f.T.Fatal(err)
	}
	for _, kv := range st.Settings.Env() {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	f.T.Fatalf("%s is not a setting of the stack in %s", name, f.Env.LocalDir)
	return ""
}
