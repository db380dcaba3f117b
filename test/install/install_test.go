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
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// jobsNamespace holds the jobs the test creates.
const jobsNamespace = "install-test"

// TestInstall walks an installation's life: install release A, train,
// upgrade to B under load, faults, etcd refusing clients without its
// certificates and renewing them under load, the ServiceAccounts' rights
// against the documented table, an etcd snapshot, a Helm install
// refused over it, uninstall; then the same release from its Helm chart,
// restored from the snapshot, and its uninstall; last, an installation
// with a wrong image and no default StorageClass. The steps depend on each
// other; the first to fail ends the test.
func TestInstall(t *testing.T) {
	e := newEnv(t)
	steps := []struct {
		name string
		run  func(*testing.T, *env)
	}{
		{"install", testApply},
		{"train", testTrain},
		{"upgrade", testUpgrade},
		{"faults", testFaults},
		{"etcd-tls", testEtcdTLS},
		{"etcd-rotation", testEtcdRotation},
		{"service-accounts", testServiceAccountRights},
		{"backup", testBackup},
		{"helm-refuses", testHelmRefusesOverKubectl},
		{"uninstall", testUninstall},
		{"helm", testHelmInstall},
		{"bad-input", testBadInput},
	}
	for _, s := range steps {
		if !t.Run(s.name, func(t *testing.T) { s.run(t, e) }) {
			return
		}
	}
}

// testApply: kubectl apply --server-side -f install.yaml, then the
// APIService becomes Available through the in-cluster Service, with every
// pod of the installation a container on the real node.
func testApply(t *testing.T, e *env) {
	start := time.Now()
	e.run(t, e.installYAML(t, "a"), "apply", "--server-side", "-f", "-")
	e.waitInstalled(t, "apply", start, "a")

	claims, err := e.kube.CoreV1().PersistentVolumeClaims(systemNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bound := 0
	for _, c := range claims.Items {
		if c.Status.Phase == corev1.ClaimBound {
			bound++
		}
	}
	if bound != 3 || len(claims.Items) != 3 {
		t.Errorf("%d of %d PersistentVolumeClaims bound, want the 3 etcd members' bound", bound, len(claims.Items))
	}
}

// waitInstalled waits until the APIService is Available and the
// installation has rolled out, logging the seconds since start, and checks
// that its pods run the release's images on the real node.
func (e *env) waitInstalled(t *testing.T, how string, start time.Time, release string) {
	t.Helper()
	waitFor(t, "APIService "+apiServiceName+" Available", 10*time.Minute, 500*time.Millisecond,
		func(ctx context.Context) (bool, error) {
			ok, _ := e.apiServiceAvailable(ctx)
			return ok, nil
		})
	t.Logf("%s to APIService Available: %.1fs", how, time.Since(start).Seconds())
	waitFor(t, "the installation rolled out", 5*time.Minute, time.Second, e.rolledOut)
	t.Logf("%s to every Deployment and the StatefulSet ready: %.1fs", how, time.Since(start).Seconds())
	e.checkPods(t, e.releaseDigests(t, release))
	// The apiservers install the shipped runtimes before they are ready.
	names := e.run(t, nil, "get", "clustertrainingruntimes", "-o", "jsonpath={.items[*].metadata.name}")
	if names != "generic mpi tensorflow torch-distributed xgboost" {
		t.Errorf("%s: the ClusterTrainingRuntimes are %q, want the five the apiserver ships", how, names)
	}
}

// rolledOut: both Deployments (and the dashboard's, when installed) and the
// etcd StatefulSet run their current template on every replica, all ready.
func (e *env) rolledOut(ctx context.Context) (bool, error) {
	for _, name := range []string{"training-apiserver", "training-controller-manager", "training-dashboard"} {
		d, err := e.kube.AppsV1().Deployments(systemNamespace).Get(ctx, name, metav1.GetOptions{})
		if name == "training-dashboard" && apierrors.IsNotFound(err) {
			continue // installed only with dashboard.enabled
		}
		if err != nil {
			return false, nil
		}
		if !deploymentDone(d) {
			return false, nil
		}
	}
	s, err := e.kube.AppsV1().StatefulSets(systemNamespace).Get(ctx, "training-etcd", metav1.GetOptions{})
	if err != nil {
		return false, nil
	}
	want := *s.Spec.Replicas
	return s.Status.ObservedGeneration == s.Generation && s.Status.UpdateRevision == s.Status.CurrentRevision &&
		s.Status.UpdatedReplicas == want && s.Status.ReadyReplicas == want, nil
}

func deploymentDone(d *appsv1.Deployment) bool {
	want := *d.Spec.Replicas
	return d.Status.ObservedGeneration == d.Generation && d.Status.UpdatedReplicas == want &&
		d.Status.Replicas == want && d.Status.AvailableReplicas == want && d.Status.UnavailableReplicas == 0
}

// checkPods: every pod of the installation runs on the real node, from the
// registry, by the digest of the release's image, as a non-root user.
func (e *env) checkPods(t *testing.T, digests map[string]string) {
	t.Helper()
	pods, err := e.kube.CoreV1().Pods(systemNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The dashboard's pod, when the installation has one, comes on top.
	dashboards := 0
	for _, p := range pods.Items {
		if p.Labels["app.kubernetes.io/name"] == "training-dashboard" {
			dashboards++
		}
	}
	if len(pods.Items)-dashboards != 7 || dashboards > 1 {
		t.Errorf("%d pods in %s (%d of them the dashboard's), want 7 (3 etcd members, 2 apiservers, 2 controllers) and "+
			"at most one dashboard", len(pods.Items), systemNamespace, dashboards)
	}
	perNode := map[string]int{}
	defer func() { t.Logf("the installation's pods per node: %v", perNode) }()
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		perNode[p.Spec.NodeName]++
		if !strings.HasPrefix(p.Spec.NodeName, realNodePrefix) {
			t.Errorf("pod %s runs on %q, want a real node", p.Name, p.Spec.NodeName)
		}
		images := map[string]string{} // container: image name
		for _, c := range p.Spec.Containers {
			name := c.Image[strings.LastIndex(c.Image, "/")+1:]
			name, _, _ = strings.Cut(name, ":")
			images[c.Name] = name
			want := e.registry + "/tensorstack/" + name
			if !strings.HasPrefix(c.Image, want+":") || !strings.HasSuffix(c.Image, "@"+digests[name]) {
				t.Errorf("pod %s runs %s, want %s:<version>@%s", p.Name, c.Image, want, digests[name])
			}
		}
		// What the kubelet pulled and runs, by the runtime's account.
		for _, s := range p.Status.ContainerStatuses {
			if !strings.HasSuffix(s.ImageID, "@"+digests[images[s.Name]]) {
				t.Errorf("pod %s: container %s runs image %q, want the release's %s", p.Name, s.Name, s.ImageID, digests[images[s.Name]])
			}
			if !s.Ready {
				t.Errorf("pod %s: container %s is not ready", p.Name, s.Name)
			}
		}
		if sc := p.Spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
			t.Errorf("pod %s does not require a non-root user", p.Name)
		}
	}
}

