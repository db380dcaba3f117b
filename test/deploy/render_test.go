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
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"tensorstack.dev/training/pkg/controller/servingcert"
)

// TestRenderOverlays renders every installation with kubectl kustomize and
// checks what each must contain.
func TestRenderOverlays(t *testing.T) {
	e := staticEnv(t)
	for _, o := range overlays {
		t.Run(o.name, func(t *testing.T) {
			r := e.render(t, o)
			t.Logf("kubectl kustomize %s: %d objects, %d bytes in %s", o.name, len(r.objects), len(r.yaml), r.duration.Round(1e6))

			for _, kind := range []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
				"RoleBinding", "ConfigMap", "Service", "Deployment", "PodDisruptionBudget", "APIService"} {
				if len(r.ofKind(kind)) == 0 {
					t.Errorf("no %s", kind)
				}
			}
			// Every namespaced object lives in tensorstack-system, except the
			// RoleBinding that lets the apiserver read kube-system's
			// authentication ConfigMap.
			for _, obj := range r.objects {
				ns := obj.GetNamespace()
				if ns != "" && ns != systemNamespace && !(ns == "kube-system" && obj.GetKind() == "RoleBinding") {
					t.Errorf("%s %s/%s is outside %s", obj.GetKind(), ns, obj.GetName(), systemNamespace)
				}
				if obj.GetLabels()["app.kubernetes.io/part-of"] != "tensorstack-training" {
					t.Errorf("%s %s/%s lacks the label app.kubernetes.io/part-of=tensorstack-training", obj.GetKind(), ns, obj.GetName())
				}
			}

			api := mustGet[appsv1.Deployment](t, r, "Deployment", systemNamespace, apiserverName)
			ctrl := mustGet[appsv1.Deployment](t, r, "Deployment", systemNamespace, controllerName)
			checkApiserver(t, r, o, api)
			checkControllerManager(t, r, ctrl)
			sts := r.find("StatefulSet", systemNamespace, etcdName)
			if o.etcdCluster {
				if sts == nil {
					t.Fatalf("no etcd StatefulSet")
				}
				checkEtcd(t, r, convert[appsv1.StatefulSet](t, sts))
			} else if sts != nil {
				t.Errorf("the %s installation has an etcd StatefulSet", o.name)
			}
			checkAPIService(t, r, o)
		})
	}
}

func checkApiserver(t *testing.T, r *rendered, o overlay, d *appsv1.Deployment) {
	t.Helper()
	spec := &d.Spec.Template.Spec
	checkPodSpec(t, "training-apiserver", spec, true)
	if spec.ServiceAccountName != apiserverName {
		t.Errorf("training-apiserver runs as ServiceAccount %q", spec.ServiceAccountName)
	}
	c := &spec.Containers[0]
	args := c.Args
	for _, want := range []string{
		"--tls-min-version=VersionTLS12",
		"--authorization-always-allow-paths=/healthz,/readyz,/livez",
		"--audit-log-path=-",
		"--secure-port=8443",
	} {
		if !slices.Contains(args, want) {
			t.Errorf("training-apiserver args lack %s: %q", want, args)
		}
	}
	// Files named by flags come from volumes.
	for _, a := range args {
		name, value, ok := strings.Cut(a, "=")
		if !ok || !(strings.HasSuffix(name, "-file") || strings.HasSuffix(name, "file") || strings.HasSuffix(name, "-dir") ||
			strings.HasSuffix(name, "-path")) || value == "-" {
			continue
		}
		if !underMount(c, value) {
			t.Errorf("training-apiserver flag %s names a path no volume is mounted at", a)
		}
	}
	policy := flagValue(args, "--audit-policy-file")
	if policy == "" {
		t.Errorf("training-apiserver has no --audit-policy-file")
	} else if cm := volumeConfigMap(spec, c, policy); cm == "" {
		t.Errorf("the audit policy %s does not come from a ConfigMap", policy)
	} else {
		m := mustGet[corev1.ConfigMap](t, r, "ConfigMap", systemNamespace, cm)
		if !strings.Contains(m.Data[path.Base(policy)], "kind: Policy") {
			t.Errorf("ConfigMap %s has no audit Policy under %s", cm, path.Base(policy))
		}
	}
	if got := secretVolume(spec, c, flagValue(args, "--tls-cert-file")); got != servingSecretName {
		t.Errorf("--tls-cert-file comes from Secret %q, want %s", got, servingSecretName)
	}

	checkNoCAKeyMounted(t, "training-apiserver", spec)
	storage := args[0]
	if o.etcdCluster {
		checkReplicas(t, r, "training-apiserver", d, 2)
		if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || d.Spec.Strategy.RollingUpdate == nil ||
			d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue() != 0 {
			t.Errorf("training-apiserver: want a rolling update that keeps both replicas, got %+v", d.Spec.Strategy)
		}
		want := "--etcd-servers=" + strings.Join([]string{
			"https://training-etcd-0.training-etcd.tensorstack-system.svc:2379",
			"https://training-etcd-1.training-etcd.tensorstack-system.svc:2379",
			"https://training-etcd-2.training-etcd.tensorstack-system.svc:2379",
		}, ",")
		if storage != want {
			t.Errorf("training-apiserver's first argument is %q, want %q", storage, want)
		}
		// A client certificate of the etcd CA, and that CA, from the
		// client certificate's Secret.
		for _, flag := range []string{"--etcd-cafile", "--etcd-certfile", "--etcd-keyfile"} {
			if got := secretVolume(spec, c, flagValue(args, flag)); got != etcdClientSecret {
				t.Errorf("training-apiserver %s comes from Secret %q, want %s", flag, got, etcdClientSecret)
			}
		}
	} else {
		if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
			t.Errorf("training-apiserver with the embedded etcd must have exactly 1 replica")
		}
		if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			t.Errorf("training-apiserver with the embedded etcd: strategy %q, want Recreate", d.Spec.Strategy.Type)
		}
		dir, ok := strings.CutPrefix(storage, "--embedded-etcd-dir=")
		if !ok {
			t.Fatalf("training-apiserver's first argument is %q, want --embedded-etcd-dir", storage)
		}
		claim := volumeClaim(spec, c, dir)
		if claim == "" {
			t.Errorf("--embedded-etcd-dir %s is not on a PersistentVolumeClaim", dir)
		} else if r.find("PersistentVolumeClaim", systemNamespace, claim) == nil {
			t.Errorf("no PersistentVolumeClaim %s", claim)
		}
		if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--etcd-") }) {
			t.Errorf("training-apiserver with the embedded etcd also has flags of an etcd cluster: %q", args)
		}
		if slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == etcdClientSecret }) {
			t.Errorf("training-apiserver with the embedded etcd mounts the etcd client certificate")
		}
		if r.find("PodDisruptionBudget", systemNamespace, apiserverName) != nil {
			t.Errorf("a PodDisruptionBudget for a single replica blocks every drain")
		}
	}

	svc := mustGet[corev1.Service](t, r, "Service", systemNamespace, apiserverName)
	checkServiceTargets(t, svc, &d.Spec.Template)
}

