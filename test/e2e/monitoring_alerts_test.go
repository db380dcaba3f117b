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
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// alertFor is what every alert's "for" becomes in TestMonitoringAlerts:
// the conditions are the shipped ones, the waits a test's.
const alertFor = "5s"

// localPrometheusConfig is the shipped scrape configuration pointed at the
// local stack: the stack runs our servers as host processes, so static
// targets replace the Kubernetes service discovery (and the relabelling of
// what it finds), and a file with the test's token replaces the
// ServiceAccount's. training-etcd has no target (the stack's etcd is
// embedded, its figures training-apiserver's), and kube-apiserver is
// scraped as kube-prometheus does, as job apiserver.
func localPrometheusConfig(t *testing.T, f *framework.Framework, root, tokenFile string) string {
	t.Helper()
	targets := map[string]string{
		"training-controller-manager": "127.0.0.1:" + f.LocalSetting("LOCAL_TRAINING_METRICS_PORT"),
		"training-apiserver":          "127.0.0.1:" + f.LocalSetting("LOCAL_TRAINING_PORT"),
	}
	var jobs []map[string]any
	for _, job := range loadScrapeConfigs(t, root) {
		name := job["job_name"].(string)
		target, ok := targets[name]
		if !ok {
			continue
		}
		delete(job, "kubernetes_sd_configs")
		delete(job, "relabel_configs")
		job["static_configs"] = []any{map[string]any{"targets": []string{target}}}
		if auth, ok := job["authorization"].(map[string]any); ok {
			auth["credentials_file"] = tokenFile
		}
		jobs = append(jobs, job)
	}
	if len(jobs) != len(targets) {
		t.Fatalf("%s lacks jobs for %v", scrapeConfigsFile, targets)
	}
	jobs = append(jobs, map[string]any{
		"job_name":       "apiserver",
		"scheme":         "https",
		"authorization":  map[string]any{"credentials_file": tokenFile},
		"tls_config":     map[string]any{"insecure_skip_verify": true},
		"static_configs": []any{map[string]any{"targets": []string{"127.0.0.1:" + f.LocalSetting("LOCAL_APISERVER_PORT")}}},
	})
	config, err := yaml.Marshal(map[string]any{
		"global":         map[string]any{"scrape_interval": "1s", "evaluation_interval": "1s"},
		"rule_files":     []string{"rules.yml"},
		"scrape_configs": jobs,
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(config)
}

// shortRules are the shipped alerts with every "for" set to alertFor.
func shortRules(t *testing.T, root string) string {
	t.Helper()
	dir := t.TempDir()
	plainRules(t, root, filepath.Join(dir, "rules.yml"))
	data, err := os.ReadFile(filepath.Join(dir, "rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(`(?m)^(\s+for:\s*).*$`).ReplaceAllString(string(data), "${1}"+alertFor)
}

// TestMonitoringAlerts runs a real Prometheus with the shipped scrape
// configuration and alerts against the stack. Every series the dashboard
// and the alerts select exists there with the labels they match; then the
// faults the control-plane alerts are about are made real, one at a time,
// and each alert fires and resolves: training-controller-manager stopped,
// training-apiserver stopped (its APIService unavailable), and a serving
// certificate that expires within the alert's 7 days. A failing job fires
// TrainingJobFailed. It stops our servers, so it does not run in parallel.
func TestMonitoringAlerts(t *testing.T) {
	root := repoRoot(t)
	binaryOrSkip(t, root, prometheusBinary)
	f := framework.New(t, "alerts")
	if f.LocalSetting("LOCAL_TRAINING_METRICS_SECURE") == "0" {
		t.Skip("the stack serves the controller's metrics over plain HTTP (LOCAL_TRAINING_METRICS_SECURE=0); the shipped scrape configuration is HTTPS")
	}
	token := scraperToken(f, "prometheus", true)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startPrometheus(t, root, localPrometheusConfig(t, f, root, tokenFile), map[string]string{"rules.yml": shortRules(t, root)})

	// Every target answers the shipped scrape configuration.
	f.Eventually(time.Minute, "every target up", func(ctx context.Context) (bool, error) {
		targets, err := p.targets(ctx)
		if err != nil {
			return false, err
		}
		var down []string
		for _, tg := range targets {
			if tg.Health != "up" {
				down = append(down, fmt.Sprintf("%s (%s): %s %s", tg.Labels["job"], tg.ScrapeURL, tg.Health, tg.LastError))
			}
		}
		if len(targets) != 3 || len(down) > 0 {
			return false, fmt.Errorf("%d targets, down: %v", len(targets), down)
		}
		return true, nil
	})

	// Jobs that give every per-job series a value: one running with
	// progress reported, one finished, one failed.
	running := f.Create(framework.NewPyTorchJob("training").WithReplicas("worker", 1).Forever("worker"))
	finished := f.Create(framework.NewTFJob("finished").WithReplicas("worker", 1).ExitCode(0).RunFor("1s"))
	failed := f.Create(framework.NewTFJob("failing").WithReplicas("worker", 1).ExitCode(3).RunFor("1s"))
	f.WaitForRunningPods(running, 1)
	f.WaitForPhase(running, v1beta1.JobRunning)
	f.WaitForPhase(finished, v1beta1.JobSucceeded)
	f.WaitForPhase(failed, v1beta1.JobFailed)
	if _, err := f.Training.BatchV1beta1().PyTorchTrainingJobs(f.Namespace).ReportProgress(f.Context(), running.Name,
		&v1beta1.ProgressReport{ProgressValues: v1beta1.ProgressValues{
			Step: ptr.To[int64](10), TotalSteps: ptr.To[int64](100), Epoch: ptr.To[int32](1), TotalEpochs: ptr.To[int32](4),
			RemainingSeconds: ptr.To[int64](60), Metrics: []v1beta1.ProgressMetric{{Name: "loss", Value: "0.5"}},
		}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	runningSearch(f, "search", "0.5")

	// The dashboard's and the alerts' selectors, against what Prometheus
	// holds.
	queries := append(dashboardQueries(t, root), ruleQueries(loadRules(t, root))...)
	selectors := querySelectors(t, p, queries)
	// Series the local stack cannot have: it runs one controller without
	// leader election, and an embedded etcd (whose figures come from
	// training-apiserver under etcd's names).
	notHere := map[string]string{
		"leader_election_master_status": "the stack's controller runs without leader election",
	}
	var live map[string][]string
	f.Eventually(time.Minute, "every selected series in Prometheus", func(ctx context.Context) (bool, error) {
		var missing []string
		live, missing = liveSeries(ctx, p, selectors, notHere)
		if len(missing) > 0 {
			return false, fmt.Errorf("no series of %v", missing)
		}
		return true, nil
	})
	for name, why := range notHere {
		t.Logf("not checked against the stack: %s (%s)", name, why)
		live[name] = allFamilies()[name].labels
	}
	checkQueries(t, selectors, live, "Prometheus scraping the stack")
	if t.Failed() {
		return
	}

	// TrainingJobFailed: the failed job is counted in its namespace.
	fired := waitForAlert(t, p, "TrainingJobFailed", map[string]string{"namespace": f.Namespace, "reason": "ReplicaFailed"}, time.Minute)
	t.Logf("TrainingJobFailed fired for %s", fired.Annotations["description"])

	// No control-plane alert fires while everything runs.
	controlPlane := []string{"TrainingControllerDown", "TrainingAPIServiceUnavailable", "TrainingServingCertificateExpiring",
		"TrainingEtcdNoLeader", "TrainingEtcdNearQuota", "TrainingAPIServerErrors", "TrainingControllerQueueBacklog"}
	for _, name := range controlPlane {
		if got, err := p.firing(f.Context(), name); err != nil || len(got) > 0 {
			t.Errorf("%s fires with nothing wrong: %v %v", name, got, err)
		}
	}

	t.Run("queue backlog", func(t *testing.T) {
		f := f.For(t)
		stallQueue(t, f, p)
	})

	t.Run("controller stopped", func(t *testing.T) {
		f := f.For(t)
		f.RestartComponent("--stop", "training-controller-manager")
		stopped := time.Now()
		defer func() {
			if !t.Failed() {
				return
			}
			f.RestartComponent("--start", "training-controller-manager")
		}()
		waitForAlert(t, p, "TrainingControllerDown", nil, time.Minute)
		t.Logf("TrainingControllerDown fired %.1f s after the controller stopped (for: %s)", time.Since(stopped).Seconds(), alertFor)
		f.RestartComponent("--start", "training-controller-manager")
		started := time.Now()
		waitForResolved(t, p, "TrainingControllerDown", time.Minute)
		t.Logf("TrainingControllerDown resolved %.1f s after the controller started", time.Since(started).Seconds())
	})

	t.Run("APIService unavailable", func(t *testing.T) {
		f := f.For(t)
		f.RestartComponent("--stop", "training-apiserver")
		stopped := time.Now()
		restarted := false
		defer func() {
			if !restarted {
				f.RestartComponent("--start", "training-apiserver")
			}
		}()
		waitForAlert(t, p, "TrainingAPIServiceUnavailable", map[string]string{"name": "v1beta1.batch.tensorstack.dev"}, 2*time.Minute)
		t.Logf("TrainingAPIServiceUnavailable fired %.1f s after training-apiserver stopped (for: %s)", time.Since(stopped).Seconds(), alertFor)
		f.RestartComponent("--start", "training-apiserver")
		restarted = true
		started := time.Now()
		waitForResolved(t, p, "TrainingAPIServiceUnavailable", 2*time.Minute)
		t.Logf("TrainingAPIServiceUnavailable resolved %.1f s after training-apiserver started", time.Since(started).Seconds())
	})

	t.Run("certificate expiring", func(t *testing.T) {
		f := f.For(t)
		pki := filepath.Join(f.Env.LocalDir, "pki")
		certFile, keyFile := filepath.Join(pki, "training-apiserver.crt"), filepath.Join(pki, "training-apiserver.key")
		origCert, err := os.ReadFile(certFile)
		if err != nil {
			t.Fatal(err)
		}
		origKey, err := os.ReadFile(keyFile)
		if err != nil {
			t.Fatal(err)
		}
		restore := func() { replaceCertFiles(t, certFile, keyFile, origCert, origKey) }
		// The same names, signed by the same CA, so that kube-apiserver
		// keeps trusting it: only its expiry, in 3 days, is new.
		certPEM, keyPEM := reissueCert(t, origCert, filepath.Join(pki, "training-ca.crt"), filepath.Join(pki, "training-ca.key"), 72*time.Hour)
		replaceCertFiles(t, certFile, keyFile, certPEM, keyPEM)
		swapped := time.Now()
		restored := false
		defer func() {
			if !restored {
				restore()
			}
		}()
		waitForAlert(t, p, "TrainingServingCertificateExpiring", nil, 2*time.Minute)
		t.Logf("TrainingServingCertificateExpiring fired %.1f s after the certificate files changed", time.Since(swapped).Seconds())
		restore()
		restored = true
		back := time.Now()
		waitForResolved(t, p, "TrainingServingCertificateExpiring", 2*time.Minute)
		t.Logf("TrainingServingCertificateExpiring resolved %.1f s after the certificate was restored", time.Since(back).Seconds())
		f.WaitForAPIServiceAvailable()
	})
}

// stallQueue makes the controller fall behind as a slow admission webhook
// would: a webhook on the test namespace's pod creations whose server takes
// connections and never answers, so that every pod create waits out the
// webhook's 30 s. With every worker waiting, jobs pile up in the queue
// until TrainingControllerQueueBacklog fires; removing the webhook drains
// it and the alert resolves.
func stallQueue(t *testing.T, f *framework.Framework, p *prometheus) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	unstall := func() {
		_ = ln.Close()
		<-accepted
		for _, c := range conns {
			_ = c.Close()
		}
	}
	webhooks := f.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	none := admissionregistrationv1.SideEffectClassNone
	ignore := admissionregistrationv1.Ignore
	hook := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: f.Namespace + "-stall"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "stall.e2e.tensorstack.dev",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://" + ln.Addr().String() + "/validate")},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": f.Namespace}},
			// training-apiserver dry-runs a job's pods when the job is
			// created: those must not wait.
			MatchConditions:         []admissionregistrationv1.MatchCondition{{Name: "not-a-dry-run", Expression: "!request.dryRun"}},
			FailurePolicy:           &ignore,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](30),
		}},
	}
	if _, err := webhooks.Create(f.Context(), hook, metav1.CreateOptions{}); err != nil {
		unstall()
		t.Fatal(err)
	}
	removed := false
	remove := func() {
		if removed {
			return
		}
		removed = true
		if err := webhooks.Delete(context.Background(), hook.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting the webhook: %v", err)
		}
		unstall()
	}
	defer remove()
	// More jobs than the alert's 100 beyond the workers that wait.
	const jobs = 150
	start := time.Now()
	for i := range jobs {
		job := framework.NewTFJob(fmt.Sprintf("stalled-%03d", i)).WithReplicas("worker", 1).Build(f.Namespace)
		if err := f.CreateJob(f.Context(), job); err != nil {
			t.Fatal(err)
		}
	}
	waitForAlert(t, p, "TrainingControllerQueueBacklog", map[string]string{"name": "trainingjob"}, 3*time.Minute)
	t.Logf("TrainingControllerQueueBacklog fired %.1f s after the first of %d jobs was created behind a webhook that never answers (for: %s)",
		time.Since(start).Seconds(), jobs, alertFor)
	remove()
	drained := time.Now()
	waitForResolved(t, p, "TrainingControllerQueueBacklog", 3*time.Minute)
	t.Logf("TrainingControllerQueueBacklog resolved %.1f s after the webhook was removed", time.Since(drained).Seconds())
}

// liveSeries asks Prometheus for the series of every selector's metric and
// returns their label names, and the metrics that have none (leaving out
// those of notHere).
func liveSeries(ctx context.Context, p *prometheus, selectors map[query][]selector, notHere map[string]string) (map[string][]string, []string) {
	names := map[string]bool{}
	for _, sels := range selectors {
		for _, s := range sels {
			names[s.Metric] = true
		}
	}
	live := map[string][]string{}
	var missing []string
	for name := range names {
		if _, skip := notHere[name]; skip {
			continue
		}
		samples, err := p.query(ctx, fmt.Sprintf("last_over_time(%s[10m])", name))
		if err != nil || len(samples) == 0 {
			missing = append(missing, name)
			continue
		}
		var labels []string
		for _, s := range samples {
			for l := range s.Metric {
				if !slices.Contains(labels, l) {
					labels = append(labels, l)
				}
			}
		}
		sort.Strings(labels)
		live[name] = labels
	}
	sort.Strings(missing)
	return live, missing
}

// waitForAlert waits until the alert fires with the labels want (a subset)
// and returns it.
func waitForAlert(t *testing.T, p *prometheus, name string, want map[string]string, timeout time.Duration) promAlert {
	t.Helper()
	var found promAlert
	err := framework.Eventually(timeout, name+" firing", func(ctx context.Context) (bool, error) {
		alerts, err := p.firing(ctx, name)
		if err != nil {
			return false, err
		}
		for _, a := range alerts {
			match := true
			for k, v := range want {
				if a.Labels[k] != v {
					match = false
				}
			}
			if match {
				found = a
				return true, nil
			}
		}
		return false, fmt.Errorf("firing: %v", alerts)
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// waitForResolved waits until no alert of that name fires.
func waitForResolved(t *testing.T, p *prometheus, name string, timeout time.Duration) {
	t.Helper()
	err := framework.Eventually(timeout, name+" resolved", func(ctx context.Context) (bool, error) {
		alerts, err := p.firing(ctx, name)
		if err != nil {
			return false, err
		}
		if len(alerts) > 0 {
			return false, fmt.Errorf("still firing: %v", alerts)
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// reissueCert makes a certificate with the subject and names of certPEM,
// signed by the CA in caCertFile and caKeyFile, that expires after
// validity, and a new key for it.
func reissueCert(t *testing.T, certPEM []byte, caCertFile, caKeyFile string, validity time.Duration) ([]byte, []byte) {
	t.Helper()
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	old := certs[0]
	caCerts, err := certutil.CertsFromFile(caCertFile)
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := keyutil.PrivateKeyFromFile(caKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	key, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	parsedKey, err := keyutil.ParsePrivateKeyPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	signer, ok := parsedKey.(crypto.Signer)
	if !ok {
		t.Fatal("the new key has no public key")
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: old.Subject.CommonName, Organization: old.Subject.Organization},
		DNSNames:     old.DNSNames,
		IPAddresses:  old.IPAddresses,
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCerts[0], signer.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: der}), key
}

// replaceCertFiles writes a certificate and key as a renewal would: both
// complete, the key first, each by a rename.
func replaceCertFiles(t *testing.T, certFile, keyFile string, certPEM, keyPEM []byte) {
	t.Helper()
	for _, f := range []struct {
		path string
		data []byte
	}{{keyFile, keyPEM}, {certFile, certPEM}} {
		tmp := f.path + ".new"
		if err := os.WriteFile(tmp, f.data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, f.path); err != nil {
			t.Fatal(err)
		}
	}
}
