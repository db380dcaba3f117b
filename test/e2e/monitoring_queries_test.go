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
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The monitoring artifacts, relative to the repository root.
const (
	dashboardFile = "artifacts/monitoring/grafana-dashboard.json"
	rulesFile     = "artifacts/monitoring/prometheus-rules.yaml"
)

// metricFamily is a family the dashboard and the alerts may select: its
// type (gauge, counter, histogram, stateset, info) and the labels its
// series carry.
type metricFamily struct {
	typ    string
	labels []string
}

// jobLabels are on every per-job series.
var jobLabels = []string{"namespace", "name", "kind"}

func withJobLabels(extra ...string) []string { return append(slices.Clone(jobLabels), extra...) }

// controllerFamilies are the training-controller-manager's families the
// dashboard and the alerts may use: the per-job series, the finished-job
// metrics and its own. TestMonitoring checks each against the running
// controller's /metrics; TestMonitoringQueriesNameKnownSeries checks the
// queries against this list without a stack.
var controllerFamilies = map[string]metricFamily{
	"tensorstack_trainingjob_phase":                                       {"gauge", withJobLabels("phase")},
	"tensorstack_trainingjob_condition":                                   {"gauge", withJobLabels("type", "status")},
	"tensorstack_trainingjob_replicas":                                    {"gauge", withJobLabels("state")},
	"tensorstack_trainingjob_pods_replaced":                               {"gauge", withJobLabels()},
	"tensorstack_trainingjob_restarts":                                    {"gauge", withJobLabels()},
	"tensorstack_trainingjob_info":                                        {"gauge", withJobLabels("uid", "queue")},
	"tensorstack_trainingjob_created_timestamp_seconds":                   {"gauge", withJobLabels()},
	"tensorstack_trainingjob_start_timestamp_seconds":                     {"gauge", withJobLabels()},
	"tensorstack_trainingjob_progress_percent":                            {"gauge", withJobLabels()},
	"tensorstack_trainingjob_progress_step":                               {"gauge", withJobLabels()},
	"tensorstack_trainingjob_progress_total_steps":                        {"gauge", withJobLabels()},
	"tensorstack_trainingjob_progress_epoch":                              {"gauge", withJobLabels()},
	"tensorstack_trainingjob_progress_total_epochs":                       {"gauge", withJobLabels()},
	"tensorstack_trainingjob_progress_estimated_finish_timestamp_seconds": {"gauge", withJobLabels()},
	"tensorstack_trainingjob_progress_report_timestamp_seconds":           {"gauge", withJobLabels()},
	"tensorstack_trainingjob_progress_metric":                             {"gauge", withJobLabels("metric")},
	"tensorstack_trainingjob_finished_total":                              {"counter", []string{"namespace", "kind", "result", "reason"}},
	"tensorstack_trainingjob_duration_seconds":                            {"histogram", []string{"namespace", "kind", "result"}},
	"tensorstack_trainingjob_queued_seconds":                              {"histogram", []string{"namespace", "kind"}},
	"training_controller_jobs":                                            {"gauge", []string{"kind", "phase"}},
	"training_controller_queue_held_jobs":                                 {"gauge", []string{"kind", "reason"}},
	"training_controller_pods_created_total":                              {"counter", []string{"kind"}},
	"training_controller_tuning_trials":                                   {"gauge", []string{"namespace", "search", "state"}},
	"training_controller_tuning_best_objective":                           {"gauge", []string{"namespace", "search", "metric", "direction"}},
	"training_controller_tuning_recent_failed_trials":                     {"gauge", []string{"namespace", "search"}},
	"training_controller_tuning_recent_ended_trials":                      {"gauge", []string{"namespace", "search"}},
	"training_controller_reconcile_duration_seconds":                      {"histogram", []string{"kind", "result"}},
	"workqueue_adds_total":                                                {"counter", []string{"name"}},
	"workqueue_depth":                                                     {"gauge", []string{"name"}},
	"workqueue_longest_running_processor_seconds":                         {"gauge", []string{"name"}},
	"workqueue_queue_duration_seconds":                                    {"histogram", []string{"name"}},
	"workqueue_retries_total":                                             {"counter", []string{"name"}},
	"workqueue_unfinished_work_seconds":                                   {"gauge", []string{"name"}},
	"workqueue_work_duration_seconds":                                     {"histogram", []string{"name"}},
	"rest_client_requests_total":                                          {"counter", []string{"code", "host", "method"}},
}

