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
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
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

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// ksmKubeconfig writes a kubeconfig for a user of its own that may do no
// more than the ClusterRole of kube-state-metrics-rbac.yaml allows: a copy of
// it, named after the test's namespace, is bound to the user until the test
// ends.
func ksmKubeconfig(t *testing.T, f *framework.Framework, root string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, rbacFile))
	if err != nil {
		t.Fatal(err)
	}
	var shipped *rbacv1.ClusterRole
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var role rbacv1.ClusterRole
		if err := yaml.Unmarshal([]byte(doc), &role); err != nil {
			t.Fatalf("%s: %v", rbacFile, err)
		}
		if role.Kind == "ClusterRole" {
			shipped = &role
		}
	}
	if shipped == nil || len(shipped.Rules) == 0 {
		t.Fatalf("%s has no ClusterRole with rules", rbacFile)
	}
	name := f.Namespace + "-kube-state-metrics"
	ctx := f.Context()
	rbac := f.Kube.RbacV1()
	if _, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: shipped.Rules,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	if _, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{}) })

	cfg := f.UserConfig(name)
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["local"] = &clientcmdapi.Cluster{Server: cfg.Host,
		CertificateAuthority: cfg.CAFile, CertificateAuthorityData: cfg.CAData, TLSServerName: cfg.ServerName}
	kubeconfig.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kubeconfig.Contexts[name] = &clientcmdapi.Context{Cluster: "local", AuthInfo: name}
	kubeconfig.CurrentContext = name
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kubeconfig, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// startKubeStateMetrics runs kube-state-metrics with the shipped
// configuration on the test's namespace until the test ends, as a user
// with the shipped RBAC only, and returns the URL of its metrics.
func startKubeStateMetrics(t *testing.T, f *framework.Framework, root, bin string) string {
	t.Helper()
	kubeconfig := ksmKubeconfig(t, f, root)
	config := filepath.Join(root, ksmConfigFile)
	port, telemetry := freePort(t), freePort(t)
	logPath := filepath.Join(t.TempDir(), "kube-state-metrics.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin,
		"--kubeconfig="+kubeconfig,
		"--custom-resource-state-only",
		"--custom-resource-state-config-file="+config,
		"--namespaces="+f.Namespace,
		"--host=127.0.0.1", "--port="+strconv.Itoa(port),
		"--telemetry-host=127.0.0.1", "--telemetry-port="+strconv.Itoa(telemetry))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	t.Logf("kube-state-metrics (pid %d) on 127.0.0.1:%d, log %s", cmd.Process.Pid, port, logPath)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logFile.Close()
		if t.Failed() {
			if data, err := os.ReadFile(logPath); err == nil {
				lines := strings.Split(strings.TrimSpace(string(data)), "\n")
				if len(lines) > 40 {
					lines = lines[len(lines)-40:]
				}
				t.Logf("kube-state-metrics log (last lines):\n%s", strings.Join(lines, "\n"))
			}
		}
	})
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
}

// controllerMetricsURL is the running controller-manager's metrics URL:
// LOCAL_TRAINING_METRICS_PORT from the environment or the stack's env.sh,
// else the default 18080.
func controllerMetricsURL(f *framework.Framework) string {
	port := os.Getenv("LOCAL_TRAINING_METRICS_PORT")
	if port == "" && f.Env.LocalDir != "" {
		if data, err := os.ReadFile(filepath.Join(f.Env.LocalDir, "env.sh")); err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				if v, ok := strings.CutPrefix(line, "LOCAL_TRAINING_METRICS_PORT="); ok {
					port = strings.Trim(v, `'"`)
				}
			}
		}
	}
	if port == "" {
		port = "18080"
	}
	return "http://127.0.0.1:" + port + "/metrics"
}

