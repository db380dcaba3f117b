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

// Command localcluster brings the local stack up and down (hack/local-up.sh,
// hack/local-down.sh and hack/local-restart.sh run it; make run, make
// local-up and make local-down run those):
//
//	localcluster up [--foreground] [--retain] [--dry-run] [--real-nodes=N]
//	localcluster run [--retain] [--keep] [--real-nodes=N] -- CMD [ARGS...]
//	                                 start the stack, run CMD with its environment (KUBECONFIG, LOCAL_DIR and
//	                                 every LOCAL_* setting), stop it; with --retain a stack whose CMD failed is
//	                                 kept for inspection, with --keep the stack is kept whatever CMD did. Exits
//	                                 with CMD's exit code, or 1 when the real nodes left anything after the stop
//	localcluster down
//	localcluster restart [--stop|--start|--freeze|--thaw|--kill] COMPONENT
//	localcluster env                 the running stack's settings, as shell assignments
//	localcluster settings            the environment's settings with the defaults, likewise
//	localcluster why-no-real-node    why real nodes cannot run here (nothing when they can)
//	localcluster real-nodes-or-skip SUITE   nothing where real nodes run; else the suite's skip, said and noted
//	                                 for make test, or under CI=true or REQUIRE_REAL_NODES=1 its failure
//	localcluster set NAME=VALUE...   change settings of the running stack (for restart)
//	localcluster running             the stack's processes that run, one per line
//	localcluster leftovers           what the real nodes left on the machine (none after down)
//	localcluster components          every component, in start order
//
// Settings come from the LOCAL_* environment (localcluster up --help lists
// them); the stack lives in LOCAL_DIR (_output/local by default).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"tensorstack.dev/training/internal/localcluster"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		var exit commandExit
		if errors.As(err, &exit) {
			os.Exit(exit.code)
		}
		fmt.Fprintf(os.Stderr, "ERROR: %v\n", err)
		os.Exit(1)
	}
}