func checkControllerManager(t *testing.T, r *rendered, d *appsv1.Deployment) {
	t.Helper()
	spec := &d.Spec.Template.Spec
	checkPodSpec(t, "training-controller-manager", spec, false)
	checkReplicas(t, r, "training-controller-manager", d, 2)
	if spec.ServiceAccountName != controllerName {
		t.Errorf("training-controller-manager runs as ServiceAccount %q", spec.ServiceAccountName)
	}
	if !slices.Contains(spec.Containers[0].Args, "--leader-elect=true") {
		t.Errorf("two controller-manager replicas without --leader-elect=true: %q", spec.Containers[0].Args)
	}
}

func checkEtcd(t *testing.T, r *rendered, s *appsv1.StatefulSet) {
	t.Helper()
	spec := &s.Spec.Template.Spec
	checkPodSpec(t, "training-etcd", spec, false)
	if s.Spec.Replicas == nil || *s.Spec.Replicas != 3 {
		t.Errorf("etcd: want 3 members")
	}
	if s.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("etcd: members must start in parallel to reach a quorum")
	}
	if len(s.Spec.VolumeClaimTemplates) != 1 {
		t.Fatalf("etcd: want one volume claim template")
	}
	data := s.Spec.VolumeClaimTemplates[0].Name
	c := &spec.Containers[0]
	if dir := flagValue(c.Args, "--data-dir"); volumeMountName(c, dir) != data {
		t.Errorf("etcd --data-dir %s is not on the claim template %s", dir, data)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("etcd mounts a ServiceAccount token it never uses")
	}
	svc := mustGet[corev1.Service](t, r, "Service", systemNamespace, s.Spec.ServiceName)
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses {
		t.Errorf("etcd Service %s: want headless and publishing not-ready addresses", svc.Name)
	}
	checkServiceTargets(t, svc, &s.Spec.Template)
	// --initial-cluster names exactly the members the StatefulSet creates.
	var members []string
	for i := range int(*s.Spec.Replicas) {
		name := fmt.Sprintf("%s-%d", s.Name, i)
		members = append(members, fmt.Sprintf("%s=https://%s.%s.%s.svc:2380", name, name, s.Spec.ServiceName, systemNamespace))
	}
	if got, want := flagValue(c.Args, "--initial-cluster"), strings.Join(members, ","); got != want {
		t.Errorf("etcd --initial-cluster=%s, want %s", got, want)
	}
	checkEtcdTLS(t, spec)
	pdb := mustGet[policyv1.PodDisruptionBudget](t, r, "PodDisruptionBudget", systemNamespace, etcdName)
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("etcd PodDisruptionBudget: want maxUnavailable 1 (keeps the quorum of 3)")
	}
	checkSelects(t, "PodDisruptionBudget "+etcdName, pdb.Spec.Selector, &s.Spec.Template)
	if r.find("NetworkPolicy", systemNamespace, etcdName) == nil {
		t.Errorf("no NetworkPolicy in front of etcd, the second wall behind its client certificates")
	}
}

