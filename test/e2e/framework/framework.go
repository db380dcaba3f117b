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

// Package framework is the small toolkit of the end-to-end tests: clients of
// the local control plane started by hack/test-e2e.sh, a kubectl runner, a
// fresh namespace per test, job builders, and waiters that explain what they
// saw when they give up.
package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	clientset "tensorstack.dev/training/pkg/generated/clientset/versioned"
)

// Timeouts of the waiters. Pods of the simulated nodes start within a second,
// so these are generous on purpose: a slow, busy 2-core machine must not
// turn into flaky tests.
const (
	// Poll is how often waiters look again.
	Poll = 250 * time.Millisecond
	// Timeout bounds one wait for the controller or the apiserver.
	Timeout = 2 * time.Minute
	// GCTimeout bounds waits for kube-controller-manager's garbage collector
	// and namespace controller.
	GCTimeout = 3 * time.Minute
	// KubectlTimeout bounds one kubectl invocation.
	KubectlTimeout = 2 * time.Minute
)

// Env is what hack/test-e2e.sh tells the tests about the control plane.
type Env struct {
	Kubeconfig string // admin kubeconfig (system:masters)
	Kubectl    string // the pinned kubectl binary
	RepoRoot   string // the repository root
	LocalDir   string // _output/local: state.json, logs/, pki/
	Restart    string // hack/local-restart.sh
	FakeNodes  int    // number of kwok nodes
	NodeGPUs   int    // nvidia.com/gpu per node
	// RealNode says the stack runs real nodes (internal/localcluster), where
	// pods whose images are all the stack's own run real containers;
	// RealNodes says how many.
	RealNode  bool
	RealNodes int
}

// IsRealNode says whether a node is one of the stack's real nodes: real-node,
// real-node2, ... (internal/localcluster).
func IsRealNode(name string) bool { return strings.HasPrefix(name, "real-node") }

// Clients reach the control plane as the admin.
type Clients struct {
	Config   *rest.Config
	Kube     kubernetes.Interface
	Training clientset.Interface
}

var (
	env     *Env
	clients *Clients
)

// Enabled says whether the environment of hack/test-e2e.sh is present.
func Enabled() bool { return os.Getenv("E2E_LOCAL_DIR") != "" }

// skipReason, when set, is why every test of the suite is skipped.
var skipReason string

// SkipAll has every test that calls New skip with the reason: TestMain's
// answer to a missing stack, so that go test reports skips, not passes.
func SkipAll(reason string) { skipReason = reason }

// Setup reads the environment and builds the clients; TestMain calls it once.
func Setup() error {
	e := &Env{
		Kubeconfig: os.Getenv("KUBECONFIG"),
		Kubectl:    os.Getenv("KUBECTL"),
		RepoRoot:   os.Getenv("E2E_REPO_ROOT"),
		LocalDir:   os.Getenv("E2E_LOCAL_DIR"),
		Restart:    os.Getenv("E2E_RESTART"),
		RealNode:   os.Getenv("E2E_REAL_NODE") == "1",
	}
	var missing []string
	for name, v := range map[string]string{
		"KUBECONFIG": e.Kubeconfig, "KUBECTL": e.Kubectl, "E2E_REPO_ROOT": e.RepoRoot,
		"E2E_LOCAL_DIR": e.LocalDir, "E2E_RESTART": e.Restart,
	} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("environment variables %s are not set; run the suite through make test-e2e (hack/test-e2e.sh)",
			strings.Join(missing, ", "))
	}
	var err error
	if e.FakeNodes, err = intEnv("E2E_FAKE_NODES", 10); err != nil {
		return err
	}
	if e.NodeGPUs, err = intEnv("E2E_NODE_GPUS", 64); err != nil {
		return err
	}
	realNodes := 0
	if e.RealNode {
		realNodes = 1
	}
	if e.RealNodes, err = intEnv("E2E_REAL_NODES", realNodes); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", e.Kubeconfig)
	if err != nil {
		return fmt.Errorf("loading %s: %w", e.Kubeconfig, err)
	}
	// Many tests poll at once; the client-side limiter must not be the
	// bottleneck.
	cfg.QPS, cfg.Burst = 200, 400
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	training, err := clientset.NewForConfig(cfg)
	if err != nil {
		return err
	}
	env = e
	clients = &Clients{Config: cfg, Kube: kube, Training: training}
	return nil
}

func intEnv(name string, def int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: %w", name, v, err)
	}
	return n, nil
}

// Environment returns the environment read by Setup.
func Environment() *Env { return env }

// AdminClients returns the admin clients built by Setup.
func AdminClients() *Clients { return clients }