// controlPlaneFamilies are the families of training-apiserver, its etcd
// and kube-apiserver the alerts use, with the labels the queries may match.
var controlPlaneFamilies = map[string]metricFamily{
	"apiserver_request_total": {"counter", []string{"code", "verb", "resource", "group", "version"}},
	"training_apiserver_serving_certificate_expiration_timestamp_seconds": {"gauge", nil},
	"etcd_server_has_leader":           {"gauge", nil},
	"etcd_mvcc_db_total_size_in_bytes": {"gauge", nil},
	"etcd_server_quota_backend_bytes":  {"gauge", nil},
	// kube-apiserver's: whether it reaches an APIService.
	"aggregator_unavailable_apiservice": {"gauge", []string{"name"}},
	// The controller's leader election (client-go's metrics).
	"leader_election_master_status": {"gauge", []string{"name"}},
}

// allFamilies are the families the queries may select.
func allFamilies() map[string]metricFamily {
	out := maps.Clone(controllerFamilies)
	maps.Copy(out, controlPlaneFamilies)
	return out
}

// prometheusSeries are series Prometheus itself makes for every target.
var prometheusSeries = map[string][]string{"up": nil}

// targetLabels are labels Prometheus adds to the series it scrapes (the
// per-job series' own namespace label wins with honor_labels).
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

// querySelectors parses every query with Prometheus' parser and returns
// their selectors by query; a query that does not parse fails the test.
func querySelectors(t *testing.T, p *prometheus, queries []query) map[query][]selector {
	t.Helper()
	if len(queries) == 0 {
		t.Fatal("no queries found")
	}
	out := map[query][]selector{}
	for _, q := range queries {
		sels, err := p.selectors(context.Background(), substituteGrafanaVariables(q.Expr))
		if err != nil {
			t.Errorf("%s: %v", q.Where, err)
			continue
		}
		if len(sels) == 0 {
			t.Errorf("%s: the query %q selects no series", q.Where, q.Expr)
		}
		out[q] = sels
	}
	return out
}

// checkQueries checks that every selector of every query names a known
// series and matches only labels that series carries (or that Prometheus
// adds). known maps sample names to their labels.
func checkQueries(t *testing.T, selectors map[query][]selector, known map[string][]string, source string) {
	t.Helper()
	for q, sels := range selectors {
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
// without a cluster: every query parses (with Prometheus' own parser), and
// every series the dashboard and the alerts select is one our servers,
// their etcd or kube-apiserver produce (or that Prometheus makes, up), and
// matches only labels it has.
func TestMonitoringQueriesNameKnownSeries(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	known := map[string][]string{}
	for name, f := range allFamilies() {
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
	// Prometheus' own parser reads the queries; a server without targets
	// is enough for that.
	p := startPrometheus(t, root, "global: {}\n", map[string]string{})
	checkQueries(t, querySelectors(t, p, queries), known, "our servers")

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

// TestDashboardOffersEveryKind: the dashboard's kind variable lists the
// kind label of training_controller_jobs, a series the controller exports
// for every kind it runs, jobs or not; so every kind is offered, a new one
// without an edit here.
func TestDashboardOffersEveryKind(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Templating struct {
			List []struct {
				Name, Type string
				Query      any // a string, or an object for a query variable
			}
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	const want = "label_values(training_controller_jobs, kind)"
	for _, v := range dash.Templating.List {
		if v.Name == "kind" {
			query, _ := v.Query.(map[string]any)
			if v.Type != "query" || query["query"] != want {
				t.Errorf("%s: the kind variable is a %s variable of %v, want a query of %q", dashboardFile, v.Type, v.Query, want)
			}
			return
		}
	}
	t.Errorf("%s: no kind variable", dashboardFile)
}

// ---- kube-state-metrics against the stack
