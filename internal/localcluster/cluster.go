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
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Names and addresses of the stack that no setting changes.
const (
	serviceCIDR    = "10.0.0.0/24"
	serviceFirstIP = "10.0.0.1"
	// Fake addresses kwok reports for pods: nothing listens on them. The
	// fake nodes report loopback, where kwok serves the kubelet API (logs).
	kwokPodCIDR = "10.16.0.0/12"
	kwokNodeIP  = "127.0.0.1"
	kwokUser    = "local-kwok"

	TrainingNamespace  = "tensorstack-system"
	TrainingService    = "training-apiserver"
	TrainingAPIService = "v1beta1.batch.tensorstack.dev"

	// The second scheduler's pods name it in spec.schedulerName.
	schedulerPluginsName = "scheduler-plugins-scheduler"
	schedulerPluginsCRD  = "podgroups.scheduling.x-k8s.io"

	adminUser = "local-admin"
)

// Cluster is one local stack: its settings, where it lives, how many real
// nodes it runs, and the Host it acts through.
type Cluster struct {
	Settings Settings
	Paths    Paths
	Host     Host
	// Nodes are the real nodes this stack runs (none: kwok only).
	Nodes []Node
	// Retain keeps what a failed start made, for inspection.
	Retain bool

	kube *kubeClient
}

// New describes a stack; realNodes is how many real nodes it runs.
func New(s Settings, p Paths, h Host, realNodes int) *Cluster {
	c := &Cluster{Settings: s, Paths: p, Host: h}
	for i := 0; i < realNodes; i++ {
		c.Nodes = append(c.Nodes, newNode(c, i))
	}
	c.kube = &kubeClient{c: c}
	return c
}

func (c *Cluster) server() string {
	return "https://127.0.0.1:" + strconv.Itoa(c.Settings.APIServerPort)
}

func (c *Cluster) timeout() time.Duration { return time.Duration(c.Settings.Timeout) * time.Second }

func (c *Cluster) bin(name string) string { return filepath.Join(c.Paths.Bin, name) }

func (c *Cluster) pki(name string) string { return filepath.Join(c.Paths.PKI(), name) }

func (c *Cluster) config(name string) string { return filepath.Join(c.Paths.Config(), name) }

// kubectl runs kubectl as the admin, with a discovery cache of the stack's
// own: the start runs kubectl before our apiserver serves, and a cache
// written then would hide our kinds from users' kubectl for hours.
func (c *Cluster) kubectl(ctx context.Context, stdin []byte, args ...string) error {
	args = append([]string{"--kubeconfig=" + c.Paths.Kubeconfig(), "--cache-dir=" + filepath.Join(c.Paths.Dir, "kubectl-cache")}, args...)
	_, err := c.Host.Run(ctx, Command{Path: c.bin("kubectl"), Args: args, Stdin: stdin})
	return err
}

// apply applies manifest files.
func (c *Cluster) apply(ctx context.Context, files ...string) error {
	args := []string{"apply"}
	for _, f := range files {
		args = append(args, "-f", f)
	}
	return c.kubectl(ctx, nil, args...)
}

// Components lists every component of this stack, in start order.
func (c *Cluster) Components() ([]*Component, error) {
	s := &c.Settings
	var list []*Component
	add := func(cs ...*Component) { list = append(list, cs...) }
	add(c.filesStep(), c.nodeNetworkStep())
	add(c.etcd(), c.kubeAPIServer())
	if s.SchedulerPlugins {
		add(c.schedulerPluginsCRD())
	}
	if s.Kueue {
		add(c.kueueInstall())
	}
	add(c.kubeControllerManager(), c.kubeScheduler())
	if s.SchedulerPlugins {
		add(c.schedulerPlugins())
	}
	if s.Kueue {
		add(c.kueue(), c.kueueQueues())
	}
	add(c.kwokPolicy(), c.kwok(), c.fakeNodes())
	if len(c.Nodes) > 0 {
		add(c.nodeproxy(), c.realNodeObjects(), c.registry())
		for _, n := range c.Nodes {
			add(n.components()...)
		}
		add(c.storage(), c.localPathProvisioner())
	}
	if s.Training() {
		add(c.trainingAPIService(), c.trainingAPIServer(), c.trainingControllerManager(), c.trainingRoles())
	}
	if s.MultiKueueOn() {
		add(c.multiKueueWorker())
	}
	add(c.defaultServiceAccount())
	return order(list)
}

