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
	"fmt"
	"maps"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// controllerMetricsURL is the running controller-manager's metrics URL:
// HTTPS unless the stack runs it with LOCAL_TRAINING_METRICS_SECURE=0.
func controllerMetricsURL(f *framework.Framework) string {
	scheme := "https"
	if f.LocalSetting("LOCAL_TRAINING_METRICS_SECURE") == "0" {
		scheme = "http"
	}
	return scheme + "://127.0.0.1:" + f.LocalSetting("LOCAL_TRAINING_METRICS_PORT") + "/metrics"
}

// trainingAPIServerURL is the training-apiserver's address on the stack.
func trainingAPIServerURL(f *framework.Framework) string {
	return "https://127.0.0.1:" + f.LocalSetting("LOCAL_TRAINING_PORT")
}

// metricsReaderRole is the ClusterRole scrapers are bound to
// (artifacts/deploy/base/rbac-metrics.yaml).
const (
	metricsReaderRole = "tensorstack:metrics-reader"
	metricsRBACFile   = "artifacts/deploy/base/rbac-metrics.yaml"
)

// scraperToken returns a token of a ServiceAccount of the test's namespace,
// bound to the shipped metrics-reader ClusterRole when authorized. The
// local stack does not install artifacts/deploy, so the role is created
// from its file when missing.
func scraperToken(f *framework.Framework, name string, authorized bool) string {
	f.T.Helper()
	ctx := f.Context()
	if _, err := f.Kube.CoreV1().ServiceAccounts(f.Namespace).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		f.T.Fatal(err)
	}
	if authorized {
		ensureMetricsReaderRole(f)
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: f.Namespace + "-" + name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: metricsReaderRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: f.Namespace}},
		}
		if _, err := f.Kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			f.T.Fatal(err)
		}
		f.T.Cleanup(func() {
			_ = f.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
		})
	}
	token, err := f.Kube.CoreV1().ServiceAccounts(f.Namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}},
		metav1.CreateOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	return token.Status.Token
}

// ensureMetricsReaderRole creates the shipped ClusterRole if the stack has
// none, as it is in the file.
func ensureMetricsReaderRole(f *framework.Framework) {
	f.T.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(f.T), metricsRBACFile))
	if err != nil {
		f.T.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(data, &role); err != nil {
		f.T.Fatalf("%s: %v", metricsRBACFile, err)
	}
	if role.Name != metricsReaderRole {
		f.T.Fatalf("%s names %q, want %q", metricsRBACFile, role.Name, metricsReaderRole)
	}
	_, err = f.Kube.RbacV1().ClusterRoles().Create(f.Context(), &role, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		f.T.Fatal(err)
	}
}

