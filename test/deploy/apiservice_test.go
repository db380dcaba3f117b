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
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/test/deploy/rbaccheck"
)

var apiServiceResource = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// TestGeneratedCertificateAccepted runs training-apiserver the way the
// Deployment of the single+generated-certs installation runs it (its
// arguments, its Secret, its audit policy ConfigMap, as its ServiceAccount
// with the RBAC of artifacts/deploy), on a loopback port, and points the
// APIService at it:
//   - with the wrong caBundle (the local stack's own CA) kube-apiserver
//     refuses the server: the check is real;
//   - with the caBundle of the rendered APIService it becomes Available and
//     requests reach this server (its audit log shows them).
//
// kube-apiserver reaches the server through the ExternalName Service
// tensorstack-system/training-apiserver -> localhost that hack/local-up.sh
// registers, and checks the certificate for the name
// training-apiserver.tensorstack-system.svc: a SAN hack/deploy-certs.sh puts in
// for the cluster anyway. The APIService and Service are restored afterwards.
func TestGeneratedCertificateAccepted(t *testing.T) {
	e := clusterEnv(t)
	ctx := context.Background()
	c := e.clients(t)
	r := e.render(t, overlayByName(t, "single+generated-certs"))

	// The apiserver's ServiceAccount and RBAC, for real.
	base := e.render(t, overlayByName(t, "base"))
	var rbac []any
	for _, u := range base.objects {
		switch {
		case u.GetKind() == "ServiceAccount" && u.GetName() == apiserverName,
			strings.HasPrefix(u.GetName(), "training-apiserver:"),
			u.GetName() == apiserverRoleName:
			rbac = append(rbac, u.Object)
		}
	}
	if len(rbac) != 5 {
		t.Fatalf("want the apiserver's ServiceAccount, 2 ClusterRoleBindings, a RoleBinding and a ClusterRole; found %d objects", len(rbac))
	}
	if _, _, err := e.kubectlCluster(ctx, bytes.NewReader(mustJSON(t, map[string]any{"apiVersion": "v1", "kind": "List", "items": rbac})), "apply", "-f", "-"); err != nil {
		t.Fatalf("applying the apiserver's RBAC: %v", err)
	}
	kubeconfig := e.serviceAccountKubeconfig(t, c, apiserverName)

	srv := startApiserverFromManifest(t, e, r, kubeconfig)

	// The certificate as a client of the Service sees it.
	secret := mustGet[corev1.Secret](t, r, "Secret", systemNamespace, servingSecretName)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(secret.Data["ca.crt"])
	httpc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: roots, ServerName: serviceDNSName, MinVersion: tls.VersionTLS12}}}
	get := func(path string) (int, error) {
		resp, err := httpc.Get(srv.url + path)
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}
	if err := eventually(ctx, 90*time.Second, 500*time.Millisecond, func(context.Context) (bool, error) {
		code, err := get("/readyz")
		return code == http.StatusOK, err
	}); err != nil {
		t.Fatalf("the apiserver did not become ready: %v\n%s", err, srv.logTail())
	}
	// Probes need no credentials; the API does.
	for _, p := range []string{"/livez", "/healthz"} {
		if code, err := get(p); err != nil || code != http.StatusOK {
			t.Errorf("GET %s without credentials: %d %v", p, code, err)
		}
	}
	if code, err := get("/apis/batch.tensorstack.dev/v1beta1/tensorflowtrainingjobs"); err != nil ||
		(code != http.StatusUnauthorized && code != http.StatusForbidden) {
		t.Errorf("listing jobs without credentials: %d %v, want 401 or 403", code, err)
	}
	// TLS 1.1 is refused (--tls-min-version=VersionTLS12).
	old := &tls.Config{RootCAs: roots, ServerName: serviceDNSName, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}
	if conn, err := tls.Dial("tcp", srv.addr, old); err == nil {
		_ = conn.Close()
		t.Errorf("a TLS 1.1 handshake succeeded")
	}

	// Point the APIService at this server, restoring everything afterwards.
	apiSvc := c.dynamic.Resource(apiServiceResource)
	orig, err := apiSvc.Get(ctx, apiServiceName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the local stack has no APIService %s: %v", apiServiceName, err)
	}
	origPort, _, _ := unstructured.NestedInt64(orig.Object, "spec", "service", "port")
	origCA, _, _ := unstructured.NestedString(orig.Object, "spec", "caBundle")
	svcClient := c.kube.CoreV1().Services(systemNamespace)
	origSvc, err := svcClient.Get(ctx, apiserverName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if origSvc.Spec.Type != corev1.ServiceTypeExternalName {
		t.Fatalf("Service %s/%s is %s; this test needs the ExternalName Service of hack/local-up.sh", systemNamespace, apiserverName, origSvc.Spec.Type)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		patchAPIService(t, c, origPort, origCA)
		if cur, err := svcClient.Get(ctx, apiserverName, metav1.GetOptions{}); err == nil {
			cur.Spec.Ports = origSvc.Spec.Ports
			if _, err := svcClient.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
				t.Errorf("restoring Service %s: %v", apiserverName, err)
			}
		}
		if _, err := waitAvailable(ctx, c, "True", ""); err != nil {
			t.Errorf("the APIService did not come back on the local stack's server: %v", err)
		}
	})
	svc := origSvc.DeepCopy()
	svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "deploy-test", Port: int32(srv.port), Protocol: corev1.ProtocolTCP})
	if _, err := svcClient.Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("adding port %d to Service %s: %v", srv.port, apiserverName, err)
	}

	// The wrong CA first: kube-apiserver must refuse the server.
	wrongCA, err := os.ReadFile(filepath.Join(e.localPKI, "training-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	patchAPIService(t, c, int64(srv.port), base64.StdEncoding.EncodeToString(wrongCA))
	if msg, err := waitAvailable(ctx, c, "False", "x509"); err != nil {
		t.Fatalf("with a caBundle of another CA: %v", err)
	} else {
		t.Logf("with a caBundle of another CA: Available=False: %s", msg)
	}

	// The caBundle of the installation.
	rendered := r.find("APIService", "", apiServiceName)
	caBundle, _, _ := unstructured.NestedString(rendered.Object, "spec", "caBundle")
	start := time.Now()
	patchAPIService(t, c, int64(srv.port), caBundle)
	if _, err := waitAvailable(ctx, c, "True", ""); err != nil {
		t.Fatalf("with the generated caBundle: %v\n%s", err, srv.logTail())
	}
	t.Logf("APIService Available with the generated caBundle after %s", time.Since(start).Round(time.Millisecond))

	// A request through kube-apiserver lands on this server.
	marker := "deploy-cert-" + rand.String(6)
	if _, err := c.jobs.BatchV1beta1().TensorFlowTrainingJobs(marker).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("listing jobs through kube-apiserver: %v", err)
	}
	if err := eventually(ctx, 10*time.Second, 200*time.Millisecond, func(context.Context) (bool, error) {
		audit, err := os.ReadFile(srv.stdout)
		return bytes.Contains(audit, []byte(`"namespace":"`+marker+`"`)), err
	}); err != nil {
		t.Errorf("the list did not show in the audit log of the server under test: %v", err)
	}

	// Its ServiceAccount had every permission it asked for.
	if e.auditLog != "" {
		reqs, err := rbaccheck.ReadAuditLog(e.auditLog)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range rbaccheck.Forbidden(reqs, apiserverUser) {
			t.Errorf("training-apiserver was refused: %s", f)
		}
		role := mustGet[rbacv1.ClusterRole](t, base, "ClusterRole", "", apiserverRoleName)
		var used []string
		for p, n := range rbaccheck.Used(rbaccheck.Expand(role.Rules, ""), reqs, apiserverUser) {
			if n > 0 {
				used = append(used, p.String())
			}
		}
		slices.Sort(used)
		t.Logf("training-apiserver's own ClusterRole, used so far: %s", strings.Join(used, "; "))
	}
}

