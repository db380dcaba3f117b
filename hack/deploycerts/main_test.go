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
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"tensorstack.dev/training/pkg/certs"
)

// deployCerts runs the command on dir at now with args, and fails the test
// on an error.
func deployCerts(t *testing.T, dir string, now time.Time, args ...string) string {
	t.Helper()
	var stderr bytes.Buffer
	if err := run(append([]string{"--out", dir}, args...), &bytes.Buffer{}, &stderr, now); err != nil {
		t.Fatalf("deploy-certs %v: %v\n%s", args, err, stderr.String())
	}
	return stderr.String()
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func certificate(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	read, err := certs.ParseCertificates(read(t, path))
	if err != nil || len(read) != 1 {
		t.Fatalf("%s: %d certificates, %v", path, len(read), err)
	}
	return read[0]
}

func verifies(cert, ca *x509.Certificate, usage x509.ExtKeyUsage) error {
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	_, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}})
	return err
}

// TestFirstRun: a first run makes both CAs, a serving certificate for the
// Service's names signed by the serving CA, the etcd certificates signed by
// the etcd CA alone, and Secrets that hold them; keys and the directories
// are their owner's only.
func TestFirstRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	deployCerts(t, dir, time.Now(), "--san", "10.0.0.9", "--san", "training.example")

	ca := certificate(t, filepath.Join(dir, "ca.crt"))
	serving := certificate(t, filepath.Join(dir, "tls.crt"))
	if err := verifies(serving, ca, x509.ExtKeyUsageServerAuth); err != nil {
		t.Errorf("the serving certificate does not verify with the CA: %v", err)
	}
	for _, host := range []string{"training-apiserver", "training-apiserver.tensorstack-system.svc",
		"training-apiserver.tensorstack-system.svc.cluster.local", "10.0.0.9", "training.example"} {
		if err := serving.VerifyHostname(host); err != nil {
			t.Errorf("serving certificate: %v", err)
		}
	}

	etcdCA := certificate(t, filepath.Join(dir, "etcd", "ca.crt"))
	server := certificate(t, filepath.Join(dir, "etcd", "server.crt"))
	if err := verifies(server, etcdCA, x509.ExtKeyUsageServerAuth); err != nil {
		t.Errorf("the etcd server certificate does not verify with the etcd CA: %v", err)
	}
	if err := verifies(server, ca, x509.ExtKeyUsageServerAuth); err == nil {
		t.Error("the etcd server certificate verifies with the serving CA")
	}
	client := certificate(t, filepath.Join(dir, "etcd", "client.crt"))
	if err := verifies(client, etcdCA, x509.ExtKeyUsageClientAuth); err != nil || client.Subject.CommonName != "training-apiserver" {
		t.Errorf("etcd client certificate %q: %v", client.Subject.CommonName, err)
	}
	if err := verifies(client, etcdCA, x509.ExtKeyUsageServerAuth); err == nil {
		t.Error("the etcd client certificate also serves")
	}

	var secret struct {
		Metadata struct{ Name, Namespace string }
		Data     map[string]string
	}
	if err := yaml.Unmarshal(read(t, filepath.Join(dir, "secret.yaml")), &secret); err != nil {
		t.Fatal(err)
	}
	tlsCrt, _ := base64.StdEncoding.DecodeString(secret.Data["tls.crt"])
	if secret.Metadata.Name != "training-apiserver-tls" || secret.Metadata.Namespace != "tensorstack-system" ||
		!bytes.Equal(tlsCrt, read(t, filepath.Join(dir, "tls.crt"))) {
		t.Errorf("secret.yaml: %s/%s does not hold tls.crt", secret.Metadata.Namespace, secret.Metadata.Name)
	}
	etcdSecrets := string(read(t, filepath.Join(dir, "etcd", "secrets.yaml")))
	for _, name := range []string{"training-etcd-server", "training-etcd-peer", "training-etcd-client"} {
		if !strings.Contains(etcdSecrets, "name: "+name+"\n") {
			t.Errorf("etcd/secrets.yaml has no Secret %s", name)
		}
	}

	for path, want := range map[string]os.FileMode{
		dir: 0o700 | os.ModeDir, filepath.Join(dir, "etcd"): 0o700 | os.ModeDir,
		filepath.Join(dir, "ca.key"): 0o600, filepath.Join(dir, "tls.key"): 0o600,
		filepath.Join(dir, "etcd", "peer.key"): 0o600, filepath.Join(dir, "secret.yaml"): 0o600,
	} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode() != want {
			t.Errorf("%s: mode %v, want %v", path, info.Mode(), want)
		}
	}
}