// checkEtcdTLS: etcd as locked down as kube-apiserver's: TLS on the client
// and the peer port, a certificate of the etcd CA required on both, the
// peer port for the members' peer certificate only, the files from the
// certificates' Secrets without the CA's key. Only metrics and health are
// plain HTTP.
func checkEtcdTLS(t *testing.T, spec *corev1.PodSpec) {
	t.Helper()
	c := &spec.Containers[0]
	for _, flag := range []string{"--listen-client-urls", "--advertise-client-urls", "--listen-peer-urls", "--initial-advertise-peer-urls"} {
		for _, u := range strings.Split(flagValue(c.Args, flag), ",") {
			if !strings.HasPrefix(u, "https://") {
				t.Errorf("etcd %s=%s: not TLS", flag, u)
			}
		}
	}
	for _, member := range strings.Split(flagValue(c.Args, "--initial-cluster"), ",") {
		if _, u, _ := strings.Cut(member, "="); !strings.HasPrefix(u, "https://") {
			t.Errorf("etcd --initial-cluster member %s: not TLS", member)
		}
	}
	for _, want := range []string{"--client-cert-auth=true", "--peer-client-cert-auth=true", "--peer-cert-allowed-cn=training-etcd-peer"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("etcd args lack %s: %q", want, c.Args)
		}
	}
	for flag, secret := range map[string]string{
		"--cert-file": etcdServerSecret, "--key-file": etcdServerSecret, "--trusted-ca-file": etcdServerSecret,
		"--peer-cert-file": etcdPeerSecret, "--peer-key-file": etcdPeerSecret, "--peer-trusted-ca-file": etcdPeerSecret,
	} {
		if got := secretVolume(spec, c, flagValue(c.Args, flag)); got != secret {
			t.Errorf("etcd %s=%s comes from Secret %q, want %s", flag, flagValue(c.Args, flag), got, secret)
		}
	}
	if m := flagValue(c.Args, "--listen-metrics-urls"); !strings.HasPrefix(m, "http://") {
		t.Errorf("etcd --listen-metrics-urls=%s: the probes need plain HTTP", m)
	}
	checkNoCAKeyMounted(t, "training-etcd", spec)
}

// checkNoCAKeyMounted: every Secret a pod mounts is mounted by items, none
// of them a CA's key (the Secrets the controller-manager keeps hold it).
func checkNoCAKeyMounted(t *testing.T, name string, spec *corev1.PodSpec) {
	t.Helper()
	for _, v := range spec.Volumes {
		if v.Secret == nil {
			continue
		}
		if len(v.Secret.Items) == 0 {
			t.Errorf("%s mounts all of Secret %s; mount only the files it needs (items)", name, v.Secret.SecretName)
		}
		for _, item := range v.Secret.Items {
			if item.Key == "ca.key" || item.Key == "tls.key" && strings.HasSuffix(v.Secret.SecretName, "-ca") {
				t.Errorf("%s mounts the key of a CA (%s of Secret %s)", name, item.Key, v.Secret.SecretName)
			}
		}
	}
}

// checkReplicas: the replica count, a disruption budget that keeps one
// replica up, and spreading over nodes.
func checkReplicas(t *testing.T, r *rendered, name string, d *appsv1.Deployment, want int32) {
	t.Helper()
	if d.Spec.Replicas == nil || *d.Spec.Replicas != want {
		t.Errorf("%s: want %d replicas", name, want)
	}
	pdb := mustGet[policyv1.PodDisruptionBudget](t, r, "PodDisruptionBudget", systemNamespace, name)
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() < 1 {
		t.Errorf("%s PodDisruptionBudget: want minAvailable >= 1", name)
	}
	checkSelects(t, "PodDisruptionBudget "+name, pdb.Spec.Selector, &d.Spec.Template)
	spread := false
	for _, c := range d.Spec.Template.Spec.TopologySpreadConstraints {
		if c.TopologyKey == corev1.LabelHostname && c.WhenUnsatisfiable == corev1.DoNotSchedule && c.MaxSkew == 1 {
			checkSelects(t, name+" topology spread", c.LabelSelector, &d.Spec.Template)
			spread = true
		}
	}
	if !spread {
		t.Errorf("%s: replicas are not spread over nodes", name)
	}
}