// exampleJob is artifacts/examples/pytorch-ddp.yaml under another name, in
// the test's namespace, training for steps steps of half a second.
func exampleJob(t *testing.T, name string, steps int) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "artifacts", "examples", "pytorch-ddp.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(data), "name: pytorch-ddp", "name: "+name+"\n  namespace: "+jobsNamespace, 1)
	s = strings.Replace(s, "- name: STEPS\n                  value: \"40\"", "- name: STEPS\n                  value: \""+strconv.Itoa(steps)+"\"", 1)
	if !strings.Contains(s, "namespace: "+jobsNamespace) || !strings.Contains(s, "value: \""+strconv.Itoa(steps)+"\"") {
		t.Fatalf("artifacts/examples/pytorch-ddp.yaml changed shape; the test cannot set its name or STEPS")
	}
	return []byte(s)
}

// completed: the job's Completed condition is True.
func (e *env) completed(name string) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		j, err := e.jobs.BatchV1beta1().PyTorchTrainingJobs(jobsNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range j.Status.Conditions {
			if c.Type == "Failed" && c.Status == metav1.ConditionTrue {
				return false, &jobFailed{name: name, message: c.Message}
			}
			if c.Type == "Completed" && c.Status == metav1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	}
}

type jobFailed struct{ name, message string }

func (f *jobFailed) Error() string { return "job " + f.name + " failed: " + f.message }

// testTrain: the local stack's training image trains a 2-rank DDP job to
// the end through the installed product.
func testTrain(t *testing.T, e *env) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: jobsNamespace}}
	if _, err := e.kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	e.run(t, exampleJob(t, "ddp", 40), "apply", "-f", "-")
	took := waitFor(t, "job ddp Completed", 5*time.Minute, time.Second, e.completed("ddp"))
	t.Logf("a 2-rank DDP job (40 steps) from create to Completed: %.1fs", took.Seconds())
	// The job completes once its containers exited 0; the pods' phase turns
	// Succeeded a moment later, when the kubelet has torn their sandboxes
	// down.
	var wrong []string
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := e.kube.CoreV1().Pods(jobsNamespace).List(ctx, metav1.ListOptions{LabelSelector: v1beta1.LabelJobName + "=ddp"})
		if err != nil {
			return false, err
		}
		wrong = nil
		for _, p := range pods.Items {
			if !strings.HasPrefix(p.Spec.NodeName, realNodePrefix) || p.Status.Phase != corev1.PodSucceeded {
				wrong = append(wrong, fmt.Sprintf("pod %s: node %q, phase %s", p.Name, p.Spec.NodeName, p.Status.Phase))
			}
		}
		return len(pods.Items) > 0 && len(wrong) == 0, nil
	})
	if err != nil {
		t.Errorf("the job's pods did not all succeed on a real node: %v; want a real node, Succeeded: %s", err, strings.Join(wrong, "; "))
	}
}
