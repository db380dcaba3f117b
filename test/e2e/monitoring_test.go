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
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// freePort is a port on 127.0.0.1 that nothing listens on now.
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
