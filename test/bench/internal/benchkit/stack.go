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

// Package benchkit is what the benchmarks of test/bench share: the local
// control plane's settings, clients and process ids (_output/local), samples
// of a process's CPU time and memory from /proc, Prometheus counters scraped
// from a server's /metrics, percentiles and markdown tables.
package benchkit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"

	"tensorstack.dev/training/internal/localcluster"
)

// Stack is the local stack started by hack/local-up.sh, as its state file
// describes it.
type Stack struct {
	// Dir is the state directory, _output/local by default.
	Dir string
	// Settings are the LOCAL_* values the stack was started with.
	Settings map[string]string
	// State is the whole state file.
	State *localcluster.State
}

// LoadStack reads the state of the stack in dir.
func LoadStack(dir string) (*Stack, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	st, err := localcluster.Load(abs)
	if err != nil {
		return nil, fmt.Errorf("reading the local stack's state (is it running? hack/local-up.sh): %w", err)
	}
	s := &Stack{Dir: abs, Settings: map[string]string{}, State: st}
	for _, kv := range st.Settings.Env() {
		name, value, _ := strings.Cut(kv, "=")
		s.Settings[name] = value
	}
	return s, nil
}

// Port returns a LOCAL_*_PORT setting.
func (s *Stack) Port(setting string) (int, error) {
	v, ok := s.Settings[setting]
	if !ok {
		return 0, fmt.Errorf("%s is not a setting of the stack in %s", setting, s.Dir)
	}
	p, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: %w", setting, v, err)
	}
	return p, nil
}

// Kubeconfig is the admin kubeconfig (system:masters) of the stack.
func (s *Stack) Kubeconfig() string { return filepath.Join(s.Dir, "kubeconfig") }

// EtcdDB is the database file of the stack's etcd, kube-apiserver's.
func (s *Stack) EtcdDB() string { return filepath.Join(s.Dir, "etcd", "member", "snap", "db") }

// EnsureNamespace creates the namespace unless it exists.
func EnsureNamespace(ctx context.Context, kube kubernetes.Interface, name string) error {
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// PKI returns the path of a file in the stack's PKI directory.
func (s *Stack) PKI(name string) string { return filepath.Join(s.Dir, "pki", name) }

// AdminConfig is a client configuration for kube-apiserver as the admin,
// with no client-side rate limit: the benchmarks measure the servers.
func (s *Stack) AdminConfig() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig())
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", s.Kubeconfig(), err)
	}
	Unthrottled(cfg)
	return cfg, nil
}

// DirectTrainingConfig is a client configuration that talks to the
// training-apiserver on its own port, bypassing kube-apiserver. It presents
// the admin's client certificate, which the training-apiserver accepts
// because it trusts the client CA that kube-apiserver publishes in
// kube-system/extension-apiserver-authentication; the admin is in
// system:masters, which a delegating authorizer allows without asking
// kube-apiserver (the same identity the aggregator forwards through the
// front-proxy headers).
func (s *Stack) DirectTrainingConfig() (*rest.Config, error) {
	port, err := s.Port("LOCAL_TRAINING_PORT")
	if err != nil {
		return nil, err
	}
	cfg := &rest.Config{
		Host: fmt.Sprintf("https://127.0.0.1:%d", port),
		TLSClientConfig: rest.TLSClientConfig{
			CAFile:   s.PKI("training-ca.crt"),
			CertFile: s.PKI("admin.crt"),
			KeyFile:  s.PKI("admin.key"),
		},
	}
	Unthrottled(cfg)
	return cfg, nil
}

// Unthrottled removes client-go's client-side rate limit from cfg.
func Unthrottled(cfg *rest.Config) {
	cfg.QPS, cfg.Burst = 1e6, 1e6
	cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
}

// Pid returns the process id recorded for a component of the stack
// (_output/local/pids/<component>.pid), checked to be alive.
func (s *Stack) Pid(component string) (int, error) {
	file := filepath.Join(s.Dir, "pids", component+".pid")
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, fmt.Errorf("pid of %s: %w", component, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", file, err)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
		return 0, fmt.Errorf("%s (pid %d) is not running", component, pid)
	}
	return pid, nil
}
