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

package framework

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// KubectlResult is what one kubectl invocation printed.
type KubectlResult struct {
	Args   []string
	Stdout string
	Stderr string
	// Err is nil when kubectl exited 0.
	Err error
}

func (r KubectlResult) String() string {
	return fmt.Sprintf("kubectl %s: err=%v\nstdout:\n%s\nstderr:\n%s",
		strings.Join(r.Args, " "), r.Err, r.Stdout, r.Stderr)
}

// RunKubectl runs the pinned kubectl with the admin kubeconfig and stdin
// (may be empty), bounded by timeout.
func RunKubectl(ctx context.Context, timeout time.Duration, stdin string, args ...string) KubectlResult {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.Kubectl, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err := cmd.Run()
	if ctx.Err() != nil && err != nil {
		err = fmt.Errorf("%w (after %s: %v)", err, timeout, ctx.Err())
	}
	return KubectlResult{Args: args, Stdout: stdout.String(), Stderr: stderr.String(), Err: err}
}

// Kubectl runs kubectl with the given arguments as they are.
func (f *Framework) Kubectl(args ...string) KubectlResult {
	f.T.Helper()
	r := RunKubectl(context.Background(), KubectlTimeout, "", args...)
	f.T.Logf("kubectl %s (err=%v)", strings.Join(args, " "), r.Err)
	return r
}

// KubectlNS runs kubectl in the test's namespace.
func (f *Framework) KubectlNS(args ...string) KubectlResult {
	f.T.Helper()
	return f.Kubectl(append([]string{"--namespace", f.Namespace}, args...)...)
}

// KubectlInput runs kubectl in the test's namespace with stdin.
func (f *Framework) KubectlInput(stdin string, args ...string) KubectlResult {
	f.T.Helper()
	args = append([]string{"--namespace", f.Namespace}, args...)
	r := RunKubectl(context.Background(), KubectlTimeout, stdin, args...)
	f.T.Logf("kubectl %s <stdin (err=%v)", strings.Join(args, " "), r.Err)
	return r
}

// MustKubectl runs kubectl in the test's namespace and fails the test unless
// it exits 0; it returns stdout.
func (f *Framework) MustKubectl(args ...string) string {
	f.T.Helper()
	r := f.KubectlNS(args...)
	if r.Err != nil {
		f.T.Fatalf("%s", r)
	}
	return r.Stdout
}

// WriteFile writes content to a file in the test's temporary directory and
// returns its path.
func (f *Framework) WriteFile(name, content string) string {
	f.T.Helper()
	p := filepath.Join(f.T.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		f.T.Fatal(err)
	}
	return p
}

// KubectlEnv runs kubectl in the test's namespace with extra environment
// variables (NAME=value), e.g. KUBE_EDITOR for kubectl edit.
func (f *Framework) KubectlEnv(extraEnv []string, args ...string) KubectlResult {
	f.T.Helper()
	return f.kubectlWithEnv(extraEnv, append([]string{"--namespace", f.Namespace}, args...)...)
}

// KubectlTraining runs `kubectl training ARGS` in the test's namespace.
// kubectl finds the plugin as it does on a user's machine: kubectl-training
// on PATH, here _output/bin beside the pinned kubectl. The plugin's name
// comes first, since kubectl stops looking for it at the first flag.
func (f *Framework) KubectlTraining(args ...string) KubectlResult {
	f.T.Helper()
	return f.KubectlTrainingFor(KubectlTimeout, args...)
}

// KubectlTrainingFor is KubectlTraining for a command that may take longer
// than KubectlTimeout, such as one that follows a job to its end.
func (f *Framework) KubectlTrainingFor(timeout time.Duration, args ...string) KubectlResult {
	f.T.Helper()
	path := "PATH=" + filepath.Dir(env.Kubectl) + string(os.PathListSeparator) + os.Getenv("PATH")
	return f.kubectlFor(timeout, []string{path}, append([]string{"training", "--namespace", f.Namespace}, args...)...)
}

func (f *Framework) kubectlWithEnv(extraEnv []string, args ...string) KubectlResult {
	f.T.Helper()
	return f.kubectlFor(KubectlTimeout, extraEnv, args...)
}

func (f *Framework) kubectlFor(timeout time.Duration, extraEnv []string, args ...string) KubectlResult {
	f.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.Kubectl, args...)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+env.Kubeconfig, "TMPDIR="+f.tempDir), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	f.T.Logf("%s kubectl %s (err=%v)", strings.Join(extraEnv, " "), strings.Join(args, " "), err)
	return KubectlResult{Args: args, Stdout: stdout.String(), Stderr: stderr.String(), Err: err}
}

// lockedBuffer collects the output of a command still running.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// BackgroundKubectl is a kubectl process left running, such as a watch.
type BackgroundKubectl struct {
	args           []string
	cmd            *exec.Cmd
	cancel         context.CancelFunc
	stdout, stderr lockedBuffer
	done           chan struct{}
	err            error
}

// StartKubectl starts kubectl in the test's namespace in the background. It
// is killed after timeout, by Stop, or when the test ends.
func (f *Framework) StartKubectl(timeout time.Duration, args ...string) *BackgroundKubectl {
	f.T.Helper()
	args = append([]string{"--namespace", f.Namespace}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	bk := &BackgroundKubectl{args: args, cancel: cancel, done: make(chan struct{})}
	bk.cmd = exec.CommandContext(ctx, env.Kubectl, args...)
	bk.cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
	bk.cmd.Stdout, bk.cmd.Stderr = &bk.stdout, &bk.stderr
	if err := bk.cmd.Start(); err != nil {
		cancel()
		f.T.Fatalf("starting kubectl %s: %v", strings.Join(args, " "), err)
	}
	f.T.Logf("started kubectl %s in the background", strings.Join(args, " "))
	go func() {
		bk.err = bk.cmd.Wait()
		close(bk.done)
	}()
	f.T.Cleanup(func() { bk.Stop() })
	return bk
}

// Stdout is what the process printed so far.
func (bk *BackgroundKubectl) Stdout() string { return bk.stdout.String() }

// Stderr is what the process printed on stderr so far.
func (bk *BackgroundKubectl) Stderr() string { return bk.stderr.String() }

// Exited says whether the process ended, and how.
func (bk *BackgroundKubectl) Exited() (bool, error) {
	select {
	case <-bk.done:
		return true, bk.err
	default:
		return false, nil
	}
}

// Stop kills the process (if still running) and waits for it.
func (bk *BackgroundKubectl) Stop() {
	bk.cancel()
	<-bk.done
}
