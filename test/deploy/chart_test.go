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

package deploy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const chartDir = "artifacts/charts/training"

// The labels Helm's templates add to every object; kustomize's renders have
// none of them.
var helmLabels = []string{"app.kubernetes.io/managed-by", "app.kubernetes.io/instance",
	"app.kubernetes.io/version", "helm.sh/chart"}

// helmTemplate renders the chart with the values given as --set pairs.
func (e *testEnv) helmTemplate(t *testing.T, set ...string) ([]*unstructured.Unstructured, error) {
	t.Helper()
	args := []string{"template", "training", e.path(chartDir), "--namespace", systemNamespace}
	for _, s := range set {
		if strings.HasPrefix(s, "--") {
			// A flag of helm's own, such as --api-versions.
			args = append(args, s)
			continue
		}
		args = append(args, "--set", s)
	}
	out, _, err := run(context.Background(), nil, filepath.Join(e.binDir, "helm"), args...)
	if err != nil {
		return nil, err
	}
	objs, err := decodeObjects(out)
	if err != nil {
		t.Fatalf("decoding helm template %v: %v", set, err)
	}
	return objs, nil
}

func (e *testEnv) mustHelmTemplate(t *testing.T, set ...string) *rendered {
	t.Helper()
	objs, err := e.helmTemplate(t, set...)
	if err != nil {
		t.Fatalf("helm template %v: %v", set, err)
	}
	return &rendered{objects: objs}
}

func TestChartLint(t *testing.T) {
	e := staticEnv(t)
	for _, values := range [][]string{
		nil,
		{"etcd.mode=embedded", "apiserver.replicas=1", "certificates.source=cert-manager"},
		{"etcd.mode=external", "etcd.external.servers={https://etcd.example.com:2379}", "etcd.external.tlsSecret=etcd-client"},
		{"certificates.source=secret", "certificates.secret.caBundle=Y2E=", "kueue.enabled=true",
			"monitoring.serviceMonitors.enabled=true", "monitoring.prometheusRule.enabled=true",
			"monitoring.grafanaDashboard.enabled=true"},
	} {
		args := []string{"lint", "--strict", e.path(chartDir), "--namespace", systemNamespace}
		for _, s := range values {
			args = append(args, "--set", s)
		}
		if out, _, err := run(context.Background(), nil, filepath.Join(e.binDir, "helm"), args...); err != nil {
			t.Errorf("helm lint %v: %v\n%s", values, err, out)
		}
	}
}

// TestChartKueueAuto: kueue.enabled=auto, the default, grants the
// controller-manager Kueue's RBAC when the cluster serves Kueue's v1beta2
// API: without it, jobs that name a queue would wait on a cluster that runs
// Kueue. true and false decide regardless.
func TestChartKueueAuto(t *testing.T) {
	e := staticEnv(t)
	const role = "tensorstack:training-controller-manager:kueue"
	for _, tc := range []struct {
		set  []string
		want bool
	}{
		{nil, false},
		{[]string{"--api-versions=kueue.x-k8s.io/v1beta2"}, true},
		{[]string{"--api-versions=kueue.x-k8s.io/v1beta1"}, false},
		{[]string{"kueue.enabled=false", "--api-versions=kueue.x-k8s.io/v1beta2"}, false},
		{[]string{"kueue.enabled=true"}, true},
	} {
		chart := e.mustHelmTemplate(t, tc.set...)
		if got := chart.find("ClusterRole", "", role) != nil; got != tc.want {
			t.Errorf("helm template %v: ClusterRole %s rendered %v, want %v", tc.set, role, got, tc.want)
		}
		if got := chart.find("ClusterRoleBinding", "", role) != nil; got != tc.want {
			t.Errorf("helm template %v: ClusterRoleBinding %s rendered %v, want %v", tc.set, role, got, tc.want)
		}
	}
}

