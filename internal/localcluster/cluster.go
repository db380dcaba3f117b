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
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"tensorstack.dev/training/internal/localcluster/spec"
)

// The settings and paths of a stack are the specification's.
type (
	Settings = spec.Settings
	Paths    = spec.Paths
	Modules  = spec.Modules
)

// Names of the stack that the scripts and tests use.
const (
	TrainingNamespace  = spec.TrainingNamespace
	TrainingService    = spec.TrainingService
	TrainingAPIService = spec.TrainingAPIService
)

// SettingsFromEnv reads the settings from lookup (os.LookupEnv); see
// spec.SettingsFromEnv.
func SettingsFromEnv(lookup func(string) (string, bool)) (Settings, error) {
	return spec.SettingsFromEnv(lookup)
}

// DefaultPaths are the paths of the checkout at repo, with the stack in dir.
func DefaultPaths(repo, dir string) Paths { return spec.DefaultPaths(repo, dir) }

// FindModules locates the pinned modules in the module cache.
func FindModules(repo string) (Modules, error) { return spec.FindModules(repo) }

// Cluster is one local stack: what it is (the specification's Config), the
// Host it acts through, and its processes. It brings the stack up and down,
// restarts and freezes one process, and supervises them; the components are
// the specification's, and the steps runner carries out what they say.
type Cluster struct {
	Config spec.Config
	Host   Host
	// Retain keeps what a failed start made, for inspection.
	Retain bool

	procs processTable
	steps *runner
}

// New describes a stack; realNodes is how many real nodes it runs.
func New(s Settings, p Paths, h Host, realNodes int) *Cluster {
	cfg := spec.NewConfig(s, p, realNodes)
	procs := processTable{host: h, paths: p}
	return &Cluster{Config: cfg, Host: h, procs: procs, steps: newRunner(h, cfg, procs)}
}

// Components lists every component of this stack, in start order.
func (c *Cluster) Components() ([]*spec.Component, error) { return spec.Components(c.Config) }

// processes are the components that run a process, by name.
func (c *Cluster) processes() (map[string]*spec.Component, error) {
	all, err := c.Components()
	if err != nil {
		return nil, err
	}
	out := map[string]*spec.Component{}
	for _, comp := range all {
		if comp.IsProcess() {
			out[comp.Name] = comp
		}
	}
	return out, nil
}

// Preflight fails when a binary is missing or a port is taken.
func (c *Cluster) Preflight() error {
	all, err := c.Components()
	if err != nil {
		return err
	}
	paths := c.Config.Paths
	var missing []string
	for _, comp := range all {
		if comp.IsProcess() && !executable(comp.Binary) {
			missing = append(missing, spec.RelTo(paths.Repo, comp.Binary))
		}
	}
	if !executable(c.Config.Bin("kubectl")) {
		missing = append(missing, spec.RelTo(paths.Repo, c.Config.Bin("kubectl")))
	}
	if len(missing) > 0 {
		return fmt.Errorf("not built: %s; run make test-binaries (make node for a real node, make build for ours)", strings.Join(missing, " "))
	}
	for _, comp := range all {
		for _, p := range comp.Ports {
			if c.Host.PortInUse(p.Port) {
				return fmt.Errorf("port %d (%s) is already in use on this machine.\n  See what holds it:   ss -ltnp 'sport = :%d'\n  Or pick another:     %s=<free port>",
					p.Port, comp.Name, p.Port, p.Setting)
			}
		}
	}
	return nil
}

