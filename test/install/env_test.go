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
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"tensorstack.dev/training/pkg/generated/clientset/versioned"
)

const (
	systemNamespace = "tensorstack-system"
	apiServiceName  = "v1beta1.batch.tensorstack.dev"
	// The local stack's real nodes are real-node, real-node2, ...
	// (internal/localcluster); an installation may spread over them.
	realNodePrefix = "real-node"
	// The repository the releases name their images in; the test installs
	// from the stack's registry instead, as docs/install.md says to.
	releaseRepository = "ghcr.io/tensorstack/"
)

var apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

type env struct {
	kubectl, kubeconfig string
	helm, etcdctl       string
	releases            map[string]string // "a", "b": release directories
	registry            string
	config              *rest.Config
	kube                kubernetes.Interface
	jobs                versioned.Interface
	dynamic             dynamic.Interface

	// workDir outlives the steps: the backup step's snapshot is restored
	// by a later one.
	workDir  string
	snapshot string
	backedUp map[string]storedJob
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{
		kubectl:    os.Getenv("KUBECTL"),
		kubeconfig: os.Getenv("KUBECONFIG"),
		helm:       os.Getenv("HELM"),
		etcdctl:    os.Getenv("ETCDCTL"),
		releases:   map[string]string{"a": os.Getenv("INSTALL_RELEASE_A"), "b": os.Getenv("INSTALL_RELEASE_B")},
		registry:   os.Getenv("INSTALL_REGISTRY"),
	}
	if e.kubectl == "" || e.kubeconfig == "" || e.helm == "" || e.etcdctl == "" || e.releases["a"] == "" || e.releases["b"] == "" || e.registry == "" {
		t.Skip("run by hack/test-install.sh (make test-install): KUBECTL, KUBECONFIG, HELM, ETCDCTL, INSTALL_RELEASE_A/B, INSTALL_REGISTRY")
	}
	e.workDir = t.TempDir()
	cfg, err := clientcmd.BuildConfigFromFlags("", e.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	e.config = cfg
	e.kube = kubernetes.NewForConfigOrDie(cfg)
	e.jobs = versioned.NewForConfigOrDie(cfg)
	e.dynamic = dynamic.NewForConfigOrDie(cfg)
	return e
}

// run runs kubectl with stdin, failing the test on an error.
func (e *env) run(t *testing.T, stdin []byte, args ...string) string {
	t.Helper()
	out, err := e.tryRun(stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (e *env) tryRun(stdin []byte, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.kubectl, append([]string{"--kubeconfig", e.kubeconfig}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// installYAML is a release's install.yaml pointed at the stack's registry,
// the way docs/install.md says to install from a registry of one's own.
func (e *env) installYAML(t *testing.T, release string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(e.releases[release], "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := strings.ReplaceAll(string(data), releaseRepository, e.registry+"/tensorstack/")
	if !strings.Contains(out, e.registry+"/tensorstack/training-apiserver:") {
		t.Fatalf("release %s: install.yaml names no %straining-apiserver image", release, releaseRepository)
	}
	return []byte(out)
}

// releaseDigests are the digests of a release's images, by name.
func (e *env) releaseDigests(t *testing.T, release string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(e.releases[release], "images", "images.txt"))
	if err != nil {
		t.Fatal(err)
	}
	digests := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("images.txt: line %q", line)
		}
		digests[f[0]] = f[2]
	}
	return digests
}

// apiServiceAvailable reports the APIService's Available condition.
func (e *env) apiServiceAvailable(ctx context.Context) (bool, string) {
	u, err := e.dynamic.Resource(apiServices).Get(ctx, apiServiceName, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	conditions, _, _ := unstructuredSlice(u.Object, "status", "conditions")
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		if m["type"] == "Available" {
			return m["status"] == "True", fmt.Sprintf("%v: %v", m["reason"], m["message"])
		}
	}
	return false, "no Available condition"
}

func unstructuredSlice(obj map[string]any, fields ...string) ([]any, bool, error) {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false, nil
		}
		cur = m[f]
	}
	s, ok := cur.([]any)
	return s, ok, nil
}

// waitFor polls cond every interval until it holds, failing after timeout.
func waitFor(t *testing.T, what string, timeout, interval time.Duration, cond func(ctx context.Context) (bool, error)) time.Duration {
	t.Helper()
	start := time.Now()
	err := wait.PollUntilContextTimeout(context.Background(), interval, timeout, true, cond)
	if err != nil {
		t.Fatalf("%s: not within %v: %v", what, timeout, err)
	}
	return time.Since(start)
}