// TestChartMatchesKustomize renders the chart with the values that stand for
// each kustomize installation and requires the same objects, field by field,
// but for Helm's labels and the Namespace (Helm installs into one).
func TestChartMatchesKustomize(t *testing.T) {
	e := staticEnv(t)
	for _, tc := range []struct {
		overlay overlay
		values  []string
		// adjust removes what the chart adds on purpose, after checking it.
		adjust func(t *testing.T, chart *rendered)
	}{
		{overlay: overlayByName(t, "managed-certs")},
		{overlay: overlayByName(t, "cert-manager"), values: []string{"certificates.source=cert-manager"}},
		{
			overlay: overlayByName(t, "single+cert-manager"),
			values:  []string{"etcd.mode=embedded", "apiserver.replicas=1", "certificates.source=cert-manager"},
			adjust: func(t *testing.T, chart *rendered) {
				// Uninstalling the release keeps the jobs' volume.
				pvc := chart.find("PersistentVolumeClaim", systemNamespace, "training-apiserver-data")
				if pvc == nil || pvc.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
					t.Errorf("the embedded etcd's claim lacks helm.sh/resource-policy: keep")
				} else {
					pvc.SetAnnotations(nil)
				}
			},
		},
		{
			overlay: overlay{name: "managed-certs+kueue", dir: deployDir + "/overlays/managed-certs",
				components: []string{deployDir + "/components/kueue"}},
			values: []string{"kueue.enabled=true"},
		},
		{
			overlay: overlay{name: "managed-certs+dashboard", dir: deployDir + "/overlays/managed-certs",
				components: []string{deployDir + "/components/dashboard"}},
			values: []string{"dashboard.enabled=true"},
		},
		{
			overlay: overlay{name: "managed-certs+etcd-restore", dir: deployDir + "/overlays/managed-certs",
				components: []string{deployDir + "/components/etcd-restore"}},
			values: []string{"etcd.cluster.restore.claimName=training-etcd-restore"},
		},
		{
			overlay: overlayByName(t, "base"),
			values:  []string{"certificates.source=secret", "certificates.secret.caBundle=Y2E="},
			adjust: func(t *testing.T, chart *rendered) {
				svc := chart.find("APIService", "", apiServiceName)
				if got, _, _ := unstructured.NestedString(svc.Object, "spec", "caBundle"); got != "Y2E=" {
					t.Errorf("APIService caBundle = %q, want the value of certificates.secret.caBundle", got)
				}
				unstructured.RemoveNestedField(svc.Object, "spec", "caBundle")
			},
		},
	} {
		t.Run(tc.overlay.name, func(t *testing.T) {
			kustomized := e.render(t, tc.overlay)
			chart := e.mustHelmTemplate(t, tc.values...)
			if tc.adjust != nil {
				tc.adjust(t, chart)
			}
			want := map[string]*unstructured.Unstructured{}
			for _, obj := range kustomized.objects {
				if obj.GetKind() != "Namespace" {
					want[objectKey(obj)] = obj
				}
			}
			got := map[string]*unstructured.Unstructured{}
			for _, obj := range chart.objects {
				labels := obj.GetLabels()
				for _, l := range helmLabels {
					if labels[l] == "" {
						t.Errorf("%s lacks the label %s", objectKey(obj), l)
					}
					delete(labels, l)
				}
				obj.SetLabels(labels)
				got[objectKey(obj)] = obj
			}
			for key, w := range want {
				g, ok := got[key]
				if !ok {
					t.Errorf("the chart has no %s", key)
					continue
				}
				if diff := cmp.Diff(w.Object, g.Object); diff != "" {
					t.Errorf("%s differs from kustomize (-kustomize +chart):\n%s", key, diff)
				}
			}
			for key := range got {
				if _, ok := want[key]; !ok {
					t.Errorf("the chart has %s, kustomize has not", key)
				}
			}
			t.Logf("%d objects, the same as kubectl kustomize %s", len(got), tc.overlay.name)
		})
	}
}

func objectKey(obj *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s/%s", obj.GetKind(), obj.GetNamespace(), obj.GetName())
}

