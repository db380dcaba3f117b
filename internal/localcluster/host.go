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

package localcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"tensorstack.dev/training/internal/localcluster/spec"
)

// Command is a program to run to completion.
type Command struct {
	Path  string
	Args  []string
	Env   []string // added to the environment
	Stdin []byte
	// Quiet keeps the output out of the log on success.
	Quiet bool
}

func (c Command) String() string {
	var b strings.Builder
	for _, e := range c.Env {
		b.WriteString(spec.ShellQuote(e) + " ")
	}
	b.WriteString(spec.ShellQuote(c.Path))
	for _, a := range c.Args {
		b.WriteString(" " + spec.ShellQuote(a))
	}
	return b.String()
}

// Process is a long-running program started in the background, in a
// session of its own (a Ctrl-C on the terminal reaches only us, who stop
// things in order), its output appended to LogFile.
type Process struct {
	Name    string
	Path    string
	Args    []string
	Env     []string // added to the environment
	LogFile string
	PIDFile string
}

// Check is a readiness probe: What says it in a progress line, Probe
// succeeds once it holds.
type Check struct {
	What  string
	Probe func(ctx context.Context) error
}

// Host is every effect the stack has on the machine: the real one, or a dry
// run that prints them.
type Host interface {
	MkdirAll(dir string, perm os.FileMode) error
	WriteFile(path string, data []byte, perm os.FileMode) error
	RemoveAll(path string) error
	// Run runs a command and returns its standard output.
	Run(ctx context.Context, c Command) ([]byte, error)
	// Start starts a process and records its pid in PIDFile.
	Start(p Process) (int, error)
	// Wait retries the check until it holds or timeout passes; alive, when
	// set, fails the wait early once it returns an error (the component
	// exited).
	Wait(ctx context.Context, c Check, timeout time.Duration, alive func() error) error
	// Logf prints a progress line.
	Logf(format string, args ...any)
	// DryRun says whether effects are only printed.
	DryRun() bool
	// Step says which step of a component the effects that follow carry
	// out: a dry run prints it, the machine has the effects to show.
	Step(component string, step fmt.Stringer)

	// ReadPID is the pid a pid file records, 0 when there is none.
	ReadPID(file string) int
	// Runs says whether pid runs binary with an argument under dir (the
	// stack's state), which tells a pid reused by another process apart.
	Runs(pid int, binary, dir string) bool
	// PIDs lists the machine's processes.
	PIDs() []int
	// Stop sends SIGTERM to pid, and SIGKILL after timeout.
	Stop(name string, pid int, timeout time.Duration)
	// Signal sends sig to pid.
	Signal(pid int, sig syscall.Signal) error
	// Remove removes a file; one that is not there is no error.
	Remove(path string) error
	// PortInUse says whether something listens on the TCP port.
	PortInUse(port int) bool
}

// RealHost acts on this machine.
type RealHost struct {
	Out io.Writer
	mu  sync.Mutex
}

func (h *RealHost) DryRun() bool { return false }

func (h *RealHost) Step(string, fmt.Stringer) {}

