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
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"tensorstack.dev/training/pkg/generated/clientset/versioned"
)

// Namespace, names and identities the manifests use.
const (
	systemNamespace      = "tensorstack-system"
	apiserverName        = "training-apiserver"
	controllerName       = "training-controller-manager"
	etcdName             = "training-etcd"
	servingSecretName    = "training-apiserver-tls"
	apiServiceName       = "v1beta1.batch.tensorstack.dev"
	controllerRoleName   = "tensorstack:training-controller-manager"
	leaderElectionRole   = "tensorstack:training-controller-manager:leader-election"
	apiserverRoleName    = "tensorstack:training-apiserver"
	controllerUser       = "system:serviceaccount:" + systemNamespace + ":" + controllerName
	apiserverUser        = "system:serviceaccount:" + systemNamespace + ":" + apiserverName
	serviceDNSName       = apiserverName + "." + systemNamespace + ".svc"
	certManagerGroup     = "cert-manager.io"
	injectCAAnnotation   = "cert-manager.io/inject-ca-from"
	aggregateToView      = "rbac.authorization.k8s.io/aggregate-to-view"
	aggregateToEdit      = "rbac.authorization.k8s.io/aggregate-to-edit"
	aggregateToAdmin     = "rbac.authorization.k8s.io/aggregate-to-admin"
	etcdServerSecret     = "training-etcd-server"
	etcdPeerSecret       = "training-etcd-peer"
	etcdClientSecret     = "training-etcd-client"
	deployDir            = "artifacts/deploy"
	defaultClusterDomain = "cluster.local"
)

// etcdSecrets are the Secrets of etcd's CA and certificates.
var etcdSecrets = []string{"training-etcd-ca", etcdServerSecret, etcdPeerSecret, etcdClientSecret}

// testEnv is what hack/verify-deploy.sh tells the tests.
type testEnv struct {
	repo       string // repository root
	kubectl    string // _output/bin/kubectl (v1.37.1)
	binDir     string // _output/bin
	kubeconfig string // admin kubeconfig of the local stack; empty without one
	certsDir   string // output of hack/deploy-certs.sh
	localPKI   string // the local stack's PKI directory
	auditLog   string // kube-apiserver's audit log; empty when not written
}

// staticEnv is for tests that need the binaries but no cluster.
func staticEnv(t *testing.T) *testEnv {
	t.Helper()
	e := &testEnv{
		repo:       os.Getenv("DEPLOY_REPO_ROOT"),
		kubectl:    os.Getenv("DEPLOY_KUBECTL"),
		binDir:     os.Getenv("DEPLOY_BIN_DIR"),
		kubeconfig: os.Getenv("DEPLOY_KUBECONFIG"),
		certsDir:   os.Getenv("DEPLOY_CERTS_DIR"),
		localPKI:   os.Getenv("DEPLOY_LOCAL_PKI_DIR"),
		auditLog:   os.Getenv("DEPLOY_AUDIT_LOG"),
	}
	if e.repo == "" || e.kubectl == "" || e.binDir == "" || e.certsDir == "" {
		t.Skip("run by hack/verify-deploy.sh (DEPLOY_REPO_ROOT, DEPLOY_KUBECTL, DEPLOY_BIN_DIR, DEPLOY_CERTS_DIR unset)")
	}
	return e
}

// clusterEnv is for tests that talk to the local stack.
func clusterEnv(t *testing.T) *testEnv {
	t.Helper()
	e := staticEnv(t)
	if e.kubeconfig == "" {
		t.Skip("needs the local stack of hack/verify-deploy.sh (DEPLOY_KUBECONFIG unset)")
	}
	return e
}

func (e *testEnv) path(rel string) string { return filepath.Join(e.repo, filepath.FromSlash(rel)) }

// run runs a command and returns its stdout, and an error that carries its
// stderr.
func run(ctx context.Context, stdin io.Reader, name string, args ...string) (stdout, stderr []byte, err error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &out, &errOut
	err = cmd.Run()
	if err != nil {
		err = fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, errOut.String())
	}
	return out.Bytes(), errOut.Bytes(), err
}

// kubectlCluster runs kubectl against the local stack as the admin.
func (e *testEnv) kubectlCluster(ctx context.Context, stdin io.Reader, args ...string) (stdout, stderr []byte, err error) {
	return run(ctx, stdin, e.kubectl, append([]string{"--kubeconfig=" + e.kubeconfig}, args...)...)
}