// TestChartValues checks the values that have no kustomize counterpart.
func TestChartValues(t *testing.T) {
	e := staticEnv(t)

	t.Run("the shipped runtimes' image, or none", func(t *testing.T) {
		for value, want := range map[string]string{"registry.example/train@sha256:0": "registry.example/train@sha256:0", "": ""} {
			r := e.mustHelmTemplate(t, "apiserver.runtimesImage="+value)
			if got := flagValue(deployment(t, r, apiserverName).Spec.Template.Spec.Containers[0].Args, "--shipped-runtimes-image"); got != want {
				t.Errorf("apiserver.runtimesImage=%s: --shipped-runtimes-image=%q, want %q", value, got, want)
			}
		}
	})

	t.Run("five etcd members on a StorageClass", func(t *testing.T) {
		r := e.mustHelmTemplate(t, "etcd.cluster.replicas=5", "etcd.cluster.storageClassName=fast", "etcd.cluster.size=50Gi")
		sts := mustGet[appsv1.StatefulSet](t, r, "StatefulSet", systemNamespace, etcdName)
		if *sts.Spec.Replicas != 5 {
			t.Errorf("etcd replicas = %d, want 5", *sts.Spec.Replicas)
		}
		claim := sts.Spec.VolumeClaimTemplates[0].Spec
		if claim.StorageClassName == nil || *claim.StorageClassName != "fast" || claim.Resources.Requests.Storage().String() != "50Gi" {
			t.Errorf("etcd claim = class %v, size %v; want fast, 50Gi", claim.StorageClassName, claim.Resources.Requests.Storage())
		}
		peers := flagValue(sts.Spec.Template.Spec.Containers[0].Args, "--initial-cluster")
		servers := flagValue(deployment(t, r, apiserverName).Spec.Template.Spec.Containers[0].Args, "--etcd-servers")
		for i := range 5 {
			member := fmt.Sprintf("training-etcd-%d", i)
			host := member + ".training-etcd.tensorstack-system.svc"
			if !slices.Contains(strings.Split(peers, ","), member+"=https://"+host+":2380") {
				t.Errorf("--initial-cluster=%s lacks %s", peers, member)
			}
			if !slices.Contains(strings.Split(servers, ","), "https://"+host+":2379") {
				t.Errorf("--etcd-servers=%s lacks %s", servers, member)
			}
		}
		// The certificates name the five, whoever issues them.
		if got := flagValue(deployment(t, r, controllerName).Spec.Template.Spec.Containers[0].Args, "--etcd-members"); got != "5" {
			t.Errorf("the controller-manager's --etcd-members=%s, want 5", got)
		}
		cm := e.mustHelmTemplate(t, "etcd.cluster.replicas=5", "certificates.source=cert-manager")
		for _, name := range []string{etcdServerSecret, etcdPeerSecret} {
			cert := cm.find("Certificate", systemNamespace, name)
			if cert == nil {
				t.Fatalf("no Certificate %s", name)
			}
			names, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
			for i := range 5 {
				if want := fmt.Sprintf("training-etcd-%d.training-etcd.tensorstack-system.svc", i); !slices.Contains(names, want) {
					t.Errorf("Certificate %s lacks %s: %q", name, want, names)
				}
			}
		}
	})

	t.Run("external etcd with client TLS", func(t *testing.T) {
		r := e.mustHelmTemplate(t, "etcd.mode=external",
			"etcd.external.servers={https://etcd-0.example.com:2379,https://etcd-1.example.com:2379}",
			"etcd.external.tlsSecret=etcd-client")
		for _, kind := range []string{"StatefulSet", "Service", "PodDisruptionBudget", "NetworkPolicy", "ServiceAccount"} {
			if r.find(kind, systemNamespace, etcdName) != nil {
				t.Errorf("external etcd, but the chart still renders %s %s", kind, etcdName)
			}
		}
		api := deployment(t, r, apiserverName)
		c := api.Spec.Template.Spec.Containers[0]
		if got := flagValue(c.Args, "--etcd-servers"); got != "https://etcd-0.example.com:2379,https://etcd-1.example.com:2379" {
			t.Errorf("--etcd-servers=%s", got)
		}
		dir := ""
		for _, m := range c.VolumeMounts {
			if m.Name == "etcd-client" {
				dir = m.MountPath
			}
		}
		for flag, file := range map[string]string{"etcd-cafile": "ca.crt", "etcd-certfile": "tls.crt", "etcd-keyfile": "tls.key"} {
			if got := flagValue(c.Args, "--"+flag); dir == "" || got != dir+"/"+file {
				t.Errorf("--%s=%s, want %s in the mounted Secret (mounted at %q)", flag, got, file, dir)
			}
		}
		if !slices.ContainsFunc(api.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
			return v.Secret != nil && v.Secret.SecretName == "etcd-client"
		}) {
			t.Errorf("no volume of the Secret etcd-client")
		}
		for _, name := range etcdSecrets {
			if r.find("Secret", systemNamespace, name) != nil || r.find("Certificate", systemNamespace, name) != nil {
				t.Errorf("external etcd, but the chart still renders the certificate %s", name)
			}
		}
		if got := flagValue(deployment(t, r, controllerName).Spec.Template.Spec.Containers[0].Args, "--etcd-certs"); got != "" {
			t.Errorf("external etcd, but the controller-manager keeps --etcd-certs=%s", got)
		}
	})

	t.Run("external etcd in plain HTTP", func(t *testing.T) {
		r := e.mustHelmTemplate(t, "etcd.mode=external", "etcd.external.servers={http://etcd-0.example.com:2379}")
		api := deployment(t, r, apiserverName)
		for _, a := range api.Spec.Template.Spec.Containers[0].Args {
			if strings.HasPrefix(a, "--etcd-") && !strings.HasPrefix(a, "--etcd-servers=") {
				t.Errorf("no etcd.external.tlsSecret, but the apiserver has %s", a)
			}
		}
		if slices.ContainsFunc(api.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "etcd-client" }) {
			t.Errorf("no etcd.external.tlsSecret, but the apiserver mounts a client certificate")
		}
	})

	t.Run("images, replicas, resources and flags", func(t *testing.T) {
		digest := "sha256:" + strings.Repeat("ab", 32)
		r := e.mustHelmTemplate(t, "images.registry=registry.example.com/ml", "images.tag=v9.9.9",
			"images.apiserver.digest="+digest, "images.pullPolicy=Always", "images.pullSecrets[0].name=pull",
			"controllerManager.replicas=1", "controllerManager.gangScheduler=coscheduling",
			"controllerManager.resources.limits.memory=2Gi", "apiserver.extraArgs={--v=4}",
			"apiserver.nodeSelector.pool=system")
		api := deployment(t, r, apiserverName)
		ctrl := deployment(t, r, controllerName)
		if got := api.Spec.Template.Spec.Containers[0].Image; got != "registry.example.com/ml/training-apiserver:v9.9.9@"+digest {
			t.Errorf("apiserver image = %s", got)
		}
		if got := ctrl.Spec.Template.Spec.Containers[0].Image; got != "registry.example.com/ml/training-controller-manager:v9.9.9" {
			t.Errorf("controller image = %s", got)
		}
		for _, d := range []*appsv1.Deployment{api, ctrl} {
			spec := d.Spec.Template.Spec
			if spec.Containers[0].ImagePullPolicy != corev1.PullAlways || len(spec.ImagePullSecrets) != 1 || spec.ImagePullSecrets[0].Name != "pull" {
				t.Errorf("%s: pull policy %q, secrets %v", d.Name, spec.Containers[0].ImagePullPolicy, spec.ImagePullSecrets)
			}
		}
		if *ctrl.Spec.Replicas != 1 || r.find("PodDisruptionBudget", systemNamespace, controllerName) != nil {
			t.Errorf("one controller replica: want replicas 1 and no disruption budget (it would block drains)")
		}
		if got := flagValue(ctrl.Spec.Template.Spec.Containers[0].Args, "--gang-scheduler"); got != "coscheduling" {
			t.Errorf("--gang-scheduler=%s", got)
		}
		if got := ctrl.Spec.Template.Spec.Containers[0].Resources.Limits.Memory().String(); got != "2Gi" {
			t.Errorf("controller memory limit = %s", got)
		}
		args := api.Spec.Template.Spec.Containers[0].Args
		if args[len(args)-1] != "--v=4" {
			t.Errorf("apiserver.extraArgs not last: %v", args)
		}
		if api.Spec.Template.Spec.NodeSelector["pool"] != "system" {
			t.Errorf("apiserver nodeSelector = %v", api.Spec.Template.Spec.NodeSelector)
		}
	})

	t.Run("monitoring", func(t *testing.T) {
		r := e.mustHelmTemplate(t, "monitoring.serviceMonitors.enabled=true", "monitoring.prometheusRule.enabled=true",
			"monitoring.grafanaDashboard.enabled=true")
		if n, p, rules := len(r.ofKind("ServiceMonitor")), len(r.ofKind("PodMonitor")), len(r.ofKind("PrometheusRule")); n != 2 || p != 1 || rules != 1 {
			t.Errorf("want 2 ServiceMonitors, a PodMonitor and a PrometheusRule, got %d, %d and %d", n, p, rules)
		}
		dashboard := r.find("ConfigMap", systemNamespace, "tensorstack-training-dashboard")
		want, err := os.ReadFile(filepath.Join(e.repo, "artifacts/monitoring/grafana-dashboard.json"))
		if err != nil {
			t.Fatal(err)
		}
		if dashboard == nil {
			t.Fatal("no dashboard ConfigMap")
		}
		if got, _, _ := unstructured.NestedString(dashboard.Object, "data", "grafana-dashboard.json"); got != string(want) {
			t.Errorf("the dashboard ConfigMap holds %d bytes, not artifacts/monitoring/grafana-dashboard.json (%d)", len(got), len(want))
		}
		if dashboard.GetLabels()["grafana_dashboard"] != "1" {
			t.Errorf("the dashboard ConfigMap lacks the label grafana_dashboard=1 the Grafana sidecar looks for")
		}
		off := e.mustHelmTemplate(t)
		if n := len(off.ofKind("ServiceMonitor")) + len(off.ofKind("PodMonitor")) + len(off.ofKind("PrometheusRule")); n != 0 {
			t.Errorf("monitoring objects rendered by default: the cluster may not serve their CRDs")
		}
	})
}

