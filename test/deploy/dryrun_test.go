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

package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestServerDryRun sends every installation to kube-apiserver with
// kubectl apply --dry-run=server: schema and strict field validation,
// defaulting, admission (Pod Security "restricted" on the namespace
// included) all run, nothing is stored. cert-manager's kinds are left out of
// the cert-manager installations: the local cluster has no cert-manager
// CRDs, so the server cannot check them.
func TestServerDryRun(t *testing.T) {
	e := clusterEnv(t)
	ctx := context.Background()

	// The namespace for real, with its Pod Security labels: admission judges
	// the workloads by the labels the namespace has, not by a dry-run one.
	ns := e.render(t, overlayByName(t, "base")).find("Namespace", "", systemNamespace)
	if ns == nil {
		t.Fatalf("base has no Namespace %s", systemNamespace)
	}
	if _, _, err := e.kubectlCluster(ctx, bytes.NewReader(mustJSON(t, ns.Object)), "apply", "-f", "-"); err != nil {
		t.Fatalf("applying the namespace: %v", err)
	}

	for _, o := range overlays {
		t.Run(o.name, func(t *testing.T) {
			r := e.render(t, o)
			var items []any
			var skipped []string
			for _, obj := range r.objects {
				if obj.GroupVersionKind().Group == certManagerGroup {
					skipped = append(skipped, obj.GetKind()+"/"+obj.GetName())
					continue
				}
				items = append(items, obj.Object)
			}
			if o.certs == "cert-manager" {
				if len(skipped) == 0 {
					t.Errorf("expected cert-manager objects to leave out")
				}
				t.Logf("left out of the dry run (no cert-manager CRDs here): %s", strings.Join(skipped, ", "))
			}
			list := mustJSON(t, map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
			start := time.Now()
			stdout, stderr, err := e.kubectlCluster(ctx, bytes.NewReader(list), "apply", "--dry-run=server", "-f", "-")
			took := time.Since(start)
			if err != nil {
				t.Fatalf("server-side dry run: %v", err)
			}
			t.Logf("kubectl apply --dry-run=server (%s): %d objects in %s", o.name, len(items), took.Round(time.Millisecond))
			lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
			if len(lines) != len(items) {
				t.Errorf("%d objects sent, kubectl reported %d:\n%s", len(items), len(lines), stdout)
			}
			for _, l := range lines {
				if !strings.HasSuffix(l, "(server dry run)") {
					t.Errorf("unexpected kubectl output %q", l)
				}
			}
			// Warnings: Pod Security violations, deprecated APIs, unknown
			// fields dropped.
			for _, l := range strings.Split(string(stderr), "\n") {
				if strings.Contains(l, "Warning") || strings.Contains(l, "would violate") {
					t.Errorf("kube-apiserver warned: %s", l)
				}
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
