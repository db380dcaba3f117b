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
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// The monitoring artifacts, relative to the repository root.
const (
	ksmConfigFile = "artifacts/monitoring/kube-state-metrics-config.yaml"
	dashboardFile = "artifacts/monitoring/grafana-dashboard.json"
	rulesFile     = "artifacts/monitoring/prometheus-rules.yaml"
	rbacFile      = "artifacts/monitoring/kube-state-metrics-rbac.yaml"
	// ksmBinary is built by hack/build-test-binaries.sh.
	ksmBinary = "_output/bin/kube-state-metrics"
)

// metricFamily is a family the dashboard and the alerts may select: its
// type (gauge, counter, histogram, stateset, info) and the labels its
// series carry.
type metricFamily struct {
	typ    string
	labels []string
}

// controllerFamilies are the training-controller-manager's own families
// the dashboard and the alerts may use. TestMonitoring checks each against
// the running controller's /metrics; TestMonitoringQueriesNameKnownSeries
// checks the queries against this list without a stack.
var controllerFamilies = map[string]metricFamily{
	"training_controller_jobs":                       {"gauge", []string{"kind", "phase"}},
	"training_controller_pods_created_total":         {"counter", []string{"kind"}},
	"training_controller_reconcile_duration_seconds": {"histogram", []string{"kind", "result"}},
	"workqueue_adds_total":                           {"counter", []string{"name"}},
	"workqueue_depth":                                {"gauge", []string{"name"}},
	"workqueue_longest_running_processor_seconds":    {"gauge", []string{"name"}},
	"workqueue_queue_duration_seconds":               {"histogram", []string{"name"}},
	"workqueue_retries_total":                        {"counter", []string{"name"}},
	"workqueue_unfinished_work_seconds":              {"gauge", []string{"name"}},
	"workqueue_work_duration_seconds":                {"histogram", []string{"name"}},
	"rest_client_requests_total":                     {"counter", []string{"code", "host", "method"}},
}

// prometheusSeries are series Prometheus itself makes for every target.
var prometheusSeries = map[string][]string{"up": nil}

// targetLabels are labels Prometheus adds to the series it scrapes
// (kube-state-metrics' own namespace label wins with honor_labels).
var targetLabels = []string{"job", "instance", "namespace", "pod", "container", "endpoint", "service"}

// sampleNames lists the names a family's samples have in the text format.
func sampleNames(family string, typ string) []string {
	switch typ {
	case "histogram":
		return []string{family + "_bucket", family + "_sum", family + "_count"}
	case "summary":
		return []string{family, family + "_sum", family + "_count"}
	}
	return []string{family}
}

// repoRoot is the repository root: E2E_REPO_ROOT, else two levels above
// this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	if root := os.Getenv("E2E_REPO_ROOT"); root != "" {
		return root
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// ---- kube-state-metrics configuration

// ksmConfig is the part of a CustomResourceStateMetrics configuration the
// tests read (k8s.io/kube-state-metrics/v2/pkg/customresourcestate).
type ksmConfig struct {
	Kind string `json:"kind"`
	Spec struct {
		Resources []ksmResource `json:"resources"`
	} `json:"spec"`
}

type ksmResource struct {
	GroupVersionKind struct {
		Group   string `json:"group"`
		Version string `json:"version"`
		Kind    string `json:"kind"`
	} `json:"groupVersionKind"`
	ResourcePlural   string              `json:"resourcePlural"`
	MetricNamePrefix *string             `json:"metricNamePrefix"`
	CommonLabels     map[string]string   `json:"commonLabels"`
	LabelsFromPath   map[string][]string `json:"labelsFromPath"`
	Metrics          []ksmMetric         `json:"metrics"`
	ErrorLogV        int                 `json:"errorLogV"`
}

type ksmMetric struct {
	Name           string              `json:"name"`
	Help           string              `json:"help"`
	LabelsFromPath map[string][]string `json:"labelsFromPath"`
	CommonLabels   map[string]string   `json:"commonLabels"`
	ErrorLogV      int                 `json:"errorLogV"`
	Each           struct {
		Type     string         `json:"type"`
		Gauge    *ksmEachLabels `json:"gauge"`
		StateSet *ksmEachLabels `json:"stateSet"`
		Info     *ksmEachLabels `json:"info"`
	} `json:"each"`
}

// ksmEachLabels holds what of each.gauge, each.stateSet and each.info
// names labels.
type ksmEachLabels struct {
	Path           []string            `json:"path"`
	LabelsFromPath map[string][]string `json:"labelsFromPath"`
	LabelFromKey   string              `json:"labelFromKey"`
	LabelName      string              `json:"labelName"`
	List           []string            `json:"list"`
	ValueFrom      []string            `json:"valueFrom"`
	NilIsZero      bool                `json:"nilIsZero"`
}

