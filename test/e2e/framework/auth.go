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
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"tensorstack.dev/training/internal/localcluster"
	"tensorstack.dev/training/pkg/certs"
)

// UserConfig returns a client configuration for user (with groups) that
// authenticates with a fresh client certificate signed by the cluster CA
// (E2E_LOCAL_DIR/pki/ca.crt), the way kube-apiserver's --client-ca-file
// expects: the common name is the user, the organizations its groups.
func (f *Framework) UserConfig(user string, groups ...string) *rest.Config {
	f.T.Helper()
	ca, err := readCA(filepath.Join(f.Env.LocalDir, "pki"), "ca")
	if err != nil {
		f.T.Fatal(err)
	}
	now := time.Now()
	issued, err := ca.Issue(certs.Request{
		Subject:   pkix.Name{CommonName: user, Organization: groups},
		Usages:    []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		NotBefore: now.Add(-time.Minute),
		NotAfter:  now.Add(time.Hour),
	})
	if err != nil {
		f.T.Fatalf("signing a client certificate for %s: %v", user, err)
	}
	cfg := rest.AnonymousClientConfig(f.Config)
	cfg.CertData, cfg.KeyData = issued.CertPEM, issued.KeyPEM
	return cfg
}

// readCA reads the local stack's CA NAME from dir (NAME.crt, NAME.key).
func readCA(dir, name string) (*certs.CA, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, name+".crt"))
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, name+".key"))
	if err != nil {
		return nil, err
	}
	ca, err := certs.ParseCA(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("CA %s in %s: %w", name, dir, err)
	}
	return ca, nil
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