// apiserverProcess is a training-apiserver started by a test.
type apiserverProcess struct {
	addr, url      string
	port           int
	stdout, stderr string
}

func (p *apiserverProcess) logTail() string {
	b, _ := os.ReadFile(p.stderr)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-30):], "\n")
}

// startApiserverFromManifest starts _output/bin/training-apiserver with the
// arguments of the rendered Deployment. Every volume becomes a directory:
// Secrets and ConfigMaps with their rendered data, emptyDirs and claims
// empty. Only the port (a free one), the bind address (loopback) and the
// kubeconfigs (in a cluster: the in-cluster configuration) are added.
func startApiserverFromManifest(t *testing.T, e *testEnv, r *rendered, kubeconfig string) *apiserverProcess {
	t.Helper()
	d := mustGet[appsv1.Deployment](t, r, "Deployment", systemNamespace, apiserverName)
	spec := &d.Spec.Template.Spec
	ctr := &spec.Containers[0]
	root, err := os.MkdirTemp("", "deploy-apiserver-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })

	mounts := map[string]string{}
	for _, m := range ctr.VolumeMounts {
		dir := filepath.Join(root, m.Name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		mounts[m.MountPath] = dir
		i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if i < 0 {
			t.Fatalf("volume mount %s has no volume", m.Name)
		}
		v := spec.Volumes[i]
		files := map[string][]byte{}
		switch {
		case v.Secret != nil:
			for k, b := range mustGet[corev1.Secret](t, r, "Secret", systemNamespace, v.Secret.SecretName).Data {
				files[k] = b
			}
		case v.ConfigMap != nil:
			for k, s := range mustGet[corev1.ConfigMap](t, r, "ConfigMap", systemNamespace, v.ConfigMap.Name).Data {
				files[k] = []byte(s)
			}
		case v.EmptyDir != nil, v.PersistentVolumeClaim != nil:
		default:
			t.Fatalf("volume %s: a kind this test cannot provide", v.Name)
		}
		for k, b := range files {
			if err := os.WriteFile(filepath.Join(dir, k), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}

	port := freePort(t)
	var args []string
	for _, a := range ctr.Args {
		name, value, _ := strings.Cut(a, "=")
		if name == "--secure-port" {
			a = "--secure-port=" + strconv.Itoa(port)
		}
		for mountPath, dir := range mounts {
			if value == mountPath || strings.HasPrefix(value, mountPath+"/") {
				a = name + "=" + dir + strings.TrimPrefix(value, mountPath)
			}
		}
		args = append(args, a)
	}
	args = append(args, "--bind-address=127.0.0.1", "--kubeconfig="+kubeconfig,
		"--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig)

	p := &apiserverProcess{
		addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), port: port,
		stdout: filepath.Join(root, "stdout.log"), stderr: filepath.Join(root, "stderr.log"),
	}
	p.url = "https://" + p.addr
	stdout, err := os.Create(p.stdout)
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.Create(p.stderr)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(e.binDir, "training-apiserver"), args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	t.Logf("starting training-apiserver %s", strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		_ = stdout.Close()
		_ = stderr.Close()
	})
	return p
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// serviceAccountKubeconfig writes a kubeconfig with a token of a
// ServiceAccount of tensorstack-system, valid for an hour.
func (e *testEnv) serviceAccountKubeconfig(t *testing.T, c *clients, sa string) string {
	t.Helper()
	ctx := context.Background()
	var token *authenticationv1.TokenRequest
	if err := eventually(ctx, 30*time.Second, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		var err error
		token, err = c.kube.CoreV1().ServiceAccounts(systemNamespace).CreateToken(ctx, sa,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}},
			metav1.CreateOptions{})
		return err == nil, err
	}); err != nil {
		t.Fatalf("a token for %s: %v", sa, err)
	}
	cfg := e.restConfig(t)
	if len(cfg.CAData) == 0 {
		ca, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			t.Fatal(err)
		}
		cfg.CAData = ca
	}
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %s
  user:
    token: %s
contexts:
- name: local
  context: {cluster: local, user: %s}
current-context: local
`, cfg.Host, base64.StdEncoding.EncodeToString(cfg.CAData), sa, token.Status.Token, sa)
	path := filepath.Join(t.TempDir(), sa+".kubeconfig")
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func patchAPIService(t *testing.T, c *clients, port int64, caBundle string) {
	t.Helper()
	patch := mustJSON(t, map[string]any{"spec": map[string]any{
		"caBundle": caBundle,
		"service":  map[string]any{"namespace": systemNamespace, "name": apiserverName, "port": port},
	}})
	if _, err := c.dynamic.Resource(apiServiceResource).Patch(context.Background(), apiServiceName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching APIService %s: %v", apiServiceName, err)
	}
}

// waitAvailable waits until the APIService's Available condition has the
// status, and, when message is set, a message that contains it.
func waitAvailable(ctx context.Context, c *clients, status, message string) (string, error) {
	var last, lastMsg string
	err := eventually(ctx, 90*time.Second, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		u, err := c.dynamic.Resource(apiServiceResource).Get(ctx, apiServiceName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, cond := range conds {
			m, _ := cond.(map[string]any)
			if m["type"] != "Available" {
				continue
			}
			last = fmt.Sprintf("%v: %v", m["status"], m["message"])
			msg, _ := m["message"].(string)
			lastMsg = msg
			return m["status"] == status && strings.Contains(msg, message), nil
		}
		return false, nil
	})
	if err != nil {
		return "", fmt.Errorf("APIService %s not Available=%s (%q): last %s: %w", apiServiceName, status, message, last, err)
	}
	return lastMsg, nil
}