// checkPodSpec: the hardening every pod of the installation must have.
func checkPodSpec(t *testing.T, name string, spec *corev1.PodSpec, https bool) {
	t.Helper()
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Errorf("%s: pod securityContext.runAsNonRoot is not true", name)
	}
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod seccompProfile is not RuntimeDefault", name)
	}
	if spec.ServiceAccountName == "" || spec.ServiceAccountName == "default" {
		t.Errorf("%s: runs as the default ServiceAccount", name)
	}
	if len(spec.InitContainers) > 0 {
		t.Errorf("%s: unexpected init containers", name)
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		where := name + "/" + c.Name
		sc := c.SecurityContext
		switch {
		case sc == nil:
			t.Errorf("%s: no securityContext", where)
			continue
		case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
			t.Errorf("%s: allowPrivilegeEscalation is not false", where)
		case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
			t.Errorf("%s: readOnlyRootFilesystem is not true", where)
		case sc.Privileged != nil && *sc.Privileged:
			t.Errorf("%s: privileged", where)
		case sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0:
			t.Errorf("%s: capabilities are not drop [ALL]", where)
		case sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
			t.Errorf("%s: container seccompProfile is not RuntimeDefault", where)
		}
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, lim := c.Resources.Requests[res], c.Resources.Limits[res]
			if req.IsZero() || lim.IsZero() {
				t.Errorf("%s: %s needs a request and a limit", where, res)
			} else if req.Cmp(lim) > 0 {
				t.Errorf("%s: %s request %s above its limit %s", where, res, req.String(), lim.String())
			}
		}
		if !regexp.MustCompile(`^[a-z0-9./-]+(:[A-Za-z0-9._-]+|@sha256:[0-9a-f]{64})$`).MatchString(c.Image) ||
			strings.HasSuffix(c.Image, ":latest") {
			t.Errorf("%s: image %q is not pinned to a tag or digest", where, c.Image)
		}
		probes := map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe}
		for kind, p := range probes {
			if p == nil || p.HTTPGet == nil {
				t.Errorf("%s: no HTTP %s probe", where, kind)
				continue
			}
			if !hasPort(c, p.HTTPGet.Port) {
				t.Errorf("%s: %s probe port %s is not a container port", where, kind, p.HTTPGet.Port.String())
			}
			if https != (p.HTTPGet.Scheme == corev1.URISchemeHTTPS) {
				t.Errorf("%s: %s probe scheme %q (HTTPS: %v)", where, kind, p.HTTPGet.Scheme, https)
			}
		}
		if c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet != nil && c.ReadinessProbe.HTTPGet.Path != "/readyz" {
			t.Errorf("%s: readiness probe on %s, want /readyz", where, c.ReadinessProbe.HTTPGet.Path)
		}
		if c.LivenessProbe != nil && c.LivenessProbe.HTTPGet != nil &&
			!slices.Contains([]string{"/livez", "/healthz"}, c.LivenessProbe.HTTPGet.Path) {
			t.Errorf("%s: liveness probe on %s, want /livez or /healthz", where, c.LivenessProbe.HTTPGet.Path)
		}
		if c.StartupProbe != nil {
			p := c.StartupProbe
			if budget := p.PeriodSeconds * p.FailureThreshold; budget < 30 {
				t.Errorf("%s: the startup probe gives up after %ds", where, budget)
			}
		}
	}
}

func checkAPIService(t *testing.T, r *rendered, o overlay) {
	t.Helper()
	u := r.find("APIService", "", apiServiceName)
	if u == nil {
		t.Fatalf("no APIService %s", apiServiceName)
	}
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	if skip, _, _ := unstructured.NestedBool(spec, "insecureSkipTLSVerify"); skip {
		t.Errorf("APIService skips TLS verification")
	}
	svcName, _, _ := unstructured.NestedString(spec, "service", "name")
	svcNS, _, _ := unstructured.NestedString(spec, "service", "namespace")
	port, _, _ := unstructured.NestedInt64(spec, "service", "port")
	svc := mustGet[corev1.Service](t, r, "Service", svcNS, svcName)
	if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return int64(p.Port) == port }) {
		t.Errorf("APIService names port %d of Service %s/%s, which has no such port", port, svcNS, svcName)
	}
	caBundle, _, _ := unstructured.NestedString(spec, "caBundle")
	switch o.certs {
	case "":
		if caBundle != "" {
			t.Errorf("%s has a caBundle but no certificate", o.name)
		}
	case "generated":
		checkGeneratedCerts(t, r, caBundle, o.etcdCluster)
	case "cert-manager":
		checkCertManager(t, r, u, o.etcdCluster)
	case "managed":
		checkManagedCerts(t, r, caBundle, o.etcdCluster)
	}
}

// checkManagedCerts: the Secret ships empty and handed to the
// controller-manager, which is told to keep it; the apiserver waits for its
// files; the caBundle is the controller-manager's to write.
func checkManagedCerts(t *testing.T, r *rendered, caBundle string, etcdCluster bool) {
	t.Helper()
	if caBundle != "" {
		t.Errorf("the APIService ships a caBundle; the controller-manager writes it")
	}
	secret := mustGet[corev1.Secret](t, r, "Secret", systemNamespace, servingSecretName)
	if len(secret.Data)+len(secret.StringData) != 0 || secret.Type != corev1.SecretTypeOpaque {
		t.Errorf("Secret %s ships type %q with %d keys, want an empty Opaque Secret", secret.Name, secret.Type, len(secret.Data)+len(secret.StringData))
	}
	if got := secret.Annotations[servingcert.ManagedByAnnotation]; got != servingcert.ManagedByValue {
		t.Errorf("Secret %s: annotation %s=%q, want %q", secret.Name, servingcert.ManagedByAnnotation, got, servingcert.ManagedByValue)
	}
	controller := mustGet[appsv1.Deployment](t, r, "Deployment", systemNamespace, "training-controller-manager")
	want := "$(POD_NAMESPACE)/" + servingSecretName
	if got := flagValue(controller.Spec.Template.Spec.Containers[0].Args, "--serving-cert-secret"); got != want {
		t.Errorf("the controller-manager keeps --serving-cert-secret=%q, want %q", got, want)
	}
	for _, name := range etcdSecrets {
		if !etcdCluster {
			break
		}
		s := mustGet[corev1.Secret](t, r, "Secret", systemNamespace, name)
		if len(s.Data)+len(s.StringData) != 0 || s.Type != corev1.SecretTypeOpaque ||
			s.Annotations[servingcert.ManagedByAnnotation] != servingcert.ManagedByValue {
			t.Errorf("Secret %s: want it empty, Opaque and handed to the controller-manager", name)
		}
	}
	if etcdCluster {
		if got, want := flagValue(controller.Spec.Template.Spec.Containers[0].Args, "--etcd-certs"), "$(POD_NAMESPACE)/"+etcdName; got != want {
			t.Errorf("the controller-manager keeps --etcd-certs=%q, want %q", got, want)
		}
		role := mustGet[rbacv1.Role](t, r, "Role", systemNamespace, "training-controller-manager:etcd-certs")
		for _, rule := range role.Rules {
			if slices.Contains(rule.Verbs, "update") && !sameSet(rule.ResourceNames, etcdSecrets) {
				t.Errorf("the controller-manager may update Secrets %q, want exactly %q", rule.ResourceNames, etcdSecrets)
			}
		}
	}
	apiserver := mustGet[appsv1.Deployment](t, r, "Deployment", systemNamespace, "training-apiserver")
	if flagValue(apiserver.Spec.Template.Spec.Containers[0].Args, "--tls-cert-wait") == "" {
		t.Errorf("the apiserver does not wait for the certificate (--tls-cert-wait): it would crash-loop until it is written")
	}
}

