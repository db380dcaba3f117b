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
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"tensorstack.dev/training/internal/localcluster"
)

// commandStopGrace is how long the command has to end after a SIGTERM (localcluster run was interrupted) before
// it is killed and the stack stopped.
const commandStopGrace = 30 * time.Second

const runUsage = "usage: localcluster run [--retain] [--keep] [--real-nodes=N] -- CMD [ARGS...]"

// runOptions are localcluster run's own flags.
type runOptions struct {
	// retain keeps a stack whose start or command failed; keep keeps the stack whatever the command did.
	retain, keep bool
}

// runCommand is localcluster run: the routine of every suite and benchmark with a stack of its own. It starts the
// stack (as up does), runs the command with the stack's environment, and stops the stack whatever the command did,
// unless --retain keeps a stack whose command failed or --keep keeps it in any case. After the stop it fails when
// the stack's real nodes left anything on the machine.
func runCommand(ctx context.Context, paths localcluster.Paths, args []string, stdout, stderr io.Writer) error {
	dash := slices.Index(args, "--")
	if dash < 0 || dash == len(args)-1 {
		return errors.New(runUsage)
	}
	var opts runOptions
	var upArgs []string
	for _, a := range args[:dash] {
		switch a {
		case "--foreground", "--dry-run":
			return fmt.Errorf("localcluster run: %s is up's alone", a)
		case "--keep":
			opts.keep = true
			continue
		case "--retain", "--retain=true":
			opts.retain = true
		}
		upArgs = append(upArgs, a)
	}
	host := &localcluster.RealHost{Out: stderr}
	s := &realStack{paths: paths, host: host, upArgs: upArgs, stdout: stdout, stderr: stderr}
	return runOn(ctx, s, opts, args[dash+1:], stdout, stderr, host)
}

// stack is what localcluster run does with the stack; its tests give one that starts nothing.
type stack interface {
	// Up starts the stack.
	Up(ctx context.Context) error
	// Environ is the command's environment on the started stack.
	Environ() ([]string, error)
	// Stop stops the stack, also after an interrupt, and lists what its real nodes left on the machine.
	Stop() (leftovers []string, err error)
	// Dir is where the stack lives (LOCAL_DIR).
	Dir() string
}

// runOn starts s, runs command on it and stops it as opts say; its error is commandExit when the command's exit
// code is all there is to say.
func runOn(ctx context.Context, s stack, opts runOptions, command []string, stdout, stderr io.Writer, host localcluster.Host) error {
	if err := s.Up(ctx); err != nil {
		return err
	}
	env, err := s.Environ()
	if err != nil {
		_, stopErr := s.Stop()
		return errors.Join(err, stopErr)
	}

	cmd := exec.CommandContext(ctx, command[0], command[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = commandStopGrace
	host.Logf("running %v against the stack in %s", command, s.Dir())
	code := exitCode(cmd.Run(), command, host)

	if opts.keep || (code != 0 && opts.retain) {
		why := "--keep"
		if !opts.keep {
			why = "--retain"
		}
		host.Logf("%v exited with %d; the stack is kept (%s): stop it with hack/local-down.sh (LOCAL_DIR=%s)",
			command, code, why, s.Dir())
		return exitError(code)
	}
	left, err := s.Stop()
	if err != nil {
		return err
	}
	if len(left) > 0 {
		msg := "the real nodes left on the machine after the stack stopped:\n  " + strings.Join(left, "\n  ")
		if code != 0 {
			msg += fmt.Sprintf("\n(and %v exited with %d)", command, code)
		}
		return errors.New(msg)
	}
	return exitError(code)
}

// exitCode is the command's exit code from its Run error: 1 when it has none of its own to pass on.
func exitCode(runErr error, command []string, host localcluster.Host) int {
	if runErr == nil {
		return 0
	}
	var exit *exec.ExitError
	if !errors.As(runErr, &exit) || exit.ExitCode() < 0 {
		// Did not start, or was killed by a signal.
		host.Logf("%v: %v", command, runErr)
		return 1
	}
	return exit.ExitCode()
}

// exitError is nil for 0, else the command's exit code for localcluster to exit with.
func exitError(code int) error {
	if code == 0 {
		return nil
	}
	return commandExit{code}
}

// realStack is the stack in paths, started as localcluster up starts it.
type realStack struct {
	paths          localcluster.Paths
	host           localcluster.Host
	upArgs         []string
	stdout, stderr io.Writer
}

func (s *realStack) Up(ctx context.Context) error {
	return up(ctx, s.paths, s.upArgs, s.stdout, s.stderr, true)
}

func (s *realStack) Environ() ([]string, error) {
	st, err := localcluster.Load(s.paths.Dir)
	if err != nil {
		return nil, err
	}
	return append([]string{"KUBECONFIG=" + s.paths.Kubeconfig(), "LOCAL_DIR=" + s.paths.Dir}, st.Environ()...), nil
}

func (s *realStack) Stop() ([]string, error) {
	c, err := running(s.paths, s.host)
	if err != nil {
		return nil, err
	}
	if err := stop(context.Background(), c); err != nil {
		return nil, err
	}
	if len(c.Config.Nodes) == 0 {
		return nil, nil
	}
	left := c.Leftovers()
	if len(left) == 0 {
		s.host.Logf("the real nodes left no process, mount, network namespace, link, iptables rule, cgroup or sysctl")
	}
	return left, nil
}

func (s *realStack) Dir() string { return s.paths.Dir }

// stop stops a stack and says what is left running.
func stop(ctx context.Context, c *localcluster.Cluster) error {
	if err := c.Down(ctx); err != nil {
		return err
	}
	if left := c.Running(); len(left) > 0 {
		return fmt.Errorf("still running after stop: %s", strings.Join(left, " "))
	}
	return nil
}