// processes are the components that run a process, by name.
func (c *Cluster) processes() (map[string]*Component, error) {
	all, err := c.Components()
	if err != nil {
		return nil, err
	}
	out := map[string]*Component{}
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
	var missing []string
	for _, comp := range all {
		if comp.IsProcess() && !executable(comp.Binary) {
			missing = append(missing, relTo(c.Paths.Repo, comp.Binary))
		}
	}
	if !executable(c.bin("kubectl")) {
		missing = append(missing, relTo(c.Paths.Repo, c.bin("kubectl")))
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
				relTo(c.Paths.Repo, c.Paths.Dir), strings.Join(running, " "))
		}
	}
	// What a crashed earlier stack left on the machine goes first.
	if err := c.teardown(ctx, all); err != nil {
		return err
	}
	if err := c.Host.RemoveAll(c.Paths.Dir); err != nil {
		return err
	}
	for _, d := range []string{c.Paths.Dir, c.Paths.Logs(), c.Paths.PIDs(), c.Paths.Config()} {
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
		c.Host.Logf("start-up failed; stopping what was started (logs stay in %s)", relTo(c.Paths.Repo, c.Paths.Logs()))
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
func (c *Cluster) runAll(ctx context.Context, all []*Component) error {
	if c.Host.DryRun() {
		return c.runInOrder(ctx, all)
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
			go func(comp *Component) {
				err := c.startComponent(ctx, comp)
				if err == nil {
					err = c.waitComponent(ctx, comp)
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

// runInOrder starts and waits for one component after another.
func (c *Cluster) runInOrder(ctx context.Context, all []*Component) error {
	for _, comp := range all {
		if err := c.startComponent(ctx, comp); err != nil {
			return err
		}
		if err := c.waitComponent(ctx, comp); err != nil {
			return err
		}
	}
	return nil
}

func afterReady(comp *Component, ready map[string]bool) bool {
	for _, a := range comp.After {
		if !ready[a] {
			return false
		}
	}
	return true
}

func (c *Cluster) startComponent(ctx context.Context, comp *Component) error {
	if comp.Do != nil {
		if err := comp.Do(ctx); err != nil {
			return fmt.Errorf("%s: %w", comp.Name, err)
		}
	}
	if comp.IsProcess() {
		if _, err := c.Host.Start(comp.process(c.Paths)); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) waitComponent(ctx context.Context, comp *Component) error {
	var alive func() error
	if comp.IsProcess() {
		alive = func() error {
			if c.pid(comp) == 0 {
				return fmt.Errorf("%s exited; see %s\n%s", comp.Name, relTo(c.Paths.Repo, c.Paths.LogFile(comp.Name)), c.logTail(comp.Name))
			}
			return nil
		}
	}
	for _, check := range comp.Ready {
		if err := c.Host.Wait(ctx, check, c.timeout(), alive); err != nil {
			if !c.Host.DryRun() && comp.IsProcess() {
				return fmt.Errorf("%w\n%s", err, c.logTail(comp.Name))
			}
			return err
		}
	}
	return nil
}

func (c *Cluster) logTail(name string) string {
	data, err := os.ReadFile(c.Paths.LogFile(name))
	if err != nil {
		return ""
	}
	return "---- last lines of " + relTo(c.Paths.Repo, c.Paths.LogFile(name)) + " ----\n" + lastLines(strings.TrimRight(string(data), "\n"), 25) + "\n----"
}

// pid is the component's running process from its pid file, or 0.
func (c *Cluster) pid(comp *Component) int {
	pid := c.Host.ReadPID(c.Paths.PIDFile(comp.Name))
	if !comp.runs(c.Host, pid, c.home(comp)) {
		return 0
	}
	return pid
}

func (c *Cluster) home(comp *Component) string {
	if comp.Home != "" {
		return comp.Home
	}
	return c.Paths.Dir
}

// strays are the processes of the stack's binaries found in /proc, by
// component, whether or not a pid file knows them.
func (c *Cluster) strays(procs map[string]*Component) map[string][]int {
	found := map[string][]int{}
	for _, pid := range c.Host.PIDs() {
		for _, name := range sortedKeys(procs) {
			if procs[name].runs(c.Host, pid, c.home(procs[name])) {
				found[name] = append(found[name], pid)
				break
			}
		}
	}
	return found
}

// Running names the components of this stack that run.
func (c *Cluster) Running() []string {
	procs, err := c.processes()
	if err != nil {
		return nil
	}
	strays := c.strays(procs)
	var out []string
	for _, name := range sortedKeys(procs) {
		if c.pid(procs[name]) != 0 || len(strays[name]) > 0 {
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
	if c.Settings.MultiKueueOn() {
		c.multiKueueWorkerDown(ctx)
	}
	procs, _ := c.processes()
	strays := c.strays(procs)
	stopped := false
	for i := len(all) - 1; i >= 0; i-- {
		comp := all[i]
		if !comp.IsProcess() {
			continue
		}
		if comp.BeforeStop != nil && c.pid(comp) != 0 {
			comp.BeforeStop()
		}
		if c.stopProcess(comp, strays[comp.Name]) {
			stopped = true
		}
	}
	if err := c.teardown(ctx, all); err != nil {
		return err
	}
	if stopped {
		c.Host.Logf("local stack stopped")
	} else {
		c.Host.Logf("no local stack was running")
	}
	return nil
}

// stopProcess stops the component's process and any stray of it; it says
// whether one ran.
func (c *Cluster) stopProcess(comp *Component, strays []int) bool {
	timeout := comp.StopTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	found := false
	if pid := c.pid(comp); pid != 0 {
		c.Host.Logf("stopping %s (pid %d)", comp.Name, pid)
		c.Host.Stop(comp.Name, pid, timeout)
		found = true
	} else if recorded := c.Host.ReadPID(c.Paths.PIDFile(comp.Name)); recorded != 0 && len(strays) == 0 {
		// It was started and is gone: say so, with why, rather than leave
		// a failed run to guess what stopped answering.
		c.Host.Logf("%s (pid %d) had exited before the stop\n%s", comp.Name, recorded, c.logTail(comp.Name))
	}
	for _, pid := range strays {
		if comp.runs(c.Host, pid, c.home(comp)) {
			c.Host.Logf("stopping stray %s (pid %d) left from an earlier run", comp.Name, pid)
			c.Host.Stop(comp.Name, pid, timeout)
			found = true
		}
	}
	_ = c.Host.Remove(c.Paths.PIDFile(comp.Name))
	return found
}

// teardown runs every step's Teardown, in reverse order.
func (c *Cluster) teardown(ctx context.Context, all []*Component) error {
	var errs []error
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Teardown != nil {
			if err := all[i].Teardown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", all[i].Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// background makes a step of slow work that runs while the loop goes on: do
// starts it, done holds once it finished and fails with its error. A dry run
// does it at once, so the output keeps its order.
func (c *Cluster) background(work func(context.Context) error) (do func(context.Context) error, done func(context.Context) error) {
	result := make(chan error, 1)
	var finished bool
	var err error
	do = func(ctx context.Context) error {
		if c.Host.DryRun() {
			return work(ctx)
		}
		go func() { result <- work(context.WithoutCancel(ctx)) }()
		return nil
	}
	done = func(context.Context) error {
		if c.Host.DryRun() {
			return nil
		}
		if !finished {
			select {
			case err = <-result:
				finished = true
			default:
				return fmt.Errorf("still running")
			}
		}
		if err != nil {
			return permanent{err}
		}
		return nil
	}
	return do, done
}

// permanent is a probe's error that retrying cannot mend.
type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

// heldFile marks a component stopped on purpose (Restart), so Supervise
// leaves the stack up.
func (c *Cluster) heldFile(name string) string {
	return filepath.Join(c.Paths.PIDs(), name+".held")
}

// component finds one process of the stack, among procs, by name.
func (c *Cluster) component(procs map[string]*Component, name string) (*Component, error) {
	comp, ok := procs[name]
	if !ok && len(c.Nodes) > 0 {
		// "kubelet" is the first real node's, as when there was one.
		comp, ok = procs[c.Nodes[0].componentName(name)]
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
	if err := c.Host.WriteFile(c.heldFile(name), []byte("stopped on purpose\n"), 0o644); err != nil {
		return err
	}
	if stop {
		if !c.stopProcess(comp, c.strays(procs)[name]) {
			c.Host.Logf("%s was not running", name)
		}
	}
	if !start {
		return nil
	}
	if pid := c.pid(comp); pid != 0 {
		return fmt.Errorf("%s is already running (pid %d)", name, pid)
	}
	for _, p := range comp.Ports {
		if c.Host.PortInUse(p.Port) {
			return fmt.Errorf("port %d (%s, %s) is already in use", p.Port, name, p.Setting)
		}
	}
	if err := c.startComponent(ctx, &Component{Name: comp.Name, Binary: comp.Binary, Args: comp.Args, Env: comp.Env, Wrap: comp.Wrap}); err != nil {
		return err
	}
	if err := c.waitComponent(ctx, comp); err != nil {
		return err
	}
	return c.Host.Remove(c.heldFile(name))
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
	pid := c.pid(comp)
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
		if err := c.checkProcesses(procs); err != nil {
			return err
		}
	}
}

// checkProcesses fails naming the first process that does not run and was
// not stopped on purpose (Restart marks those held).
func (c *Cluster) checkProcesses(procs map[string]*Component) error {
	for _, name := range sortedKeys(procs) {
		if c.pid(procs[name]) == 0 && !fileExists(c.heldFile(name)) {
			return fmt.Errorf("%s exited unexpectedly\n%s", name, c.logTail(name))
		}
	}
	return nil
}