// jobMismatches compares the series kube-state-metrics exposes for a job
// with the job as the API serves it, and returns what differs.
func jobMismatches(sc *scrape, job v1beta1.TrainingJob, kind framework.Kind) []string {
	const prefix = "tensorstack_trainingjob_"
	id := map[string]string{"namespace": job.GetNamespace(), "name": job.GetName(), "kind": string(kind)}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range id {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	var out []string
	// one checks that exactly one series matches, with value want; a nil
	// want means no series at all.
	one := func(metric string, extra map[string]string, want *float64) {
		got := sc.find(prefix+metric, with(extra))
		switch {
		case want == nil && len(got) != 0:
			out = append(out, fmt.Sprintf("%s: want no series, got %v", got[0], got[0].Value))
		case want == nil:
		case len(got) != 1:
			out = append(out, fmt.Sprintf("%s%v: want one series = %v, got %d series", prefix+metric, extra, *want, len(got)))
		case math.Abs(got[0].Value-*want) > 1e-9:
			out = append(out, fmt.Sprintf("%s = %v, want %v", got[0], got[0].Value, *want))
		}
	}
	num := func(v float64) *float64 { return &v }
	unix := func(t *metav1.Time) *float64 {
		if t == nil {
			return nil
		}
		return num(float64(t.Unix()))
	}
	st := job.JobStatus()

	for _, p := range []v1beta1.JobPhase{v1beta1.JobPending, v1beta1.JobRunning, v1beta1.JobPaused, v1beta1.JobResuming,
		v1beta1.JobSucceeded, v1beta1.JobFailed, v1beta1.JobUnknown} {
		want := 0.0
		if st.Phase == p {
			want = 1
		}
		one("phase", map[string]string{"phase": string(p)}, &want)
	}
	for _, c := range st.Conditions {
		for _, s := range []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown} {
			want := 0.0
			if c.Status == s {
				want = 1
			}
			one("condition", map[string]string{"type": c.Type, "status": string(s)}, &want)
		}
	}
	a := st.Aggregate
	for state, n := range map[string]int32{"creating": a.Creating, "pending": a.Pending, "running": a.Running,
		"succeeded": a.Succeeded, "failed": a.Failed, "unknown": a.Unknown, "deleted": a.Deleted} {
		one("replicas", map[string]string{"state": state}, num(float64(n)))
	}
	if n := len(sc.find(prefix+"replicas", id)); n != 7 {
		out = append(out, fmt.Sprintf("%d replicas series, want 7 (one per field of status.aggregate)", n))
	}
	one("backoff_count", nil, num(float64(st.BackoffCount)))
	one("info", map[string]string{"uid": string(job.GetUID())}, num(1))
	created := job.GetCreationTimestamp()
	one("created_timestamp_seconds", nil, unix(&created))
	one("start_timestamp_seconds", nil, unix(st.StartTime))
	one("completion_timestamp_seconds", nil, unix(st.CompletionTime))

	p := st.Progress
	if p == nil {
		p = &v1beta1.ProgressStatus{}
	}
	i32 := func(v *int32) *float64 {
		if v == nil {
			return nil
		}
		return num(float64(*v))
	}
	i64 := func(v *int64) *float64 {
		if v == nil {
			return nil
		}
		return num(float64(*v))
	}
	one("progress_percent", nil, i32(p.Percent))
	one("progress_step", nil, i64(p.Step))
	one("progress_total_steps", nil, i64(p.TotalSteps))
	one("progress_epoch", nil, i32(p.Epoch))
	one("progress_total_epochs", nil, i32(p.TotalEpochs))
	one("progress_estimated_finish_timestamp_seconds", nil, unix(p.EstimatedFinishTime))
	if p.ReportTime != nil {
		one("progress_report_timestamp_seconds", nil, num(float64(p.ReportTime.Unix())))
	} else {
		one("progress_report_timestamp_seconds", nil, nil)
	}
	for _, m := range p.Metrics {
		v, err := strconv.ParseFloat(m.Value, 64)
		if err != nil {
			out = append(out, fmt.Sprintf("metric %s: %v", m.Name, err))
			continue
		}
		one("progress_metric", map[string]string{"metric": m.Name}, &v)
	}
	if n := len(sc.find(prefix+"progress_metric", id)); n != len(p.Metrics) {
		out = append(out, fmt.Sprintf("%d progress_metric series, want %d", n, len(p.Metrics)))
	}
	return out
}

