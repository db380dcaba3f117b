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

package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// yamlBlocks are the ```yaml blocks of a Markdown file.
func yamlBlocks(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(data), -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// externalFrameworks reads integrations.externalFrameworks of a Kueue
// configuration.
func externalFrameworks(t *testing.T, doc string) []string {
	t.Helper()
	var cfg struct {
		Kind         string `json:"kind"`
		Integrations struct {
			ExternalFrameworks []string `json:"externalFrameworks"`
		} `json:"integrations"`
	}
	if err := yaml.Unmarshal([]byte(doc), &cfg); err != nil {
		t.Fatalf("reading a Kueue configuration: %v", err)
	}
	return cfg.Integrations.ExternalFrameworks
}

// TestKueueOnboardingAsDocumented: the steps of docs/kueue.md are the ones
// this stack runs. The Kueue configuration it documents names our served
// kinds as external frameworks and is what the stack's Kueue runs with; the
// RBAC table is the ClusterRole of artifacts/deploy/components/kueue, which
// is all the stack's controller has on kueue.x-k8s.io (hack/test-e2e.sh
// runs it as the installation's ServiceAccount), and the controller queues
// jobs with it (the other Kueue tests).
func TestKueueOnboardingAsDocumented(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "kueue-docs")
	needsKueue(t, f)
	doc := filepath.Join(f.Env.RepoRoot, "docs", "kueue.md")
	var documented []string
	for _, b := range yamlBlocks(t, doc) {
		if strings.Contains(b, "kind: Configuration") {
			documented = externalFrameworks(t, b)
		}
	}
	if len(documented) == 0 {
		t.Fatalf("%s documents no Kueue configuration with externalFrameworks", doc)
	}
	served := map[string]bool{}
	list, err := f.Kube.Discovery().ServerResourcesForGroupVersion(v1beta1.SchemeGroupVersion.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list.APIResources {
		// The job kinds; the runtimes are no jobs, which Kueue never sees.
		if !strings.Contains(r.Name, "/") && slices.Contains(r.Categories, "trainingjobs") {
			served[r.Kind+"."+v1beta1.SchemeGroupVersion.Version+"."+v1beta1.SchemeGroupVersion.Group] = true
		}
	}
	if len(served) < 3 {
		t.Errorf("the stack serves the kinds %v: want every training job kind", served)
	}
	for want := range served {
		if !slices.Contains(documented, want) {
			t.Errorf("external framework %s: served, not in the documented configuration %v", want, documented)
		}
	}
	for _, fw := range documented {
		if !served[fw] {
			t.Errorf("external framework %s: documented, not served", fw)
		}
	}
	running, err := os.ReadFile(filepath.Join(f.Env.LocalDir, "config", "kueue.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, fw := range documented {
		if !slices.Contains(externalFrameworks(t, string(running)), fw) {
			t.Errorf("the stack's Kueue runs without the documented external framework %s", fw)
		}
	}

	// The documented RBAC table is the component's ClusterRole, row by row.
	data, err := os.ReadFile(filepath.Join(f.Env.RepoRoot, "artifacts", "deploy", "components", "kueue", "rbac-controller-manager-kueue.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal([]byte(strings.Split(string(data), "\n---\n")[0]), &role); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(line, "| kueue.x-k8s.io |") || strings.HasPrefix(line, `| "" |`) {
			cells := strings.Split(line, "|")
			rows = append(rows, strings.TrimSpace(cells[2])+": "+strings.TrimSpace(cells[3]))
		}
	}
	var rules []string
	for _, r := range role.Rules {
		for _, res := range r.Resources {
			rules = append(rules, res+": "+strings.Join(r.Verbs, ", "))
		}
	}
	if !slices.Equal(rows, rules) {
		t.Errorf("docs/kueue.md's RBAC table %q, the component's rules %q", rows, rules)
	}
}
