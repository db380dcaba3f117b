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

// The shipped alerts and scrape configuration, checked without a cluster
// by promtool (built from the module proxy with Prometheus).

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const (
	// alertTestsFile holds promtool's unit tests of the alerts.
	alertTestsFile = "test/e2e/testdata/prometheus-rules.test.yaml"
	// scrapeConfigsFile holds the scrape jobs for a Prometheus without
	// prometheus-operator.
	scrapeConfigsFile = "artifacts/monitoring/prometheus-scrape-configs.yaml"
	// runbookFile has a section per alert.
	runbookFile = "docs/monitoring.md"
)

// plainRules writes the groups of the shipped PrometheusRule as a plain
// rule file, as a Prometheus without the operator loads it, and returns the
// groups with it.
func plainRules(t *testing.T, root, path string) []ruleGroup {
	t.Helper()
	groups := loadRules(t, root)
	raw, err := os.ReadFile(filepath.Join(root, rulesFile))
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Spec map[string]any `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &rule); err != nil {
		t.Fatal(err)
	}
	data, err := yaml.Marshal(rule.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return groups
}

func runPromtool(t *testing.T, bin, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
}

// TestAlertRules runs promtool's checks and unit tests on the alerts, and
// checks that every alert has a unit test that fires it and a runbook.
func TestAlertRules(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	promtool := binaryOrSkip(t, root, promtoolBinary)
	dir := t.TempDir()
	groups := plainRules(t, root, filepath.Join(dir, "rules.yml"))
	tests, err := os.ReadFile(filepath.Join(root, alertTestsFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.test.yaml"), tests, 0o600); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, promtool, dir, "check", "rules", "rules.yml")
	runPromtool(t, promtool, dir, "test", "rules", "rules.test.yaml")

	var unitTests struct {
		Tests []struct {
			AlertRuleTest []struct {
				AlertName string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(tests, &unitTests); err != nil {
		t.Fatal(err)
	}
	fired := map[string]bool{}
	for _, test := range unitTests.Tests {
		for _, a := range test.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fired[a.AlertName] = true
			}
		}
	}
	runbook, err := os.ReadFile(filepath.Join(root, runbookFile))
	if err != nil {
		t.Fatal(err)
	}
	headings := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^### (\w+)$`).FindAllStringSubmatch(string(runbook), -1) {
		headings[m[1]] = true
	}
	var alerts []string
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts = append(alerts, r.Alert)
			if !fired[r.Alert] {
				t.Errorf("alert %s: no test in %s expects it to fire", r.Alert, alertTestsFile)
			}
			if !headings[r.Alert] {
				t.Errorf("alert %s: no section \"### %s\" in %s", r.Alert, r.Alert, runbookFile)
			}
			want := "https://github.com/tensorstack/training/blob/main/" + runbookFile + "#" + strings.ToLower(r.Alert)
			if got := r.Annotations["runbook_url"]; got != want {
				t.Errorf("alert %s: runbook_url %q, want %q", r.Alert, got, want)
			}
		}
	}
	if len(alerts) == 0 {
		t.Fatal("no alerts")
	}
}

// TestScrapeConfigs checks the scrape jobs for a Prometheus without the
// operator: promtool accepts them with the alerts as a prometheus.yml, and
// they name the jobs the alerts and the dashboard select.
func TestScrapeConfigs(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	promtool := binaryOrSkip(t, root, promtoolBinary)
	dir := t.TempDir()
	plainRules(t, root, filepath.Join(dir, "rules.yml"))
	jobs := loadScrapeConfigs(t, root)
	config, err := yaml.Marshal(map[string]any{"rule_files": []string{"rules.yml"}, "scrape_configs": jobs})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), config, 0o600); err != nil {
		t.Fatal(err)
	}
	// The token file of an in-cluster Prometheus; promtool checks that
	// files named in the configuration exist.
	runPromtool(t, promtool, dir, "check", "config", "--syntax-only", "prometheus.yml")
	var names []string
	for _, j := range jobs {
		names = append(names, j["job_name"].(string))
	}
	for _, want := range []string{"training-controller-manager", "training-apiserver", "training-etcd"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s has no job %s (it has %v)", scrapeConfigsFile, want, names)
		}
	}
}

// loadScrapeConfigs reads the shipped scrape jobs.
func loadScrapeConfigs(t *testing.T, root string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, scrapeConfigsFile))
	if err != nil {
		t.Fatal(err)
	}
	var jobs []map[string]any
	if err := yaml.Unmarshal(data, &jobs); err != nil {
		t.Fatalf("%s: %v", scrapeConfigsFile, err)
	}
	return jobs
}