// checkGeneratedCerts: the caBundle verifies the serving certificate in the
// Secret for every name a client uses, and the key belongs to it.
func checkGeneratedCerts(t *testing.T, r *rendered, caBundle string, etcdCluster bool) {
	t.Helper()
	if caBundle == "" {
		t.Fatalf("the APIService has no caBundle")
	}
	caPEM, err := base64.StdEncoding.DecodeString(caBundle)
	if err != nil {
		t.Fatalf("caBundle: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatalf("caBundle holds no PEM certificate")
	}
	secret := mustGet[corev1.Secret](t, r, "Secret", systemNamespace, servingSecretName)
	if secret.Type != corev1.SecretTypeTLS {
		t.Errorf("Secret %s has type %q, want %s", secret.Name, secret.Type, corev1.SecretTypeTLS)
	}
	pair, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		t.Fatalf("Secret %s: tls.crt and tls.key: %v", secret.Name, err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	// The cluster domain is the installer's choice (--cluster-domain); the
	// other names are fixed.
	names := servingNames("")[:3]
	for _, n := range leaf.DNSNames {
		if strings.HasPrefix(n, serviceDNSName+".") {
			names = append(names, n)
		}
	}
	if len(names) != 4 {
		t.Errorf("the serving certificate has no name %s.<cluster domain>: %q", serviceDNSName, leaf.DNSNames)
	}
	for _, name := range names {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("the serving certificate does not verify for %s with the caBundle: %v", name, err)
		}
	}
	if block, _ := pem.Decode(secret.Data["ca.crt"]); block == nil || !strings.Contains(string(caPEM), string(pem.EncodeToMemory(block))) {
		t.Errorf("Secret %s: ca.crt is not the caBundle's CA", secret.Name)
	}
	if days := leaf.NotAfter.Sub(leaf.NotBefore).Hours() / 24; days > 398 {
		t.Errorf("the serving certificate is valid for %.0f days; clients refuse more than 398", days)
	}
	if etcdCluster {
		checkEtcdSecrets(t, r, roots)
	}
}

// checkEtcdSecrets: the etcd certificates of hack/deploy-certs.sh verify
// with their ca.crt, one CA for all and not the serving one, for the names
// and usages etcd needs.
func checkEtcdSecrets(t *testing.T, r *rendered, servingRoots *x509.CertPool) {
	t.Helper()
	members := []string{
		"training-etcd-0.training-etcd.tensorstack-system.svc",
		"training-etcd-1.training-etcd.tensorstack-system.svc",
		"training-etcd-2.training-etcd.tensorstack-system.svc",
	}
	for _, tc := range []struct {
		secret string
		usages []x509.ExtKeyUsage
		names  []string
	}{
		{etcdServerSecret, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, append(slices.Clone(members), "localhost", "127.0.0.1")},
		{etcdPeerSecret, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, members},
		{etcdClientSecret, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil},
	} {
		secret := mustGet[corev1.Secret](t, r, "Secret", systemNamespace, tc.secret)
		pair, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
		if err != nil {
			t.Errorf("Secret %s: %v", tc.secret, err)
			continue
		}
		leaf, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(secret.Data["ca.crt"]) {
			t.Errorf("Secret %s: no ca.crt", tc.secret)
		}
		for _, usage := range tc.usages {
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
				t.Errorf("Secret %s: does not verify for %v: %v", tc.secret, usage, err)
			}
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: servingRoots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err == nil {
			t.Errorf("Secret %s is signed by the serving CA: etcd's must be a CA of its own", tc.secret)
		}
		if len(tc.names) == 0 && slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageServerAuth) {
			t.Errorf("Secret %s: the client certificate can serve", tc.secret)
		}
		for _, name := range tc.names {
			if err := leaf.VerifyHostname(name); err != nil {
				t.Errorf("Secret %s: %v", tc.secret, err)
			}
		}
	}
}