func (h *RealHost) Logf(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fmt.Fprintf(h.Out, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func (h *RealHost) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }

func (h *RealHost) WriteFile(path string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	// Written beside and renamed: a reader never sees half a file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func (h *RealHost) RemoveAll(path string) error { return os.RemoveAll(path) }

func (h *RealHost) ReadPID(file string) int { return readPID(file) }

func (h *RealHost) Runs(pid int, binary, dir string) bool { return runsFor(pid, binary, dir) }

func (h *RealHost) PIDs() []int { return allPIDs() }

func (h *RealHost) Stop(name string, pid int, timeout time.Duration) { stopPID(h, name, pid, timeout) }

func (h *RealHost) Signal(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }

func (h *RealHost) Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func (h *RealHost) PortInUse(port int) bool { return portInUse(port) }

func (h *RealHost) Run(ctx context.Context, c Command) ([]byte, error) {
	cmd := exec.CommandContext(ctx, c.Path, c.Args...)
	cmd.Env = append(os.Environ(), c.Env...)
	if c.Stdin != nil {
		cmd.Stdin = bytes.NewReader(c.Stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		return stdout.Bytes(), fmt.Errorf("%s: %w: %s", c, err, lastLines(msg, 10))
	}
	return stdout.Bytes(), nil
}

func (h *RealHost) Start(p Process) (int, error) {
	if err := os.MkdirAll(filepath.Dir(p.LogFile), 0o755); err != nil {
		return 0, err
	}
	log, err := os.OpenFile(p.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer log.Close()
	fmt.Fprintf(log, "==== %s starting %s\n%s\n", time.Now().Format("2006-01-02T15:04:05"), p.Name,
		Command{Path: p.Path, Args: p.Args, Env: p.Env})
	cmd := exec.Command(p.Path, p.Args...)
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting %s: %w", p.Name, err)
	}
	pid := cmd.Process.Pid
	// Reaped when it exits while we run (a foreground stack); after we exit
	// it belongs to init.
	go func() { _ = cmd.Wait() }()
	if err := h.WriteFile(p.PIDFile, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return pid, err
	}
	h.Logf("started %s (pid %d, log %s)", p.Name, pid, p.LogFile)
	return pid, nil
}

func (h *RealHost) Wait(ctx context.Context, c Check, timeout time.Duration, alive func() error) error {
	h.Logf("waiting for %s (up to %s)", c.What, timeout)
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		probeCtx, probeCancel := context.WithTimeout(ctx, 5*time.Second)
		last = c.Probe(probeCtx)
		probeCancel()
		if last == nil {
			h.Logf("%s: ok after %s", c.What, time.Since(start).Round(100*time.Millisecond))
			return nil
		}
		var p permanent
		if errors.As(last, &p) {
			return fmt.Errorf("%s: %w", c.What, last)
		}
		if alive != nil {
			if err := alive(); err != nil {
				return fmt.Errorf("waiting for %s: %w", c.What, err)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out after %s waiting for %s: %w", timeout, c.What, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// DryRunHost prints every effect and acts on nothing. Commands print and
// return no output; waits print and hold at once. The processes it starts
// get pids of its own counting, and run until it stops them, so that a stop
// or a restart after a start prints what it would do to each; it sees no
// other process and no port in use.
type DryRunHost struct {
	Out io.Writer

	pids    map[string]int // by pid file
	running map[int]Process
}

func (h *DryRunHost) DryRun() bool { return true }

func (h *DryRunHost) Step(component string, step fmt.Stringer) {
	fmt.Fprintf(h.Out, "step %s: %s\n", component, step)
}

func (h *DryRunHost) Logf(format string, args ...any) {
	fmt.Fprintf(h.Out, "# %s\n", fmt.Sprintf(format, args...))
}

func (h *DryRunHost) MkdirAll(dir string, _ os.FileMode) error {
	fmt.Fprintf(h.Out, "mkdir -p %s\n", spec.ShellQuote(dir))
	return nil
}

func (h *DryRunHost) WriteFile(path string, data []byte, perm os.FileMode) error {
	fmt.Fprintf(h.Out, "write %s (%04o)", spec.ShellQuote(path), perm)
	if secretFile(path) {
		fmt.Fprintf(h.Out, " [%s]\n", "key material, not shown")
		return nil
	}
	fmt.Fprintf(h.Out, " <<EOF\n%s", data)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		fmt.Fprintln(h.Out)
	}
	fmt.Fprintln(h.Out, "EOF")
	return nil
}

func (h *DryRunHost) RemoveAll(path string) error {
	fmt.Fprintf(h.Out, "rm -rf %s\n", spec.ShellQuote(path))
	return nil
}

func (h *DryRunHost) Run(_ context.Context, c Command) ([]byte, error) {
	if c.Stdin != nil {
		fmt.Fprintf(h.Out, "%s <<EOF\n%sEOF\n", c, c.Stdin)
	} else {
		fmt.Fprintln(h.Out, c.String())
	}
	return nil, nil
}

// firstDryRunPID is the first pid a dry run gives out.
const firstDryRunPID = 1000

func (h *DryRunHost) Start(p Process) (int, error) {
	fmt.Fprintf(h.Out, "start %s: %s >>%s 2>&1 &\n", p.Name, Command{Path: p.Path, Args: p.Args, Env: p.Env}, spec.ShellQuote(p.LogFile))
	if h.pids == nil {
		h.pids, h.running = map[string]int{}, map[int]Process{}
	}
	pid := firstDryRunPID + len(h.pids)
	h.pids[p.PIDFile] = pid
	h.running[pid] = p
	return pid, nil
}

func (h *DryRunHost) ReadPID(file string) int { return h.pids[file] }

// Runs holds for the processes this dry run started and has not stopped,
// with the same check of their arguments as on the machine.
func (h *DryRunHost) Runs(pid int, _, dir string) bool {
	p, ok := h.running[pid]
	if !ok {
		return false
	}
	for _, arg := range p.Args {
		if strings.Contains(arg, dir+"/") || strings.HasSuffix(arg, dir) {
			return true
		}
	}
	return false
}

func (h *DryRunHost) PIDs() []int { return nil }

func (h *DryRunHost) Stop(name string, pid int, timeout time.Duration) {
	fmt.Fprintf(h.Out, "kill -TERM %d  # %s; SIGKILL after %s\n", pid, name, timeout)
	delete(h.running, pid)
}

func (h *DryRunHost) Remove(path string) error {
	fmt.Fprintf(h.Out, "rm -f %s\n", spec.ShellQuote(path))
	return nil
}

func (h *DryRunHost) PortInUse(int) bool { return false }

func (h *DryRunHost) Signal(pid int, sig syscall.Signal) error {
	fmt.Fprintf(h.Out, "kill -%d %d\n", int(sig), pid)
	return nil
}

func (h *DryRunHost) Wait(_ context.Context, c Check, timeout time.Duration, _ func() error) error {
	fmt.Fprintf(h.Out, "wait %s (up to %s)\n", c.What, timeout)
	return nil
}

// secretFile: private keys and the files that embed them are not printed.
func secretFile(path string) bool {
	return strings.HasSuffix(path, ".key") || strings.HasSuffix(path, ".crt") ||
		strings.HasSuffix(path, ".pub") || strings.HasSuffix(path, "kubeconfig")
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