func loadKSMConfig(t *testing.T, root string) *ksmConfig {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, ksmConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var cfg ksmConfig
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		t.Fatalf("%s: %v", ksmConfigFile, err)
	}
	return &cfg
}

// families returns the metric families the configuration produces, with
// the labels their series carry, as kube-state-metrics names them: prefix,
// "_", name; customresource_group/version/kind on every series.
func (c *ksmConfig) families() map[string]metricFamily {
	out := map[string]metricFamily{}
	for _, r := range c.Spec.Resources {
		prefix := "kube_customresource"
		if r.MetricNamePrefix != nil {
			prefix = *r.MetricNamePrefix
		}
		base := []string{"customresource_group", "customresource_version", "customresource_kind"}
		for k := range r.CommonLabels {
			base = append(base, k)
		}
		for k := range r.LabelsFromPath {
			base = append(base, k)
		}
		for _, m := range r.Metrics {
			name := m.Name
			if prefix != "" {
				name = prefix + "_" + m.Name
			}
			labels := slices.Clone(base)
			for k := range m.LabelsFromPath {
				labels = append(labels, k)
			}
			for k := range m.CommonLabels {
				labels = append(labels, k)
			}
			for _, each := range []*ksmEachLabels{m.Each.Gauge, m.Each.StateSet, m.Each.Info} {
				if each == nil {
					continue
				}
				for k := range each.LabelsFromPath {
					labels = append(labels, k)
				}
				if each.LabelFromKey != "" {
					labels = append(labels, each.LabelFromKey)
				}
				if each.LabelName != "" {
					labels = append(labels, each.LabelName)
				}
			}
			f := out[name]
			f.typ = strings.ToLower(m.Each.Type)
			f.labels = append(f.labels, labels...)
			slices.Sort(f.labels)
			f.labels = slices.Compact(f.labels)
			out[name] = f
		}
	}
	return out
}

// ---- the shipped queries

// query is one PromQL expression of the dashboard or the rules, with where
// it comes from.
type query struct{ Where, Expr string }

// dashboardQueries returns the expression of every panel target and the
// query of every query variable.
func dashboardQueries(t *testing.T, root string) []query {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	var dash map[string]any
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var out []query
	var walk func(where string, v any)
	walk = func(where string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if title, ok := v["title"].(string); ok {
				where = where + " > " + title
			}
			if expr, ok := v["expr"].(string); ok {
				out = append(out, query{where, expr})
			}
			for _, child := range v {
				walk(where, child)
			}
		case []any:
			for _, child := range v {
				walk(where, child)
			}
		}
	}
	walk(dashboardFile, dash["panels"])
	templating, _ := dash["templating"].(map[string]any)
	vars, _ := templating["list"].([]any)
	for _, v := range vars {
		v, _ := v.(map[string]any)
		if v["type"] != "query" {
			continue
		}
		where := fmt.Sprintf("%s > variable %v", dashboardFile, v["name"])
		switch q := v["query"].(type) {
		case string:
			out = append(out, query{where, q})
		case map[string]any:
			if s, ok := q["query"].(string); ok {
				out = append(out, query{where, s})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Where+out[i].Expr < out[j].Where+out[j].Expr })
	return out
}

// ruleFile is a PrometheusRule, or a plain rule file (groups at the top).
type ruleFile struct {
	Kind   string      `json:"kind"`
	Groups []ruleGroup `json:"groups"`
	Spec   struct {
		Groups []ruleGroup `json:"groups"`
	} `json:"spec"`
}

type ruleGroup struct {
	Name  string `json:"name"`
	Rules []struct {
		Alert       string            `json:"alert"`
		Record      string            `json:"record"`
		Expr        string            `json:"expr"`
		For         string            `json:"for"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"rules"`
}

func loadRules(t *testing.T, root string) []ruleGroup {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, rulesFile))
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	return append(f.Groups, f.Spec.Groups...)
}

func ruleQueries(groups []ruleGroup) []query {
	var out []query
	for _, g := range groups {
		for _, r := range g.Rules {
			out = append(out, query{fmt.Sprintf("%s > %s > %s%s", rulesFile, g.Name, r.Alert, r.Record), r.Expr})
		}
	}
	return out
}