// TestChartRefusesBadValues: values that cannot install a working system
// fail to render, and the message names the value.
func TestChartRefusesBadValues(t *testing.T) {
	e := staticEnv(t)
	for _, tc := range []struct {
		values []string
		want   string
	}{
		{[]string{"etcd.mode=sqlite"}, "/etcd/mode"},
		{[]string{"apiserver.replica=3"}, "'replica' not allowed"},
		{[]string{"controllerManager.replicas=0"}, "/controllerManager/replicas"},
		{[]string{"controllerManager.gangScheduler=volcano"}, "/controllerManager/gangScheduler"},
		{[]string{"certificates.source=vault"}, "/certificates/source"},
		{[]string{"images.etcd.digest=latest"}, "/images/etcd/digest"},
		{[]string{"etcd.cluster.replicas=4"}, "etcd.cluster.replicas: 4 must be odd"},
		{[]string{"etcd.mode=external"}, "etcd.external.servers: required"},
		{[]string{"etcd.mode=external", "etcd.external.servers={etcd:2379}"}, "/etcd/external/servers/0"},
		{[]string{"etcd.mode=embedded"}, "apiserver.replicas: 2 must be 1 with etcd.mode embedded"},
		{[]string{"certificates.source=secret"}, "certificates.secret.caBundle: required"},
		{[]string{"etcd.cluster.restore.snapshot=../etc/passwd"}, "/etcd/cluster/restore/snapshot"},
		{[]string{"etcd.mode=embedded", "apiserver.replicas=1", "etcd.cluster.restore.claimName=backup"},
			"etcd.cluster.restore.claimName: set with etcd.mode embedded"},
	} {
		_, err := e.helmTemplate(t, tc.values...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("helm template %v: error %v, want one naming %q", tc.values, err, tc.want)
		}
	}
	// The namespace is part of the installation's names.
	out, _, err := run(context.Background(), nil, filepath.Join(e.binDir, "helm"), "template", "training", e.path(chartDir), "--namespace", "default")
	if err == nil || !strings.Contains(err.Error(), "install into the namespace tensorstack-system") {
		t.Errorf("helm template into default: error %v, output %d bytes; want a refusal naming tensorstack-system", err, len(out))
	}
}

func deployment(t *testing.T, r *rendered, name string) *appsv1.Deployment {
	t.Helper()
	return mustGet[appsv1.Deployment](t, r, "Deployment", systemNamespace, name)
}