// Up starts the stack. On failure it stops what it started, unless Retain.
func (c *Cluster) Up(ctx context.Context) (err error) {
	start := time.Now()
	all, err := c.Components()
	if err != nil {
		return err
	}
	if !c.Host.DryRun() {
		if running := c.Running(); len(running) > 0 {
			return fmt.Errorf("a local stack is already running in %s (%s); stop it first with hack/local-down.sh (make local-down)",
				spec.RelTo(c.Config.Paths.Repo, c.Config.Paths.Dir), strings.Join(running, " "))
		}
	}
	// What a crashed earlier stack left on the machine goes first.
	if err := c.steps.teardown(ctx, all); err != nil {
		return err
	}
	if err := c.Host.RemoveAll(c.Config.Paths.Dir); err != nil {
		return err
	}
	for _, d := range []string{c.Config.Paths.Dir, c.Config.Paths.Logs(), c.Config.Paths.PIDs(), c.Config.Paths.Config()} {
		if err := c.Host.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := c.SaveState(); err != nil {
		return err
	}
	defer func() {
		if err == nil || c.Host.DryRun() {
			return
		}
		if c.Retain {
			c.Host.Logf("start-up failed; everything stays as it is (--retain); stop it with hack/local-down.sh")
			return
		}
		c.Host.Logf("start-up failed; stopping what was started (logs stay in %s)", spec.RelTo(c.Config.Paths.Repo, c.Config.Paths.Logs()))
		if derr := c.Down(context.Background()); derr != nil {
			c.Host.Logf("WARNING: %v", derr)
		}
	}()
	if err := c.runAll(ctx, all); err != nil {
		return err
	}
	c.Host.Logf("local stack ready in %s", time.Since(start).Round(time.Second))
	return nil
}

// runAll is the one loop: every component whose After list is ready starts
// at once, and each is waited for on its own, so a slow one (a node's image
// import) holds up only what comes after it. A dry run goes one component at
// a time, in order, so that its output stays the same.
func (c *Cluster) runAll(ctx context.Context, all []*spec.Component) error {
	if c.Host.DryRun() {
		for _, comp := range all {
			if err := c.steps.start(ctx, comp); err != nil {
				return err
			}
			if err := c.steps.wait(ctx, comp); err != nil {
				return err
			}
		}
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		name string
		err  error
	}
	results := make(chan result, len(all))
	started, ready := map[string]bool{}, map[string]bool{}
	running := 0
	for len(ready) < len(all) {
		for _, comp := range all {
			if started[comp.Name] || !afterReady(comp, ready) {
				continue
			}
			started[comp.Name] = true
			running++
			go func(comp *spec.Component) {
				err := c.steps.start(ctx, comp)
				if err == nil {
					err = c.steps.wait(ctx, comp)
				}
				results <- result{comp.Name, err}
			}(comp)
		}
		if running == 0 {
			return fmt.Errorf("no component can start: their After lists wait for each other")
		}
		r := <-results
		running--
		if r.err != nil {
			return r.err
		}
		ready[r.name] = true
	}
	return nil
}

func afterReady(comp *spec.Component, ready map[string]bool) bool {
	for _, a := range comp.After {
		if !ready[a] {
			return false
		}
	}
	return true
}

// Running names the components of this stack that run.
func (c *Cluster) Running() []string {
	procs, err := c.processes()
	if err != nil {
		return nil
	}
	strays := c.procs.strays(procs)
	var out []string
	for _, name := range sortedKeys(procs) {
		if c.procs.pid(procs[name]) != 0 || len(strays[name]) > 0 {
			out = append(out, name)
		}
	}
	return out
}

// Down stops every process in reverse start order, then undoes what the
// steps made on the machine. It is safe on a stack that is not running.
func (c *Cluster) Down(ctx context.Context) error {
	all, err := c.Components()
	if err != nil {
		return err
	}
	procs, _ := c.processes()
	strays := c.procs.strays(procs)
	stopped := false
	for i := len(all) - 1; i >= 0; i-- {
		comp := all[i]
		if !comp.IsProcess() {
			continue
		}
		if len(comp.BeforeStop) > 0 && c.procs.pid(comp) != 0 {
			c.steps.beforeStop(ctx, comp)
		}
		if c.procs.stop(comp, strays[comp.Name]) {
			stopped = true
		}
	}
	if err := c.steps.teardown(ctx, all); err != nil {
		return err
	}
	if stopped {
		c.Host.Logf("local stack stopped")
	} else {
		c.Host.Logf("no local stack was running")
	}
	return nil
}

// permanent is a probe's error that retrying cannot mend.
type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

// component finds one process of the stack, among procs, by name.
func (c *Cluster) component(procs map[string]*spec.Component, name string) (*spec.Component, error) {
	comp, ok := procs[name]
	if !ok && len(c.Config.Nodes) > 0 {
		// "kubelet" is the first real node's, as when there was one.
		comp, ok = procs[c.Config.Nodes[0].ComponentName(name)]
	}
	if !ok {
		return nil, fmt.Errorf("%s is not a process of this stack (it runs: %s)", name, strings.Join(sortedKeys(procs), " "))
	}
	return comp, nil
}

// Restart stops and/or starts one process with the stack's settings, and
// waits until it is ready again.
func (c *Cluster) Restart(ctx context.Context, name string, stop, start bool) error {
	procs, err := c.processes()
	if err != nil {
		return err
	}
	comp, err := c.component(procs, name)
	if err != nil {
		return err
	}
	if !comp.Restartable {
		return fmt.Errorf("%s cannot be restarted alone", name)
	}
	name = comp.Name
	if err := c.Host.WriteFile(c.procs.heldFile(name), []byte("stopped on purpose\n"), 0o644); err != nil {
		return err
	}
	if stop {
		if !c.procs.stop(comp, c.procs.strays(procs)[name]) {
			c.Host.Logf("%s was not running", name)
		}
	}
	if !start {
		return nil
	}
	if pid := c.procs.pid(comp); pid != 0 {
		return fmt.Errorf("%s is already running (pid %d)", name, pid)
	}
	for _, p := range comp.Ports {
		if c.Host.PortInUse(p.Port) {
			return fmt.Errorf("port %d (%s, %s) is already in use", p.Port, name, p.Setting)
		}
	}
	// The process alone: its steps made what it needs at the stack's start.
	if _, err := c.Host.Start(c.steps.process(comp)); err != nil {
		return err
	}
	if err := c.steps.wait(ctx, comp); err != nil {
		return err
	}
	return c.Host.Remove(c.procs.heldFile(name))
}

// Kill ends one process at once (SIGKILL), as a crash or an OOM kill would,
// with no clean shut-down, then starts it again and waits until it is
// ready.
func (c *Cluster) Kill(ctx context.Context, name string) error {
	procs, err := c.processes()
	if err != nil {
		return err
	}
	comp, err := c.component(procs, name)
	if err != nil {
		return err
	}
	if !comp.Restartable {
		return fmt.Errorf("%s cannot be restarted alone", name)
	}
	pid := c.procs.pid(comp)
	if pid == 0 {
		return fmt.Errorf("%s is not running", comp.Name)
	}
	if err := c.Host.Signal(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("%s (pid %d): %w", comp.Name, pid, err)
	}
	c.Host.Logf("%s (pid %d) killed", comp.Name, pid)
	// Gone, and its ports closed with it: the kernel closes a dead
	// process's sockets once its parent has reaped it.
	for gone := false; !gone; {
		gone = c.procs.pid(comp) == 0
		for _, p := range comp.Ports {
			gone = gone && !c.Host.PortInUse(p.Port)
		}
		if gone {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s (pid %d) still runs or holds its ports after SIGKILL: %w", comp.Name, pid, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return c.Restart(ctx, comp.Name, false, true)
}

// Freeze stops one process where it stands (SIGSTOP), as a machine that
// stops answering without closing its connections; thaw lets it go on
// (SIGCONT). Its supervisor sees it still running.
func (c *Cluster) Freeze(name string, frozen bool) error {
	procs, err := c.processes()
	if err != nil {
		return err
	}
	comp, err := c.component(procs, name)
	if err != nil {
		return err
	}
	pid := c.procs.pid(comp)
	if pid == 0 {
		return fmt.Errorf("%s is not running", comp.Name)
	}
	sig, what := syscall.SIGCONT, "thawed"
	if frozen {
		sig, what = syscall.SIGSTOP, "frozen"
	}
	if err := c.Host.Signal(pid, sig); err != nil {
		return fmt.Errorf("%s (pid %d): %w", comp.Name, pid, err)
	}
	c.Host.Logf("%s (pid %d) %s", comp.Name, pid, what)
	return nil
}

// Supervise watches the processes until ctx ends; when one exits that was
// not stopped on purpose, it returns an error naming it.
func (c *Cluster) Supervise(ctx context.Context) error {
	procs, err := c.processes()
	if err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
		if err := c.procs.checkExited(procs); err != nil {
			return err
		}
	}
}

// Leftovers lists what the real nodes left on the machine, one line each:
// nothing after Down.
func (c *Cluster) Leftovers() []string { return c.steps.nodes.leftovers() }

// NodeBinariesMissing lists what the real nodes need that is not built.
func (c *Cluster) NodeBinariesMissing() []string {
	var missing []string
	for _, b := range []string{"containerd", "ctr", "containerd-shim-runc-v2", "runc", "kubelet", "kube-proxy", "coredns", "nodeproxy",
		"cni/bridge", "cni/host-local", "cni/loopback", "cni/portmap", "registry", "local-path-provisioner"} {
		if !executable(c.Config.Bin(b)) {
			missing = append(missing, b)
		}
	}
	images := c.Config.Paths.Images()
	for _, a := range []string{spec.PauseArchive, spec.TrainingArchive} {
		if !fileExists(filepath.Join(images, a)) {
			missing = append(missing, spec.RelTo(c.Config.Paths.Repo, filepath.Join(images, a)))
		}
	}
	return missing
}
