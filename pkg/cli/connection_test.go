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

package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
)

const twoContexts = `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://a.example:6443"}
- name: b
  cluster: {server: "https://b.example:6443"}
users:
- name: u
  user: {token: secret}
contexts:
- name: a
  context: {cluster: a, user: u, namespace: alpha}
- name: b
  context: {cluster: b, user: u, namespace: beta}
current-context: a
`

// parseConnection parses args as the plugin's connection flags.
func parseConnection(t *testing.T, args ...string) *ConnectionFlags {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconfig, []byte(twoContexts), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := NewConnectionFlags()
	set := pflag.NewFlagSet("kubectl-training", pflag.ContinueOnError)
	flags.AddFlags(set)
	if err := set.Parse(append([]string{"--kubeconfig", kubeconfig}, args...)); err != nil {
		t.Fatal(err)
	}
	return flags
}

// TestConnectionFlagsChangeTheKubeconfig: the flags pick the context and
// override its namespace, server and user as kubectl's do.
func TestConnectionFlagsChangeTheKubeconfig(t *testing.T) {
	plain := parseConnection(t)
	config, err := plain.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	namespace, explicit, err := plain.Namespace()
	if err != nil || config.Host != "https://a.example:6443" || config.BearerToken != "secret" || namespace != "alpha" || explicit {
		t.Errorf("the current context: host %q, token %q, namespace %q (explicit %t), %v; want a's, alpha from the context",
			config.Host, config.BearerToken, namespace, explicit, err)
	}

	flags := parseConnection(t, "--context", "b", "-n", "team", "--as", "alice", "--as-group", "ml",
		"--as-user-extra", "reason=audit", "--as-user-extra", "reason=debug", "--request-timeout", "5s")
	config, err = flags.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	if config.Host != "https://b.example:6443" || config.Impersonate.UserName != "alice" || len(config.Impersonate.Groups) != 1 ||
		len(config.Impersonate.Extra["reason"]) != 2 || config.Timeout.String() != "5s" {
		t.Errorf("host %q, impersonating %+v, timeout %s; want b's, alice of ml with two reasons, 5s", config.Host, config.Impersonate, config.Timeout)
	}
	if namespace, explicit, _ := flags.Namespace(); namespace != "team" || !explicit {
		t.Errorf("namespace %q (explicit %t), want -n's team", namespace, explicit)
	}

	server := parseConnection(t, "-s", "https://elsewhere:443")
	if config, err := server.RESTConfig(); err != nil || config.Host != "https://elsewhere:443" {
		t.Errorf("-s: host %q, %v", config.Host, err)
	}
}