// TestMonitoring runs kube-state-metrics with
// artifacts/monitoring/kube-state-metrics-config.yaml against the stack:
// the series of a running job with reported progress and of a finished job
// say what the API says of them, and every series the dashboard and the
// alerts select exists in kube-state-metrics' or the controller's answer.
func TestMonitoring(t *testing.T) {
	root := repoRoot(t)
	bin := filepath.Join(root, ksmBinary)
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("%s is not built (hack/build-test-binaries.sh builds it): %v", ksmBinary, err)
	}
	t.Parallel()
	f := framework.New(t, "monitoring")
	start := time.Now()

	running := f.Create(framework.NewPyTorchJob("training").WithReplicas("worker", 1).Forever("worker"))
	finished := f.Create(framework.NewTFJob("finished").WithReplicas("worker", 1).ExitCode(0).RunFor("1s"))
	f.WaitForPhase(running, v1beta1.JobRunning)
	f.WaitForRunningPods(running, 1)
	f.WaitForPhase(finished, v1beta1.JobSucceeded)

	// As the test's admin user; the server derives percent 30 from the steps.
	if _, err := f.Training.BatchV1beta1().PyTorchTrainingJobs(f.Namespace).ReportProgress(f.Context(), running.Name,
		&v1beta1.ProgressReport{ProgressValues: v1beta1.ProgressValues{
			Step: ptr.To[int64](30), TotalSteps: ptr.To[int64](100),
			Epoch: ptr.To[int32](3), TotalEpochs: ptr.To[int32](10),
			RemainingSeconds: ptr.To[int64](600),
			Metrics:          []v1beta1.ProgressMetric{{Name: "loss", Value: "0.25"}, {Name: "samples/s", Value: "1.5e3"}},
		}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("reporting progress: %v", err)
	}
	f.WaitForJob(running, "the report in status.progress", framework.Timeout, func(job v1beta1.TrainingJob) (bool, error) {
		return job.JobStatus().Progress != nil, nil
	})

	metricsURL := startKubeStateMetrics(t, f, root, bin)

	// kube-state-metrics finds the aggregated API within seconds, then lists
	// and watches; poll until its series say what the API says.
	var ksm *scrape
	err := framework.Eventually(2*time.Minute, "kube-state-metrics' series of both jobs as the API serves them", func(ctx context.Context) (bool, error) {
		sc, err := fetchMetrics(ctx, metricsURL, acceptPrometheusDefault)
		if err != nil {
			return false, err
		}
		var mismatches []string
		for _, ref := range []framework.JobRef{running, finished} {
			job, err := f.GetJob(ctx, ref)
			if err != nil {
				return false, err
			}
			for _, m := range jobMismatches(sc, job, ref.Kind) {
				mismatches = append(mismatches, "\n  "+ref.String()+": "+m)
			}
		}
		ksm = sc
		if len(mismatches) > 0 {
			return false, fmt.Errorf("%d differences:%s", len(mismatches), strings.Join(mismatches, ""))
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// What the test set up, spelled out, beyond "as the API says".
	id := func(ref framework.JobRef, extra ...string) map[string]string {
		m := map[string]string{"namespace": ref.Namespace, "name": ref.Name, "kind": string(ref.Kind)}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	expect := func(metric string, labels map[string]string, want float64) {
		t.Helper()
		got := ksm.find(metric, labels)
		if len(got) != 1 || got[0].Value != want {
			t.Errorf("%s%v: got %v, want one series = %v", metric, labels, got, want)
		}
	}
	expect("tensorstack_trainingjob_phase", id(running, "phase", "Running"), 1)
	expect("tensorstack_trainingjob_replicas", id(running, "state", "running"), 1)
	expect("tensorstack_trainingjob_progress_percent", id(running), 30)
	expect("tensorstack_trainingjob_progress_step", id(running), 30)
	expect("tensorstack_trainingjob_progress_total_steps", id(running), 100)
	expect("tensorstack_trainingjob_progress_metric", id(running, "metric", "samples/s"), 1500)
	expect("tensorstack_trainingjob_backoff_count", id(running), 0)
	expect("tensorstack_trainingjob_phase", id(finished, "phase", "Succeeded"), 1)
	expect("tensorstack_trainingjob_phase", id(finished, "phase", "Running"), 0)
	if got := ksm.find("tensorstack_trainingjob_progress_report_timestamp_seconds", id(running)); len(got) == 1 {
		if at := time.Unix(int64(got[0].Value), 0); at.Before(start.Add(-time.Second)) || at.After(time.Now().Add(time.Second)) {
			t.Errorf("progress report time %s, want between %s and now", at, start)
		}
	}
	eta := ksm.find("tensorstack_trainingjob_progress_estimated_finish_timestamp_seconds", id(running))
	reported := ksm.find("tensorstack_trainingjob_progress_report_timestamp_seconds", id(running))
	if len(eta) == 1 && len(reported) == 1 {
		if d := eta[0].Value - reported[0].Value; d < 599 || d > 601 {
			t.Errorf("estimated finish %v s after the report, want 600 (remainingSeconds)", d)
		}
	}
	if got := ksm.find("tensorstack_trainingjob_completion_timestamp_seconds", id(finished)); len(got) != 1 {
		t.Errorf("the finished job has %d completion time series, want 1", len(got))
	}

	if !strings.HasPrefix(ksm.ContentType, "application/openmetrics-text") {
		t.Errorf("kube-state-metrics answered Prometheus' default Accept with %q, want OpenMetrics", ksm.ContentType)
	}
	// No two series alike: a config that yields one series per field of an
	// object with nilIsZero, say, repeats them.
	seen := map[string]bool{}
	for _, s := range ksm.Samples {
		if seen[s.String()] {
			t.Errorf("series %s appears twice", s)
		}
		seen[s.String()] = true
	}
	// Every configured family yields series.
	cfg := loadKSMConfig(t, root)
	for name, fam := range cfg.families() {
		if len(ksm.find(name, nil)) == 0 {
			t.Errorf("kube-state-metrics exposes no series of %s", name)
		}
		if typ := ksm.Types[name]; typ != fam.typ {
			t.Errorf("%s has TYPE %q, want %q", name, typ, fam.typ)
		}
	}

	// The controller's families are there, with their types and labels.
	controller, err := fetchMetrics(f.Context(), controllerMetricsURL(f), acceptText)
	if err != nil {
		t.Fatalf("scraping training-controller-manager: %v", err)
	}
	live := controller.known()
	for name, fam := range controllerFamilies {
		if typ := controller.Types[name]; typ != fam.typ {
			t.Errorf("controller family %s: TYPE %q, want %q", name, typ, fam.typ)
		}
		for _, s := range sampleNames(name, fam.typ) {
			for _, l := range fam.labels {
				if !slices.Contains(live[s], l) {
					t.Errorf("controller series %s: no label %s (it has %v)", s, l, live[s])
				}
			}
		}
	}

	// The dashboard's and the alerts' queries select series that exist.
	for name, labels := range ksm.known() {
		live[name] = labels
	}
	for name, labels := range prometheusSeries {
		live[name] = labels
	}
	queries := append(dashboardQueries(t, root), ruleQueries(loadRules(t, root))...)
	checkQueries(t, queries, live, "neither kube-state-metrics nor the controller")
}