// checkQueries checks that every selector of every query names a known
// series and matches only labels that series carries (or that Prometheus
// adds). known maps sample names to their labels.
func checkQueries(t *testing.T, queries []query, known map[string][]string, source string) {
	t.Helper()
	if len(queries) == 0 {
		t.Fatal("no queries found")
	}
	for _, q := range queries {
		sels, err := promqlSelectors(substituteGrafanaVariables(q.Expr))
		if err != nil {
			t.Errorf("%s: %v", q.Where, err)
			continue
		}
		if len(sels) == 0 {
			t.Errorf("%s: the query %q selects no series", q.Where, q.Expr)
		}
		for _, sel := range sels {
			if sel.Metric == "" {
				t.Errorf("%s: selector %s has no metric name", q.Where, sel)
				continue
			}
			labels, ok := known[sel.Metric]
			if !ok {
				t.Errorf("%s: %s names %s, which %s does not produce", q.Where, sel, sel.Metric, source)
				continue
			}
			for _, m := range sel.Matchers {
				if !slices.Contains(labels, m.Label) && !slices.Contains(targetLabels, m.Label) {
					t.Errorf("%s: %s matches label %s, which %s's series do not carry (they carry %v)", q.Where, sel, m.Label, sel.Metric, labels)
				}
			}
		}
	}
}

// TestMonitoringQueriesNameKnownSeries checks the monitoring artifacts
// without a cluster: every series the dashboard and the alerts select is one
// the kube-state-metrics configuration or the controller produces (or that
// Prometheus makes, up), and matches only labels it has.
func TestMonitoringQueriesNameKnownSeries(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	cfg := loadKSMConfig(t, root)

	if cfg.Kind != "CustomResourceStateMetrics" {
		t.Errorf("%s: kind %q, want CustomResourceStateMetrics", ksmConfigFile, cfg.Kind)
	}
	kinds := map[string][]string{}
	for _, r := range cfg.Spec.Resources {
		gvk := r.GroupVersionKind
		if gvk.Group != v1beta1.GroupName || gvk.Version != v1beta1.SchemeGroupVersion.Version {
			t.Errorf("%s: resource %+v is not in %s", ksmConfigFile, gvk, v1beta1.SchemeGroupVersion)
		}
		if r.CommonLabels["kind"] != gvk.Kind {
			t.Errorf("%s: %s has commonLabels.kind %q", ksmConfigFile, gvk.Kind, r.CommonLabels["kind"])
		}
		for _, m := range r.Metrics {
			each := map[string]bool{"gauge": m.Each.Gauge != nil, "stateset": m.Each.StateSet != nil, "info": m.Each.Info != nil}
			typ := strings.ToLower(m.Each.Type)
			if set, ok := each[typ]; !ok || !set {
				t.Errorf("%s: %s metric %s: type %q without each.%s", ksmConfigFile, gvk.Kind, m.Name, m.Each.Type, typ)
			}
			kinds[gvk.Kind] = append(kinds[gvk.Kind], m.Name)
		}
	}
	if tf, pt := kinds[string(framework.KindTF)], kinds[string(framework.KindPyTorch)]; len(tf) == 0 || !slices.Equal(tf, pt) {
		t.Errorf("%s: the two kinds have different metrics:\n  TensorFlowTrainingJob %v\n  PyTorchTrainingJob    %v", ksmConfigFile, tf, pt)
	}

	known := map[string][]string{}
	for name, f := range cfg.families() {
		known[name] = f.labels
	}
	for name, f := range controllerFamilies {
		for _, s := range sampleNames(name, f.typ) {
			labels := f.labels
			if strings.HasSuffix(s, "_bucket") {
				labels = append(slices.Clone(labels), "le")
			}
			known[s] = labels
		}
	}
	for name, labels := range prometheusSeries {
		known[name] = labels
	}
	groups := loadRules(t, root)
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				known[r.Record] = nil // labels unknown here
			}
			if r.Alert != "" && (r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "") {
				t.Errorf("%s: alert %s needs labels.severity, annotations.summary and annotations.description", rulesFile, r.Alert)
			}
		}
	}
	queries := append(dashboardQueries(t, root), ruleQueries(groups)...)
	checkQueries(t, queries, known, "neither kube-state-metrics-config.yaml nor the controller")

	// Every target queries the dashboard's data source variable.
	data, err := os.ReadFile(filepath.Join(root, dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`"uid":\s*"([^"]*)"`).FindAllStringSubmatch(string(data), -1) {
		if m[1] != "${datasource}" && m[1] != "-- Grafana --" && m[1] != "tensorstack-training" {
			t.Errorf("%s: data source uid %q, want ${datasource}", dashboardFile, m[1])
		}
	}
}

// ---- kube-state-metrics against the stack
