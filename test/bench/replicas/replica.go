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

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"tensorstack.dev/training/test/bench/internal/benchkit"
)

// replica is one training-apiserver process and a client of its own port.
type replica struct {
	name   string
	pid    int
	port   int
	config *rest.Config
	cmd    *exec.Cmd // nil for the stack's own replica, which the stack stops
}

// firstReplica is the stack's training-apiserver.
func firstReplica(stack *benchkit.Stack) (*replica, error) {
	pid, err := stack.Pid("training-apiserver")
	if err != nil {
		return nil, err
	}
	port, err := stack.Port("LOCAL_TRAINING_PORT")
	if err != nil {
		return nil, err
	}
	cfg, err := stack.DirectTrainingConfig()
	if err != nil {
		return nil, err
	}
	return &replica{name: "training-apiserver", pid: pid, port: port, config: cfg}, nil
}

// startReplica starts another training-apiserver exactly as the stack's
// runs (its command line and environment, read from /proc), but on port.
// Both must share an etcd: the stack's replica has to run with
// --etcd-servers, or the new one would open an empty embedded etcd of its
// own.
func startReplica(ctx context.Context, stack *benchkit.Stack, first *replica, port int) (*replica, error) {
	args, err := procStrings(first.pid, "cmdline")
	if err != nil {
		return nil, err
	}
	env, err := procStrings(first.pid, "environ")
	if err != nil {
		return nil, err
	}
	if !hasFlag(args, "--etcd-servers") {
		return nil, fmt.Errorf("the stack's training-apiserver uses its embedded etcd; a second replica needs the shared one (--etcd-servers)")
	}
	replaced := false
	for i, a := range args {
		if strings.HasPrefix(a, "--secure-port=") {
			args[i] = fmt.Sprintf("--secure-port=%d", port)
			replaced = true
		}
	}
	if !replaced {
		return nil, fmt.Errorf("the training-apiserver's command line has no --secure-port=: %q", args)
	}
	name := "training-apiserver-2"
	logFile, err := os.Create(filepath.Join(stack.Dir, "logs", name+".log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	cfg := rest.CopyConfig(first.config)
	cfg.Host = fmt.Sprintf("https://127.0.0.1:%d", port)
	r := &replica{name: name, pid: cmd.Process.Pid, port: port, config: cfg, cmd: cmd}
	if err := r.waitReady(ctx, 2*time.Minute); err != nil {
		r.stop()
		return nil, err
	}
	return r, nil
}

// waitReady polls /readyz until it answers ok.
func (r *replica) waitReady(ctx context.Context, timeout time.Duration) error {
	client, err := r.restClient()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		body, err := client.Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) == "ok" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready on port %d after %s: %v (log: logs/%s.log)", r.name, r.port, timeout, err, r.name)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// restClient is a plain client of the replica's port, for paths outside
// the API groups (/readyz, /metrics).
func (r *replica) restClient() (rest.Interface, error) {
	d, err := discovery.NewDiscoveryClientForConfig(r.config)
	if err != nil {
		return nil, err
	}
	return d.RESTClient(), nil
}

// stop ends a replica the benchmark started, and waits for it.
func (r *replica) stop() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = r.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = r.cmd.Process.Kill()
		<-done
	}
}

func procStrings(pid int, file string) ([]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range bytes.Split(bytes.TrimRight(data, "\x00"), []byte{0}) {
		out = append(out, string(s))
	}
	return out, nil
}

func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}
