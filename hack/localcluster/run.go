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

// runCommand is localcluster run: the routine of every suite and benchmark with a stack of its own. It starts the
// stack (as up does), runs the command with the stack's environment, and stops the stack whatever the command did,
// unless --retain keeps a stack whose command failed.
func runCommand(ctx context.Context, paths localcluster.Paths, args []string, stdout, stderr io.Writer) error {
	dash := slices.Index(args, "--")
	if dash < 0 || dash == len(args)-1 {
		return errors.New("usage: localcluster run [--retain] [--real-nodes=N] -- CMD [ARGS...]")
	}
	upArgs, command := args[:dash], args[dash+1:]
	retain := false
	for _, a := range upArgs {
		switch a {
		case "--foreground", "--dry-run":
			return fmt.Errorf("localcluster run: %s is up's alone", a)
		case "--retain", "--retain=true":
			retain = true
		}
	}
	if err := up(ctx, paths, upArgs, stdout, stderr, true); err != nil {
		return err
	}
	host := &localcluster.RealHost{Out: stderr}
	st, err := localcluster.Load(paths.Dir)
	if err != nil {
		return errors.Join(err, stopRunning(paths, host))
	}

	cmd := exec.CommandContext(ctx, command[0], command[1:]...)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+paths.Kubeconfig(), "LOCAL_DIR="+paths.Dir), st.Environ()...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = commandStopGrace
	host.Logf("running %v against the stack in %s", command, paths.Dir)
	runErr := cmd.Run()

	code := 0
	if runErr != nil {
		var exit *exec.ExitError
		if !errors.As(runErr, &exit) || exit.ExitCode() < 0 {
			// Did not start, or was killed by a signal: no code of its own to pass on.
			host.Logf("%v: %v", command, runErr)
			code = 1
		} else {
			code = exit.ExitCode()
		}
	}
	if code != 0 && retain {
		host.Logf("%v exited with %d; the stack is kept (--retain): stop it with hack/local-down.sh (LOCAL_DIR=%s)",
			command, code, paths.Dir)
		return commandExit{code}
	}
	if err := stopRunning(paths, host); err != nil {
		return err
	}
	if code != 0 {
		return commandExit{code}
	}
	return nil
}

// stopRunning stops the stack in paths, also after an interrupt (it needs no context that a signal cancels).
func stopRunning(paths localcluster.Paths, host localcluster.Host) error {
	c, err := running(paths, host)
	if err != nil {
		return err
	}
	return stop(context.Background(), c)
}

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