func repoRoot() (string, error) {
	if r := os.Getenv("REPO_ROOT"); r != "" {
		return r, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; d != "/"; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "hack", "localcluster")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("run it inside the repository (or set REPO_ROOT)")
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: localcluster up|down|restart|env|set|running|leftovers|components (see hack/localcluster/main.go)")
	}
	repo, err := repoRoot()
	if err != nil {
		return err
	}
	paths := localcluster.DefaultPaths(repo, os.Getenv("LOCAL_DIR"))
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	switch args[0] {
	case "up":
		return up(ctx, paths, args[1:], stdout, stderr, false)
	case "run":
		return runCommand(ctx, paths, args[1:], stdout, stderr)
	case "settings":
		// The environment's settings with the defaults, for the scripts.
		s, err := localcluster.SettingsFromEnv(os.LookupEnv)
		if err != nil {
			return err
		}
		_, err = io.WriteString(stdout, s.ShellAssignments())
		return err
	case "why-no-real-node":
		if why := localcluster.RealNodesAllowed(); why != "" {
			fmt.Fprintln(stdout, why)
		}
		return nil
	case "real-nodes-or-skip":
		if len(args) != 2 {
			return errors.New("usage: localcluster real-nodes-or-skip SUITE")
		}
		skipped, err := localcluster.SkipWithoutRealNodes(args[1])
		if err != nil || skipped == "" {
			return err
		}
		_, err = fmt.Fprintln(stdout, skipped)
		return err
	case "components":
		c, err := fromEnv(paths, &localcluster.DryRunHost{Out: io.Discard}, -1)
		if err != nil {
			return err
		}
		all, err := c.Components()
		if err != nil {
			return err
		}
		for _, comp := range all {
			kind := "step"
			if comp.IsProcess() {
				kind = "process"
			}
			fmt.Fprintf(stdout, "%-32s %-8s after %s\n", comp.Name, kind, strings.Join(comp.After, ","))
		}
		return nil
	}
	// The other commands act on the running stack, with its own settings.
	host := &localcluster.RealHost{Out: stderr}
	c, err := running(paths, host)
	if err != nil {
		return err
	}
	switch args[0] {
	case "down":
		if len(args) > 1 {
			return errors.New("usage: localcluster down")
		}
		return stop(ctx, c)
	case "restart":
		fs := flag.NewFlagSet("restart", flag.ContinueOnError)
		stopOnly := fs.Bool("stop", false, "stop it only")
		startOnly := fs.Bool("start", false, "start it (it must not run), and wait until ready")
		freeze := fs.Bool("freeze", false, "stop it where it stands (SIGSTOP): it stops answering, its connections stay open")
		thaw := fs.Bool("thaw", false, "let a frozen one go on (SIGCONT)")
		kill := fs.Bool("kill", false, "kill it (SIGKILL: no clean shut-down), then start it and wait until ready")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		chosen := 0
		for _, b := range []bool{*stopOnly, *startOnly, *freeze, *thaw, *kill} {
			if b {
				chosen++
			}
		}
		if fs.NArg() != 1 || chosen > 1 {
			return errors.New("usage: localcluster restart [--stop|--start|--freeze|--thaw|--kill] COMPONENT")
		}
		if *kill {
			return c.Kill(ctx, fs.Arg(0))
		}
		if *freeze || *thaw {
			return c.Freeze(fs.Arg(0), *freeze)
		}
		return c.Restart(ctx, fs.Arg(0), !*startOnly, !*stopOnly)
	case "env":
		st, err := localcluster.Load(paths.Dir)
		if err != nil {
			return err
		}
		_, err = io.WriteString(stdout, st.ShellEnv())
		return err
	case "set":
		for _, kv := range args[1:] {
			name, value, ok := strings.Cut(kv, "=")
			if !ok {
				return fmt.Errorf("%q: want NAME=VALUE", kv)
			}
			if err := c.Config.Settings.Set(name, value); err != nil {
				return err
			}
		}
		return c.SaveState()
	case "running":
		for _, name := range c.Running() {
			fmt.Fprintln(stdout, name)
		}
		return nil
	case "leftovers":
		for _, l := range c.Leftovers() {
			fmt.Fprintln(stdout, l)
		}
		return nil
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// commandExit is the exit code of the command localcluster run ran, for localcluster to exit with.
type commandExit struct{ code int }

func (e commandExit) Error() string { return fmt.Sprintf("the command exited with %d", e.code) }

// running describes the stack in paths.Dir from its state file; with none,
// from the environment (a stack that never started, or crashed before it
// wrote its state, is stopped the same way).
func running(paths localcluster.Paths, h localcluster.Host) (*localcluster.Cluster, error) {
	st, err := localcluster.Load(paths.Dir)
	if err != nil {
		if _, statErr := os.Stat(paths.State()); statErr == nil {
			return nil, err
		}
		return fromEnv(paths, h, 0)
	}
	if paths.Modules, err = localcluster.FindModules(paths.Repo); err != nil {
		return nil, err
	}
	return localcluster.New(st.Settings, paths, h, st.RealNodes()), nil
}

// fromEnv describes a stack from the environment; realNodes < 0 takes the
// number the settings and the machine decide.
func fromEnv(paths localcluster.Paths, h localcluster.Host, realNodes int) (*localcluster.Cluster, error) {
	s, err := localcluster.SettingsFromEnv(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	if paths.Modules, err = localcluster.FindModules(paths.Repo); err != nil {
		return nil, err
	}
	if realNodes < 0 {
		realNodes = s.RealNodes
		if realNodes == 0 {
			realNodes = localcluster.DefaultRealNodes()
		}
		if !s.RealNode {
			realNodes = 0
		}
	}
	return localcluster.New(s, paths, h, realNodes), nil
}

// up is localcluster up; run says it starts the stack for localcluster run, which stops it too.
func up(ctx context.Context, paths localcluster.Paths, args []string, stdout, stderr io.Writer, run bool) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	fs.SetOutput(stderr)
	foreground := fs.Bool("foreground", false, "stay in the foreground: Ctrl-C (or SIGTERM) stops everything in reverse order; a component that exits stops the rest")
	retain := fs.Bool("retain", false, "keep what a failed start made, for inspection")
	dryRun := fs.Bool("dry-run", false, "print every command and file instead of acting")
	realNodes := fs.Int("real-nodes", -1, "real nodes to run (default: LOCAL_REAL_NODES, else as many as the machine holds where it allows them)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: localcluster up [flags]\n\nFlags:\n")
		fs.PrintDefaults()
		fmt.Fprintf(stderr, "\nSettings (environment), with their defaults:\n")
		defaults, _ := localcluster.SettingsFromEnv(func(string) (string, bool) { return "", false })
		for _, kv := range defaults.Env() {
			fmt.Fprintf(stderr, "  %s\n", kv)
		}
		fmt.Fprintf(stderr, "\nLOCAL_DIR puts the stack elsewhere (default _output/local).\n")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	var host localcluster.Host = &localcluster.RealHost{Out: stderr}
	if *dryRun {
		host = &localcluster.DryRunHost{Out: stdout}
	}
	c, err := fromEnv(paths, host, *realNodes)
	if err != nil {
		return err
	}
	c.Retain = *retain
	if !*dryRun {
		c = withoutUnbuilt(c, host)
	}
	if len(c.Config.Nodes) > 0 && !*dryRun {
		if why := localcluster.RealNodesAllowed(); why != "" {
			host.Logf("no real node: %s; starting with kwok nodes only (LOCAL_REAL_NODE=0 says so quietly)", why)
			c = localcluster.New(c.Config.Settings, c.Config.Paths, host, 0)
		} else if missing := c.NodeBinariesMissing(); len(missing) > 0 {
			host.Logf("no real node: not built (%s); run hack/build-node-binaries.sh (make node); starting with kwok nodes only", strings.Join(missing, " "))
			c = localcluster.New(c.Config.Settings, c.Config.Paths, host, 0)
		}
		c.Retain = *retain
	}
	if !*dryRun {
		if err := c.Preflight(); err != nil {
			return err
		}
	}
	host.Logf("starting the local stack in %s (%s)", paths.Dir, summary(c))
	if err := c.Up(ctx); err != nil {
		return err
	}
	if *dryRun {
		return nil
	}
	fmt.Fprintf(stderr, `
  Use it:
    export KUBECONFIG=%[1]s
    %[2]s/kubectl get nodes
    %[2]s/kubectl get tj,pj
    %[2]s/kubectl apply -f artifacts/examples/<example>.yaml
  Logs: %[3]s/<component>.log
  Fake pods: annotate kwok.tensorstack.dev/exit-code=<n> (and kwok.tensorstack.dev/run-duration=<duration>)
  to make a pod's containers exit; see hack/local/kwok-stages/pod-exit-code.yaml.
`, paths.Kubeconfig(), rel(paths.Repo, paths.Bin), rel(paths.Repo, paths.Logs()))
	if run {
		return nil
	}
	if !*foreground {
		fmt.Fprintln(stderr, "  Stop it: hack/local-down.sh (make local-down)")
		return nil
	}
	fmt.Fprintln(stderr, "  Press Ctrl-C to stop everything.")
	superviseErr := c.Supervise(ctx)
	// Stop even if more signals arrive.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
	if superviseErr != nil {
		host.Logf("ERROR: %v; stopping the rest", superviseErr)
	} else {
		host.Logf("signal received; stopping the local stack")
	}
	if err := c.Down(context.Background()); err != nil {
		return err
	}
	return superviseErr
}

// withoutUnbuilt leaves out the optional components that are not built,
// unless their setting asks for them by name: a first make run builds only
// what the stack needs (hack/build-test-binaries.sh --stack), and says here
// how to add the rest.
func withoutUnbuilt(c *localcluster.Cluster, h localcluster.Host) *localcluster.Cluster {
	s := c.Config.Settings
	for _, opt := range []struct {
		setting, binary, what string
		on                    *bool
	}{
		{"LOCAL_KUEUE", "kueue", "Kueue", &s.Kueue},
		{"LOCAL_SCHEDULER_PLUGINS", "kube-scheduler-plugins", "the second scheduler (coscheduling)", &s.SchedulerPlugins},
	} {
		if _, asked := os.LookupEnv(opt.setting); asked || !*opt.on {
			continue
		}
		if info, err := os.Stat(filepath.Join(c.Config.Paths.Bin, opt.binary)); err == nil && !info.IsDir() {
			continue
		}
		h.Logf("%s: not built yet, so not started; %s=1 make run builds and starts it (make test-binaries builds everything)", opt.what, opt.setting)
		*opt.on = false
	}
	if s.Kueue == c.Config.Settings.Kueue && s.SchedulerPlugins == c.Config.Settings.SchedulerPlugins {
		return c
	}
	out := localcluster.New(s, c.Config.Paths, h, len(c.Config.Nodes))
	out.Retain = c.Retain
	return out
}

func summary(c *localcluster.Cluster) string {
	s := c.Config.Settings
	onOff := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	return fmt.Sprintf("training components %s; Workload API %s, scheduler-plugins %s, kueue %s; %d real node(s), %d kwok nodes",
		onOff(s.Training()), onOff(s.GangWorkload), onOff(s.SchedulerPlugins), onOff(s.Kueue), len(c.Config.Nodes), s.FakeNodes)
}

func rel(base, path string) string {
	if r, err := filepath.Rel(base, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}