// jobMismatches compares the series the controller exposes for an
// unfinished job with the job as the API serves it, and returns what
// differs.
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
		case math.Abs(got[0].Value-*want) > 1e-9*math.Max(1, math.Abs(*want)):
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
		v1beta1.JobUnknown} {
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
	one("pods_replaced", nil, num(float64(st.BackoffCount)))
	var restarts int32
	for _, task := range st.Tasks {
		restarts += task.RestartCount
	}
	one("restarts", nil, num(float64(restarts)))
	one("info", map[string]string{"uid": string(job.GetUID()), "queue": ""}, num(1))
	created := job.GetCreationTimestamp()
	one("created_timestamp_seconds", nil, unix(&created))
	one("start_timestamp_seconds", nil, unix(st.StartTime))

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
		one("progress_report_timestamp_seconds", nil, num(float64(p.ReportTime.UnixNano())/1e9))
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

// TestMonitoring scrapes the controller on the stack as an authorized
// scraper: the series of a running job with reported progress say what the
// API says of it, a finished job has left its series for the finished-job
// metrics, and every family the dashboard and the alerts may use is there
// with its type and labels. TestMonitoringAlerts checks the queries
// themselves against a real Prometheus.
func TestMonitoring(t *testing.T) {
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
	runningSearch(f, "search", "0.75")

	// The series are made from the controller's cache as it is scraped;
	// poll until the cache has the report.
	token := scraperToken(f, "scraper", true)
	var sc *scrape
	err := framework.Eventually(time.Minute, "the controller's series of the running job as the API serves it", func(ctx context.Context) (bool, error) {
		got, err := fetchMetrics(ctx, controllerMetricsURL(f), token)
		if err != nil {
			return false, err
		}
		sc = got
		job, err := f.GetJob(ctx, running)
		if err != nil {
			return false, err
		}
		if m := jobMismatches(sc, job, running.Kind); len(m) > 0 {
			return false, fmt.Errorf("%d differences:\n  %s", len(m), strings.Join(m, "\n  "))
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// What the test set up, spelled out, beyond "as the API says".
	id := func(ref framework.JobRef, extra ...string) map[string]string {
		return withLabels(map[string]string{"namespace": ref.Namespace, "name": ref.Name, "kind": string(ref.Kind)}, extra...)
	}
	expect := func(metric string, labels map[string]string, want float64) {
		t.Helper()
		got := sc.find(metric, labels)
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
	expect("tensorstack_trainingjob_pods_replaced", id(running), 0)
	if got := sc.find("tensorstack_trainingjob_progress_report_timestamp_seconds", id(running)); len(got) == 1 {
		if at := time.Unix(int64(got[0].Value), 0); at.Before(start.Add(-time.Second)) || at.After(time.Now().Add(time.Second)) {
			t.Errorf("progress report time %s, want between %s and now", at, start)
		}
	}
	eta := sc.find("tensorstack_trainingjob_progress_estimated_finish_timestamp_seconds", id(running))
	reported := sc.find("tensorstack_trainingjob_progress_report_timestamp_seconds", id(running))
	if len(eta) == 1 && len(reported) == 1 {
		if d := eta[0].Value - reported[0].Value; d < 599 || d > 601 {
			t.Errorf("estimated finish %v s after the report, want 600 (remainingSeconds)", d)
		}
	}
	// The finished job has no series of its own, and is counted once.
	for _, s := range sc.Samples {
		if s.Labels["name"] == finished.Name && s.Labels["namespace"] == finished.Namespace {
			t.Errorf("the finished job still has the series %s", s)
		}
	}
	ns := map[string]string{"namespace": f.Namespace, "kind": string(finished.Kind)}
	expect("tensorstack_trainingjob_finished_total", withLabels(ns, "result", "Succeeded", "reason", "Succeeded"), 1)
	expect("tensorstack_trainingjob_duration_seconds_count", withLabels(ns, "result", "Succeeded"), 1)
	expect("tensorstack_trainingjob_queued_seconds_count", ns, 1)
	search := map[string]string{"namespace": f.Namespace, "search": "search"}
	expect("training_controller_tuning_trials", withLabels(search, "state", "Running"), 1)
	expect("training_controller_tuning_best_objective", withLabels(search, "metric", "loss", "direction", "minimize"), 0.75)
	expect("training_controller_tuning_recent_ended_trials", search, 0)

	// No two series alike.
	seen := map[string]bool{}
	for _, s := range sc.Samples {
		if seen[s.String()] {
			t.Errorf("series %s appears twice", s)
		}
		seen[s.String()] = true
	}
	// The controller's families are there, with their types and labels.
	live := sc.known()
	for name, fam := range controllerFamilies {
		if typ := sc.Types[name]; typ != fam.typ {
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

}

// TestMetricsEndpointsRefuse checks who may read the metrics of the
// controller and of training-apiserver: nobody without a token (401),
// nobody without the shipped ClusterRole (403), and the profiles of neither
// by default (404 to a user allowed to read them).
func TestMetricsEndpointsRefuse(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "metrics-auth")
	if f.LocalSetting("LOCAL_TRAINING_METRICS_SECURE") == "0" {
		t.Skip("the stack serves the controller's metrics over plain HTTP (LOCAL_TRAINING_METRICS_SECURE=0)")
	}
	reader := scraperToken(f, "reader", true)
	stranger := scraperToken(f, "stranger", false)
	profiler := scraperToken(f, "profiler", false)
	// The profiler may get the profiles' paths: a 404 then says they are
	// not served, not that they are forbidden.
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: f.Namespace + "-profiles"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/debug/pprof", "/debug/pprof/*"}, Verbs: []string{"get"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: f.Namespace + "-profiles"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "profiler", Namespace: f.Namespace}},
	}
	if _, err := f.Kube.RbacV1().ClusterRoles().Create(f.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Kube.RbacV1().ClusterRoleBindings().Create(f.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
		_ = f.Kube.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})

	metrics := controllerMetricsURL(f)
	base := strings.TrimSuffix(metrics, "/metrics")
	for _, server := range []struct{ name, base string }{
		{"training-controller-manager", base},
		{"training-apiserver", trainingAPIServerURL(f)},
	} {
		for _, c := range []struct {
			who, token, path string
			want             int
		}{
			{"no token", "", "/metrics", http.StatusUnauthorized},
			{"a token kube-apiserver does not know", "not-a-token", "/metrics", http.StatusUnauthorized},
			{"a ServiceAccount without the role", stranger, "/metrics", http.StatusForbidden},
			{"a ServiceAccount with " + metricsReaderRole, reader, "/metrics", http.StatusOK},
			{"the reader, for the profiles", reader, "/debug/pprof/", http.StatusForbidden},
			{"a user allowed the profiles", profiler, "/debug/pprof/", http.StatusNotFound},
		} {
			// Access decisions are cached for seconds: the bindings made
			// just now may need a moment.
			var code int
			var body []byte
			err := framework.Eventually(30*time.Second, server.name+" "+c.path+" as "+c.who, func(ctx context.Context) (bool, error) {
				var err error
				code, body, err = getMetrics(ctx, server.base+c.path, c.token)
				return err == nil && code == c.want, err
			})
			if err != nil {
				t.Errorf("%s %s as %s: %d (%.200s), want %d", server.name, c.path, c.who, code, body, c.want)
			} else {
				t.Logf("%s %s as %s: %d", server.name, c.path, c.who, code)
			}
		}
	}
}

// withLabels returns a copy of labels with the extra name, value pairs added.
func withLabels(labels map[string]string, extra ...string) map[string]string {
	m := maps.Clone(labels)
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}