// checkCertManager: the APIService's CA is injected from the Certificate that
// fills the apiserver's Secret, for the right names, through a CA issuer.
func checkCertManager(t *testing.T, r *rendered, apiService *unstructured.Unstructured, etcdCluster bool) {
	t.Helper()
	if ca, _, _ := unstructured.NestedString(apiService.Object, "spec", "caBundle"); ca != "" {
		t.Errorf("the APIService has a fixed caBundle; cainjector should own it")
	}
	from := apiService.GetAnnotations()[injectCAAnnotation]
	ns, name, ok := strings.Cut(from, "/")
	if !ok {
		t.Fatalf("APIService annotation %s=%q, want <namespace>/<certificate>", injectCAAnnotation, from)
	}
	cert := r.find("Certificate", ns, name)
	if cert == nil {
		t.Fatalf("%s names Certificate %s, which is not in the manifests", injectCAAnnotation, from)
	}
	if s, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName"); s != servingSecretName {
		t.Errorf("Certificate %s fills Secret %q, the apiserver reads %s", from, s, servingSecretName)
	}
	names, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	for _, want := range servingNames(defaultClusterDomain) {
		if !slices.Contains(names, want) {
			t.Errorf("Certificate %s lacks the name %s", from, want)
		}
	}
	issuer, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
	iss := r.find("Issuer", ns, issuer)
	if iss == nil {
		t.Fatalf("Certificate %s is issued by Issuer %q, which is not in the manifests", from, issuer)
	}
	caSecret, _, _ := unstructured.NestedString(iss.Object, "spec", "ca", "secretName")
	if caSecret == "" {
		t.Fatalf("Issuer %s is not a CA issuer: the caBundle would be the serving certificate itself", issuer)
	}
	found := false
	for _, c := range r.ofKind("Certificate") {
		s, _, _ := unstructured.NestedString(c.Object, "spec", "secretName")
		isCA, _, _ := unstructured.NestedBool(c.Object, "spec", "isCA")
		if s == caSecret && isCA {
			found = true
		}
	}
	if !found {
		t.Errorf("no CA Certificate fills the Secret %s of Issuer %s", caSecret, issuer)
	}
	if !etcdCluster {
		return
	}
	// etcd's certificates, under a CA of their own that keeps its key.
	var etcdIssuer string
	for _, name := range etcdSecrets[1:] {
		var cert *unstructured.Unstructured
		for _, c := range r.ofKind("Certificate") {
			if s, _, _ := unstructured.NestedString(c.Object, "spec", "secretName"); s == name {
				cert = c
			}
		}
		if cert == nil {
			t.Errorf("no Certificate fills the Secret %s", name)
			continue
		}
		iss, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
		if iss == issuer || (etcdIssuer != "" && iss != etcdIssuer) {
			t.Errorf("Certificate %s is issued by %s: want the etcd CA's Issuer, one for all, not the serving certificate's", cert.GetName(), iss)
		}
		etcdIssuer = iss
	}
	if iss := r.find("Issuer", ns, etcdIssuer); iss == nil {
		t.Errorf("no Issuer %s for etcd's certificates", etcdIssuer)
	} else {
		caSecret, _, _ := unstructured.NestedString(iss.Object, "spec", "ca", "secretName")
		ca := r.find("Certificate", ns, caSecret)
		if ca == nil {
			t.Fatalf("no Certificate %s for the etcd CA of Issuer %s", caSecret, etcdIssuer)
		}
		if policy, _, _ := unstructured.NestedString(ca.Object, "spec", "privateKey", "rotationPolicy"); policy != "Never" {
			t.Errorf("the etcd CA Certificate %s: rotationPolicy %q, want Never (etcd and the apiserver load the CA once)", caSecret, policy)
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func servingNames(clusterDomain string) []string {
	return []string{
		apiserverName,
		apiserverName + "." + systemNamespace,
		serviceDNSName,
		serviceDNSName + "." + clusterDomain,
	}
}

// TestStorageIsTheOnlyDifferenceOfSingle: the single overlay changes the
// storage flags and nothing else on the apiserver's command line.
func TestStorageIsTheOnlyDifferenceOfSingle(t *testing.T) {
	e := staticEnv(t)
	base := mustGet[appsv1.Deployment](t, e.render(t, overlayByName(t, "base")), "Deployment", systemNamespace, apiserverName)
	single := mustGet[appsv1.Deployment](t, e.render(t, overlayByName(t, "single")), "Deployment", systemNamespace, apiserverName)
	// base: --etcd-servers, --etcd-cafile, --etcd-certfile, --etcd-keyfile;
	// single: --embedded-etcd-dir.
	a, b := base.Spec.Template.Spec.Containers[0].Args, single.Spec.Template.Spec.Containers[0].Args
	if len(a) != len(b)+3 || !slices.Equal(a[4:], b[1:]) {
		t.Errorf("apiserver arguments differ beyond the storage flags:\nbase:   %q\nsingle: %q", a, b)
	}
}

// TestRBACRules: the shape of the roles, before the cluster tests show they
// work: no wildcards, users cannot write status, the aggregation labels.
func TestRBACRules(t *testing.T) {
	e := staticEnv(t)
	r := e.render(t, overlayByName(t, "base"))
	for _, u := range r.ofKind("ClusterRole") {
		role := convert[rbacv1.ClusterRole](t, u)
		for _, rule := range role.Rules {
			if slices.Contains(rule.Verbs, "*") || slices.Contains(rule.Resources, "*") || slices.Contains(rule.APIGroups, "*") {
				t.Errorf("ClusterRole %s has a wildcard rule %+v", role.Name, rule)
			}
			// Only the controller may touch Secrets, and only to create an
			// MPI job's key pair: never to read, list, watch or change one.
			if slices.Contains(rule.Resources, "secrets") &&
				(role.Name != controllerRoleName || !slices.Equal(rule.Verbs, []string{"create"}) || len(rule.Resources) != 1) {
				t.Errorf("ClusterRole %s grants %v on %v; only the controller may create Secrets, and nothing more",
					role.Name, rule.Verbs, rule.Resources)
			}
		}
	}
	view := mustGet[rbacv1.ClusterRole](t, r, "ClusterRole", "", "tensorstack:training-view")
	edit := mustGet[rbacv1.ClusterRole](t, r, "ClusterRole", "", "tensorstack:training-edit")
	for _, l := range []string{aggregateToView, aggregateToEdit, aggregateToAdmin} {
		if view.Labels[l] != "true" {
			t.Errorf("the view role lacks %s", l)
		}
	}
	for _, l := range []string{aggregateToEdit, aggregateToAdmin} {
		if edit.Labels[l] != "true" {
			t.Errorf("the edit role lacks %s", l)
		}
	}
	if edit.Labels[aggregateToView] != "" {
		t.Errorf("the edit role must not aggregate into view")
	}
	for _, rule := range view.Rules {
		for _, v := range rule.Verbs {
			if !slices.Contains([]string{"get", "list", "watch"}, v) {
				t.Errorf("the view role grants %s", v)
			}
		}
	}
	for _, rule := range edit.Rules {
		for _, res := range rule.Resources {
			if strings.HasSuffix(res, "/status") {
				t.Errorf("the edit role grants %v on %s: status is the controller's", rule.Verbs, res)
			}
		}
	}
	// A team writes its namespace's runtimes; the cluster's are an
	// administrator's to write, and everyone's to read.
	for _, rule := range edit.Rules {
		if slices.Contains(rule.Resources, "clustertrainingruntimes") {
			t.Errorf("the edit role grants %v on clustertrainingruntimes", rule.Verbs)
		}
	}
	runtimeReader := mustGet[rbacv1.ClusterRole](t, r, "ClusterRole", "", "tensorstack:training-runtime-reader")
	wantReader := []rbacv1.PolicyRule{{APIGroups: []string{"batch.tensorstack.dev"}, Resources: []string{"clustertrainingruntimes"}, Verbs: []string{"get", "list", "watch"}}}
	if !reflect.DeepEqual(runtimeReader.Rules, wantReader) {
		t.Errorf("the runtime reader role grants %+v, want %+v", runtimeReader.Rules, wantReader)
	}
	readers := mustGet[rbacv1.ClusterRoleBinding](t, r, "ClusterRoleBinding", "", "tensorstack:training-runtime-reader")
	wantReaders := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:authenticated"}}
	if readers.RoleRef.Name != runtimeReader.Name || !slices.Equal(readers.Subjects, wantReaders) {
		t.Errorf("the runtime reader binding binds %s to %+v, want %s to %+v", readers.RoleRef.Name, readers.Subjects, runtimeReader.Name, wantReaders)
	}
	// Every service account may send progress and checkpoint reports, and
	// that is all the binding grants them; the server takes a report only
	// from the job's own pods.
	reporter := mustGet[rbacv1.ClusterRole](t, r, "ClusterRole", "", "tensorstack:training-progress-reporter")
	for _, rule := range reporter.Rules {
		for _, res := range rule.Resources {
			if !(strings.HasSuffix(res, "/progress") || strings.HasSuffix(res, "/checkpoint")) || !slices.Equal(rule.Verbs, []string{"create"}) {
				t.Errorf("the progress reporter role grants %v on %s, want create on progress and checkpoint subresources only", rule.Verbs, res)
			}
		}
	}
	reporters := mustGet[rbacv1.ClusterRoleBinding](t, r, "ClusterRoleBinding", "", "tensorstack:training-progress-reporter")
	wantReporters := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:serviceaccounts"}}
	if reporters.RoleRef.Name != reporter.Name || !slices.Equal(reporters.Subjects, wantReporters) {
		t.Errorf("the progress reporter binding binds %s to %+v, want %s to %+v", reporters.RoleRef.Name, reporters.Subjects, reporter.Name, wantReporters)
	}
	// The bindings name the ServiceAccounts the Deployments run as.
	checkBinding := func(kind, ns, name, role, sa string) {
		t.Helper()
		b := r.find(kind, ns, name)
		if b == nil {
			t.Errorf("no %s %s/%s", kind, ns, name)
			return
		}
		var ref rbacv1.RoleRef
		var subjects []rbacv1.Subject
		if kind == "ClusterRoleBinding" {
			crb := convert[rbacv1.ClusterRoleBinding](t, b)
			ref, subjects = crb.RoleRef, crb.Subjects
		} else {
			rb := convert[rbacv1.RoleBinding](t, b)
			ref, subjects = rb.RoleRef, rb.Subjects
		}
		want := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: systemNamespace}
		if ref.Name != role || len(subjects) != 1 || subjects[0] != want {
			t.Errorf("%s %s binds %s to %+v, want %s to %+v", kind, name, ref.Name, subjects, role, want)
		}
	}
	checkBinding("ClusterRoleBinding", "", "training-apiserver:system:auth-delegator", "system:auth-delegator", apiserverName)
	checkBinding("RoleBinding", "kube-system", "training-apiserver:extension-apiserver-authentication-reader",
		"extension-apiserver-authentication-reader", apiserverName)
	checkBinding("ClusterRoleBinding", "", apiserverRoleName, apiserverRoleName, apiserverName)
	checkBinding("ClusterRoleBinding", "", controllerRoleName, controllerRoleName, controllerName)
	checkBinding("RoleBinding", systemNamespace, leaderElectionRole, leaderElectionRole, controllerName)
}

// TestFlagsKnownToBinaries: every flag the manifests pass is one the binary
// of that container accepts (training-apiserver, training-controller-manager
// and etcd, at the versions built here).
func TestFlagsKnownToBinaries(t *testing.T) {
	e := staticEnv(t)
	known := map[string]map[string]bool{}
	for _, b := range []struct{ container, binary string }{
		{"apiserver", "training-apiserver"},
		{"controller-manager", "training-controller-manager"},
		{"etcd", "etcd"},
	} {
		// --help exits 0 for the first two; etcd prints to stdout or stderr
		// depending on the version.
		out, errOut, _ := run(context.Background(), nil, e.path("_output/bin/"+b.binary), "--help")
		flags := map[string]bool{}
		for _, m := range regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9][a-z0-9-]*)`).FindAllStringSubmatch(string(out)+string(errOut), -1) {
			flags[m[1]] = true
		}
		if len(flags) < 5 {
			t.Fatalf("%s --help listed %d flags; cannot check", b.binary, len(flags))
		}
		known[b.container] = flags
	}
	for _, o := range overlays {
		r := e.render(t, o)
		for _, u := range append(r.ofKind("Deployment"), r.ofKind("StatefulSet")...) {
			var spec corev1.PodTemplateSpec
			if u.GetKind() == "Deployment" {
				spec = convert[appsv1.Deployment](t, u).Spec.Template
			} else {
				spec = convert[appsv1.StatefulSet](t, u).Spec.Template
			}
			for _, c := range spec.Spec.Containers {
				flags := known[c.Name]
				if flags == nil {
					t.Errorf("%s: container %s of %s: which binary?", o.name, c.Name, u.GetName())
					continue
				}
				for _, a := range append(append([]string{}, c.Command[min(1, len(c.Command)):]...), c.Args...) {
					name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
					if !strings.HasPrefix(a, "--") || !flags[name] {
						t.Errorf("%s: %s/%s: the binary does not know the argument %q", o.name, u.GetName(), c.Name, a)
					}
				}
			}
		}
	}
}

// Helpers on pod specs.

func flagValue(args []string, flag string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

func underMount(c *corev1.Container, p string) bool { return volumeMountName(c, p) != "" }

// volumeMountName is the volume a path is on, or "".
func volumeMountName(c *corev1.Container, p string) string {
	best, name := -1, ""
	for _, m := range c.VolumeMounts {
		if (p == m.MountPath || strings.HasPrefix(p, strings.TrimSuffix(m.MountPath, "/")+"/")) && len(m.MountPath) > best {
			best, name = len(m.MountPath), m.Name
		}
	}
	return name
}

func volume(spec *corev1.PodSpec, c *corev1.Container, p string) *corev1.Volume {
	name := volumeMountName(c, p)
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == name {
			return &spec.Volumes[i]
		}
	}
	return nil
}

func secretVolume(spec *corev1.PodSpec, c *corev1.Container, p string) string {
	if v := volume(spec, c, p); v != nil && v.Secret != nil {
		return v.Secret.SecretName
	}
	return ""
}

func volumeConfigMap(spec *corev1.PodSpec, c *corev1.Container, p string) string {
	if v := volume(spec, c, p); v != nil && v.ConfigMap != nil {
		return v.ConfigMap.Name
	}
	return ""
}

func volumeClaim(spec *corev1.PodSpec, c *corev1.Container, p string) string {
	if v := volume(spec, c, p); v != nil && v.PersistentVolumeClaim != nil {
		return v.PersistentVolumeClaim.ClaimName
	}
	return ""
}

func hasPort(c *corev1.Container, port intstr.IntOrString) bool {
	for _, p := range c.Ports {
		if (port.Type == intstr.String && p.Name == port.StrVal) || (port.Type == intstr.Int && p.ContainerPort == port.IntVal) {
			return true
		}
	}
	return false
}

// checkSelects: a selector matches the pods of a template.
func checkSelects(t *testing.T, what string, sel *metav1.LabelSelector, tmpl *corev1.PodTemplateSpec) {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil || s.Empty() || !s.Matches(labels.Set(tmpl.Labels)) {
		t.Errorf("%s: selector %v does not select the pods (%v)", what, sel, tmpl.Labels)
	}
}

// checkServiceTargets: a Service selects the pods and its target ports exist.
func checkServiceTargets(t *testing.T, svc *corev1.Service, tmpl *corev1.PodTemplateSpec) {
	t.Helper()
	checkSelects(t, "Service "+svc.Name, metav1.SetAsLabelSelector(svc.Spec.Selector), tmpl)
	for _, p := range svc.Spec.Ports {
		if !hasPort(&tmpl.Spec.Containers[0], p.TargetPort) {
			t.Errorf("Service %s: target port %s is not a container port", svc.Name, p.TargetPort.String())
		}
	}
}
