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

package install

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const helmRelease = "training"

// maxGapDuringEtcdRestart bounds how long the API may go without answering a
// get while the etcd members restart one by one: one get caught on a stopping
// member waits out its 10-second deadline, and the next must be answered.
const maxGapDuringEtcdRestart = 15 * time.Second

// chart is the path of a release's Helm chart.
func (e *env) chart(t *testing.T, release string) string {
	t.Helper()
	charts, err := filepath.Glob(filepath.Join(e.releases[release], "training-*.tgz"))
	if err != nil || len(charts) != 1 {
		t.Fatalf("release %s: want one chart training-*.tgz, found %v (%v)", release, charts, err)
	}
	return charts[0]
}

// tryHelm runs helm against the stack and returns its combined output.
func (e *env) tryHelm(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, e.helm, append([]string{"--kubeconfig", e.kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}

func (e *env) runHelm(t *testing.T, args ...string) string {
	t.Helper()
	out, err := e.tryHelm(args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// helmInstallArgs install a release's chart from the stack's registry, as
// docs/install.md says.
func (e *env) helmInstallArgs(t *testing.T, release string, extra ...string) []string {
	return append([]string{"install", helmRelease, e.chart(t, release), "--namespace", systemNamespace, "--create-namespace",
		"--set", "images.registry=" + e.registry + "/tensorstack"}, extra...)
}

// testHelmRefusesOverKubectl: with the kubectl installation in place, helm
// install stops before it changes anything, and says why.
func testHelmRefusesOverKubectl(t *testing.T, e *env) {
	out, err := e.tryHelm(e.helmInstallArgs(t, "b")...)
	if err == nil {
		t.Fatalf("helm install over the kubectl installation succeeded:\n%s", out)
	}
	if !strings.Contains(out, "already installed here without Helm") {
		t.Errorf("helm install over the kubectl installation failed, but without naming the cause:\n%s", out)
	}
	t.Logf("helm install over the kubectl installation: %s", strings.TrimSpace(out))
	if releases := strings.TrimSpace(e.runHelm(t, "list", "--namespace", systemNamespace, "--all", "--short")); releases != "" {
		t.Errorf("the refused install left Helm releases: %s", releases)
	}
	if ok, why := e.apiServiceAvailable(context.Background()); !ok {
		t.Errorf("after the refused helm install the APIService is not Available: %s", why)
	}
	e.checkPods(t, e.releaseDigests(t, "b"))
}

// testHelmInstall: on the cluster the kubectl uninstall left, the chart
// installs the same product from the registry, its etcd restored from the
// backup step's snapshot (every job back with its status); a job trains;
// its serving certificates, minutes long, renew under kubectl get
// traffic with no request failed and the APIService always Available;
// helm uninstall, as docs/install.md says, leaves nothing behind.
func testHelmInstall(t *testing.T, e *env) {
	ctx := context.Background()
	// The users' namespaces outlive an installation.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: jobsNamespace}}
	if _, err := e.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	e.stageSnapshot(t)
	start := time.Now()
	e.runHelm(t, e.helmInstallArgs(t, "b", append([]string{"--set", "etcd.cluster.restore.claimName=" + restoreClaim,
		"--set", "dashboard.enabled=true"}, shortCertificates...)...)...)
	e.waitInstalled(t, "helm install", start, "b")
	// From here on, kubectl get traffic while the certificates renew.
	firstCerts := e.servedCertificates(t)
	etcdClient := e.etcdClient(t)
	firstEtcdCerts := e.servedEtcdCertificates(t, etcdClient)
	firstEtcdEnd := certificateEnd(t, etcdClient.certFile)
	gets := startGets(e)
	availability := sampleAvailability(e)

	e.checkRestored(t)
	t.Logf("restored from the snapshot: its %d jobs, each the same object with the same conditions", len(e.backedUp))

	e.run(t, exampleJob(t, "ddp-helm", 8), "apply", "-f", "-")
	took := waitFor(t, "job ddp-helm Completed", 5*time.Minute, time.Second, e.completed("ddp-helm"))
	t.Logf("a 2-rank DDP job (8 steps) on the Helm installation, create to Completed: %.1fs", took.Seconds())
	e.checkDashboard(t, "ddp-helm")

	served, renewed := e.waitRenewed(t, firstCerts, 6*time.Minute)
	// etcd's certificates renew too, and the API keeps working past the
	// end of the ones it started with.
	etcdRenewed := waitFor(t, "every etcd member serving a renewed certificate", 6*time.Minute, 5*time.Second,
		func(ctx context.Context) (bool, error) {
			now := e.servedEtcdCertificates(t, e.etcdClient(t))
			for member, fingerprint := range firstEtcdCerts {
				if now[member] == "" || now[member] == fingerprint {
					return false, nil
				}
			}
			return true, nil
		})
	if wait := time.Until(firstEtcdEnd.Add(30 * time.Second)); wait > 0 {
		time.Sleep(wait)
	}
	unavailable := availability.finish()
	requests, failures := gets.finish()
	t.Logf("serving certificates valid 4 minutes, renewed after 1: every apiserver served a renewed one %.0fs after the "+
		"first check (%d certificates in all); etcd's: every member served a renewed one %.0fs later, the first ones "+
		"ended at %s; %d gets meanwhile, %d failed; APIService unavailable %.2fs",
		renewed.Seconds(), served, etcdRenewed.Seconds(), firstEtcdEnd.Format("15:04:05"), requests, len(failures),
		unavailable.Seconds())
	if len(failures) > 0 {
		t.Errorf("%d of %d gets failed while the certificates renewed; the first:\n%s", len(failures), requests,
			strings.Join(failures[:min(10, len(failures))], "\n"))
	}
	if unavailable > 0 {
		t.Errorf("the APIService was unavailable for %v while the certificates renewed", unavailable)
	}

	// Every connection to etcd made anew, now that the first certificates
	// have ended: the apiservers and the members must present the renewed
	// ones, which they read from their files. A rolling restart of the
	// members is a disruption of its own: a get caught on a member as it
	// stops may time out, as with Kubernetes' own etcd, but the API answers
	// throughout.
	restartGets := startGets(e)
	start = time.Now()
	e.run(t, nil, "rollout", "restart", "--namespace", systemNamespace, "statefulset/training-etcd")
	e.run(t, nil, "rollout", "status", "--namespace", systemNamespace, "statefulset/training-etcd", "--timeout=5m")
	requests, failures = restartGets.finish()
	gap := restartGets.longestWithoutAnswer()
	t.Logf("every etcd member restarted with the renewed certificates in %.0fs; %d gets meanwhile, %d failed, the "+
		"longest time without an answer %.1fs", time.Since(start).Seconds(), requests, len(failures), gap.Seconds())
	if len(failures) > 0 {
		t.Logf("the failed gets:\n%s", strings.Join(failures[:min(10, len(failures))], "\n"))
	}
	if gap > maxGapDuringEtcdRestart {
		t.Errorf("no get answered for %v while the etcd members restarted one by one, want at most %v", gap,
			maxGapDuringEtcdRestart)
	}
	if requests == 0 || len(failures) == requests {
		t.Errorf("no get answered while the etcd members restarted (%d tried)", requests)
	}

	start = time.Now()
	e.run(t, nil, "delete", "pytorchtrainingjobs,tensorflowtrainingjobs", "--all", "--all-namespaces", "--wait=true", "--timeout=5m")
	e.runHelm(t, "uninstall", helmRelease, "--namespace", systemNamespace, "--wait", "--timeout", "5m")
	// What a release does not own: the etcd members' claims and the
	// controller's Lease go with the namespace.
	e.run(t, nil, "delete", "namespace", systemNamespace, "--wait=true", "--timeout=5m")
	t.Logf("helm uninstall, as docs/install.md says: %.1fs", time.Since(start).Seconds())
	e.checkNothingLeft(t)
}