// Framework is one test's view of the cluster: the admin clients and a
// namespace of its own that is deleted when the test ends.
type Framework struct {
	*Clients
	Env       *Env
	T         *testing.T
	Namespace string
	// tempDir is kubectl's TMPDIR: kubectl edit keeps the changes the API
	// refused in a file there. It is made once, in the test's goroutine
	// (T.TempDir may not be called once the test has ended), and removed
	// with the test.
	tempDir string
}

// New creates a namespace named after prefix for the test and deletes it
// when the test ends. On failure, the namespace's jobs, pods and events are
// logged first; E2E_KEEP_NAMESPACES=1 keeps the namespace of a failed test.
func New(t *testing.T, prefix string) *Framework {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
	if env == nil {
		t.Fatal("framework.Setup was not called (TestMain)")
	}
	f := &Framework{Clients: clients, Env: env, T: t, tempDir: t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	ns, err := f.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "e2e-" + prefix + "-",
			Labels:       map[string]string{"e2e.tensorstack.dev/test": "true"},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the test namespace: %v", err)
	}
	f.Namespace = ns.Name
	t.Logf("namespace %s", f.Namespace)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("state of namespace %s at the end of the failed test:\n%s", f.Namespace, f.DumpNamespace())
			if os.Getenv("E2E_KEEP_NAMESPACES") != "" {
				t.Logf("keeping namespace %s (E2E_KEEP_NAMESPACES)", f.Namespace)
				return
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		err := f.Kube.CoreV1().Namespaces().Delete(ctx, f.Namespace, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s: %v", f.Namespace, err)
		}
	})
	return f
}

// Context returns a context bounded by Timeout that ends with the test.
func (f *Framework) Context() context.Context {
	return f.ContextWithin(Timeout)
}

// ContextWithin returns a context bounded by timeout that ends with the
// test, for a step that may take longer than Timeout. A context derived
// from Context cannot: it ends with Context's own deadline.
func (f *Framework) ContextWithin(timeout time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	f.T.Cleanup(cancel)
	return ctx
}

// For returns the framework for a subtest: same namespace, failures reported
// to t.
func (f *Framework) For(t *testing.T) *Framework {
	c := *f
	c.T = t
	return &c
}

// RestartComponent runs hack/local-restart.sh for a component of the local
// control plane (with --stop or --start in args, or neither for a restart)
// and waits for it; the script itself waits until the component is ready.
func (f *Framework) RestartComponent(args ...string) {
	f.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, f.Env.Restart, args...)
	out, err := cmd.CombinedOutput()
	f.T.Logf("%s %s took %s:\n%s", filepath.Base(f.Env.Restart), strings.Join(args, " "), time.Since(start).Round(time.Millisecond), out)
	if err != nil {
		f.T.Fatalf("%s %s: %v", f.Env.Restart, strings.Join(args, " "), err)
	}
}

// WaitForAPIServiceAvailable waits until kube-apiserver reports the
// APIService of the group Available.
func (f *Framework) WaitForAPIServiceAvailable() {
	f.T.Helper()
	const name = "v1beta1.batch.tensorstack.dev"
	f.Eventually(Timeout, "APIService "+name+" Available", func(ctx context.Context) (bool, error) {
		data, err := f.Kube.Discovery().RESTClient().Get().AbsPath("/apis/apiregistration.k8s.io/v1/apiservices", name).DoRaw(ctx)
		if err != nil {
			return false, err
		}
		var svc struct {
			Status struct {
				Conditions []metav1.Condition `json:"conditions"`
			} `json:"status"`
		}
		if err := json.Unmarshal(data, &svc); err != nil {
			return false, err
		}
		for _, c := range svc.Status.Conditions {
			if c.Type == "Available" {
				if c.Status != metav1.ConditionTrue {
					return false, fmt.Errorf("condition Available is %s: %s: %s", c.Status, c.Reason, c.Message)
				}
				return true, nil
			}
		}
		return false, fmt.Errorf("no Available condition yet")
	})
	// kube-apiserver's aggregated discovery, which kubectl reads to find a
	// resource or category, refreshes on its own after the APIService
	// turned Available; until then kubectl answers "the server doesn't
	// have a resource type".
	f.Eventually(Timeout, "the job kinds in kube-apiserver's discovery", func(ctx context.Context) (bool, error) {
		_, lists, err := f.Kube.Discovery().ServerGroupsAndResources()
		if err != nil {
			return false, nil
		}
		for _, list := range lists {
			if list.GroupVersion != "batch.tensorstack.dev/v1beta1" {
				continue
			}
			for _, r := range list.APIResources {
				if r.Name == "tensorflowtrainingjobs" && slices.Contains(r.Categories, "trainingjobs") {
					return true, nil
				}
			}
		}
		return false, nil
	})
}