// TestRunsAgain: a run keeps what is good, remembers the names given
// before, and issues anew what --san, --renew and --new-ca change.
func TestRunsAgain(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	now := time.Now()
	files := []string{"ca.crt", "tls.crt", "etcd/ca.crt", "etcd/server.crt", "etcd/peer.crt", "etcd/client.crt"}
	snapshot := func() map[string]string {
		out := map[string]string{}
		for _, f := range files {
			out[f] = string(read(t, filepath.Join(dir, f)))
		}
		return out
	}
	changed := func(before, after map[string]string) []string {
		var out []string
		for _, f := range files {
			if before[f] != after[f] {
				out = append(out, f)
			}
		}
		return out
	}
	expect := func(step string, got []string, want ...string) {
		t.Helper()
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s changed %v, want %v", step, got, want)
		}
	}

	deployCerts(t, dir, now, "--san", "training.example")
	first := snapshot()
	deployCerts(t, dir, now.Add(time.Hour))
	second := snapshot()
	expect("a second run", changed(first, second))
	if err := certificate(t, filepath.Join(dir, "tls.crt")).VerifyHostname("training.example"); err != nil {
		t.Errorf("the name given before is gone: %v", err)
	}

	deployCerts(t, dir, now.Add(time.Hour), "--san", "other.example")
	third := snapshot()
	expect("a new --san", changed(second, third), "tls.crt")

	deployCerts(t, dir, now.Add(time.Hour), "--renew")
	fourth := snapshot()
	expect("--renew", changed(third, fourth), "tls.crt", "etcd/server.crt", "etcd/peer.crt", "etcd/client.crt")

	// A year on, every certificate expires within 30 days: each is issued
	// anew under the CAs it has.
	deployCerts(t, dir, now.Add(340*24*time.Hour))
	fifth := snapshot()
	expect("a run near the end", changed(fourth, fifth), "tls.crt", "etcd/server.crt", "etcd/peer.crt", "etcd/client.crt")

	deployCerts(t, dir, now.Add(time.Hour), "--new-ca")
	expect("--new-ca", changed(fifth, snapshot()), files...)
}

// TestBadInput: what cannot make a certificate is refused, naming the flag,
// before anything is written.
func TestBadInput(t *testing.T) {
	for name, args := range map[string][]string{
		"no days":         {"--days", "0"},
		"a bad name":      {"--san", "not a name!"},
		"a bad domain":    {"--cluster-domain", "UPPER_case"},
		"a stray word":    {"extra"},
		"an unknown flag": {"--nope"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "certs")
			err := run(append([]string{"--out", dir}, args...), &bytes.Buffer{}, &bytes.Buffer{}, time.Now())
			if err == nil {
				t.Fatal("no error")
			}
			if _, statErr := os.Stat(dir); !os.IsNotExist(statErr) {
				t.Errorf("wrote %s anyway", dir)
			}
		})
	}
}

// TestReadsTheScriptsNames: names.env as the shell script wrote it is read.
func TestReadsTheScriptsNames(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, namesFile)
	script := "# Written by hack/deploy-certs.sh: the names of the serving certificate.\n" +
		"saved_cluster_domain=corp.local\nsaved_extra_sans=(10.1.2.3 training.corp )\n"
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := readNames(path)
	if err != nil {
		t.Fatal(err)
	}
	if n.clusterDomain != "corp.local" || strings.Join(n.sans, ",") != "10.1.2.3,training.corp" {
		t.Errorf("read %+v", n)
	}
	if err := writeNames(path, n); err != nil {
		t.Fatal(err)
	}
	if again, _ := readNames(path); again.clusterDomain != n.clusterDomain || strings.Join(again.sans, ",") != strings.Join(n.sans, ",") {
		t.Errorf("written and read back %+v, want %+v", again, n)
	}
}