func (e *testEnv) restConfig(t *testing.T) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", e.kubeconfig)
	if err != nil {
		t.Fatalf("loading %s: %v", e.kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	return cfg
}

type clients struct {
	config  *rest.Config
	kube    kubernetes.Interface
	jobs    versioned.Interface
	dynamic dynamic.Interface
}

func (e *testEnv) clients(t *testing.T) *clients {
	t.Helper()
	cfg := e.restConfig(t)
	return &clients{
		config:  cfg,
		kube:    kubernetes.NewForConfigOrDie(cfg),
		jobs:    versioned.NewForConfigOrDie(cfg),
		dynamic: dynamic.NewForConfigOrDie(cfg),
	}
}

// overlay is one way of installing: a kustomization directory, or a
// composition of a kustomization and components, as a user's own overlay
// would write it.
type overlay struct {
	name       string
	dir        string   // relative to the repository root
	components []string // composed on top of dir, relative to the repository root
	// cluster says whether the etcd StatefulSet is part of it (else the
	// embedded etcd).
	etcdCluster bool
	// certs says where the serving certificate comes from: "", "generated"
	// or "cert-manager".
	certs string
}

// overlays are every supported installation: the three overlays and base,
// and the single-replica overlay with either certificate source.
var overlays = []overlay{
	{name: "base", dir: deployDir + "/base", etcdCluster: true},
	{name: "single", dir: deployDir + "/overlays/single"},
	{name: "cert-manager", dir: deployDir + "/overlays/cert-manager", etcdCluster: true, certs: "cert-manager"},
	{name: "generated-certs", dir: deployDir + "/overlays/generated-certs", etcdCluster: true, certs: "generated"},
	{name: "managed-certs", dir: deployDir + "/overlays/managed-certs", etcdCluster: true, certs: "managed"},
	{name: "single+cert-manager", dir: deployDir + "/overlays/single",
		components: []string{deployDir + "/components/cert-manager"}, certs: "cert-manager"},
	{name: "single+generated-certs", dir: deployDir + "/overlays/single",
		components: []string{"_output/deploy-certs"}, certs: "generated"},
}

func overlayByName(t *testing.T, name string) overlay {
	t.Helper()
	for _, o := range overlays {
		if o.name == name {
			return o
		}
	}
	t.Fatalf("no overlay %q", name)
	return overlay{}
}

// rendered is the output of kubectl kustomize for one overlay.
type rendered struct {
	yaml     []byte
	objects  []*unstructured.Unstructured
	duration time.Duration
}

var (
	renderMu    sync.Mutex
	renderCache = map[string]*rendered{}
)

// render runs kubectl kustomize on the overlay, once per test binary.
func (e *testEnv) render(t *testing.T, o overlay) *rendered {
	t.Helper()
	renderMu.Lock()
	defer renderMu.Unlock()
	if r, ok := renderCache[o.name]; ok {
		return r
	}
	dir := e.path(o.dir)
	if len(o.components) > 0 {
		// A user's overlay: elsewhere on disk, pointing at ours (kustomize
		// wants relative paths).
		dir = e.path("_output/deploy-test/overlays/" + o.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		rel := func(p string) string {
			r, err := filepath.Rel(dir, e.path(p))
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		var b strings.Builder
		fmt.Fprintf(&b, "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- %s\ncomponents:\n", rel(o.dir))
		for _, c := range o.components {
			fmt.Fprintf(&b, "- %s\n", rel(c))
		}
		if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	out, _, err := run(context.Background(), nil, e.kubectl, "kustomize", dir)
	if err != nil {
		t.Fatalf("rendering %s: %v", o.name, err)
	}
	r := &rendered{yaml: out, duration: time.Since(start)}
	r.objects, err = decodeObjects(out)
	if err != nil {
		t.Fatalf("decoding the output of kubectl kustomize %s: %v", o.name, err)
	}
	renderCache[o.name] = r
	return r
}

// decodeObjects splits a multi-document YAML stream into objects.
func decodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var raw runtime.RawExtension
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(bytes.TrimSpace(raw.Raw)) == 0 || string(raw.Raw) == "null" {
			continue
		}
		// Through the unstructured JSON decoder: numbers become int64.
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw.Raw); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
}

// find returns the object of that kind, namespace and name, or nil.
func (r *rendered) find(kind, namespace, name string) *unstructured.Unstructured {
	for _, o := range r.objects {
		if o.GetKind() == kind && o.GetNamespace() == namespace && o.GetName() == name {
			return o
		}
	}
	return nil
}

// ofKind returns every object of a kind.
func (r *rendered) ofKind(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range r.objects {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// mustGet converts the named object into a typed one, failing the test when
// it is missing.
func mustGet[T any](t *testing.T, r *rendered, kind, namespace, name string) *T {
	t.Helper()
	u := r.find(kind, namespace, name)
	if u == nil {
		t.Fatalf("no %s %s/%s in the rendered manifests", kind, namespace, name)
	}
	return convert[T](t, u)
}

func convert[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, out, true); err != nil {
		t.Fatalf("%s %s/%s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return out
}

// eventually polls cond every interval until it returns true or the timeout
// passes; it returns the last error cond reported.
func eventually(ctx context.Context, timeout, interval time.Duration, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("timed out after %s: %w", timeout, last)
			}
			return fmt.Errorf("timed out after %s", timeout)
		case <-time.After(interval):
		}
	}
}
