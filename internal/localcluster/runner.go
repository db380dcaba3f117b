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
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"tensorstack.dev/training/internal/localcluster/spec"
)

// runner carries out what a component says, through the Host: its steps,
// its process and its checks.
type runner struct {
	host  Host
	cfg   spec.Config
	procs processTable
	nodes nodeHost
	kube  *kubeClient

	mu sync.Mutex
	// background holds the result of each component's background steps.
	background map[string]chan error
	finished   map[string]error
}

func newRunner(host Host, cfg spec.Config, procs processTable) *runner {
	return &runner{
		host:       host,
		cfg:        cfg,
		procs:      procs,
		nodes:      nodeHost{host: host, cfg: cfg},
		kube:       &kubeClient{server: cfg.Server(), ca: cfg.PKI("ca.crt"), cert: cfg.PKI("admin.crt"), key: cfg.PKI("admin.key")},
		background: map[string]chan error{},
		finished:   map[string]error{},
	}
}

func (r *runner) timeout() time.Duration { return time.Duration(r.cfg.Settings.Timeout) * time.Second }

// start runs the component's steps, then starts its process.
func (r *runner) start(ctx context.Context, comp *spec.Component) error {
	for _, step := range comp.Steps {
		if err := r.do(ctx, comp, step); err != nil {
			return fmt.Errorf("%s: %w", comp.Name, err)
		}
	}
	if comp.IsProcess() {
		if _, err := r.host.Start(r.process(comp)); err != nil {
			return err
		}
	}
	return nil
}

// process is how the component's process is started: in its node's
// namespaces when it has one, which are known only once their holder runs.
func (r *runner) process(comp *spec.Component) Process {
	path, args := comp.Binary, comp.Args
	if comp.Namespace != nil {
		wrap := r.nodes.wrap(comp.Namespace)
		path, args = wrap[0], append(append(append([]string{}, wrap[1:]...), comp.Binary), comp.Args...)
	}
	p := r.cfg.Paths
	return Process{Name: comp.Name, Path: path, Args: args, Env: comp.Env, LogFile: p.LogFile(comp.Name), PIDFile: p.PIDFile(comp.Name)}
}

// wait waits for each of the component's checks; a process that exits
// meanwhile fails the wait at once.
func (r *runner) wait(ctx context.Context, comp *spec.Component) error {
	var alive func() error
	if comp.IsProcess() {
		alive = func() error {
			if r.procs.pid(comp) == 0 {
				return fmt.Errorf("%s exited; see %s\n%s", comp.Name, spec.RelTo(r.cfg.Paths.Repo, r.cfg.Paths.LogFile(comp.Name)), r.procs.logTail(comp.Name))
			}
			return nil
		}
	}
	for _, check := range comp.Ready {
		if err := r.host.Wait(ctx, Check{What: check.What, Probe: r.probe(check.Probe)}, r.timeout(), alive); err != nil {
			if !r.host.DryRun() && comp.IsProcess() {
				return fmt.Errorf("%w\n%s", err, r.procs.logTail(comp.Name))
			}
			return err
		}
	}
	return nil
}

// beforeStop runs what comes before the component's process stops.
func (r *runner) beforeStop(ctx context.Context, comp *spec.Component) {
	for _, step := range comp.BeforeStop {
		if err := r.do(ctx, comp, step); err != nil {
			r.host.Logf("WARNING: %s: %v", comp.Name, err)
		}
	}
}

// teardown runs every component's Teardown, in reverse order.
func (r *runner) teardown(ctx context.Context, all []*spec.Component) error {
	var errs []error
	for i := len(all) - 1; i >= 0; i-- {
		for _, step := range all[i].Teardown {
			if err := r.do(ctx, all[i], step); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", all[i].Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// do carries out one step.
func (r *runner) do(ctx context.Context, comp *spec.Component, step spec.Step) error {
	if _, ok := step.(spec.Log); !ok {
		r.host.Step(comp.Name, step)
	}
	switch s := step.(type) {
	case spec.Log:
		r.host.Logf("%s", s.Text)
		return nil
	case spec.Apply:
		return r.apply(ctx, s)
	case spec.ApplyTemplate:
		data, err := os.ReadFile(filepath.Join(r.cfg.Paths.Hack(), s.Template))
		if err != nil {
			return err
		}
		return r.kubectl(ctx, spec.Fill(data, s.Values), "apply", "-f", "-")
	case spec.WritePKI:
		return r.writePKI(s)
	case spec.WriteConfigs:
		return r.writeConfigs()
	case spec.Exec:
		_, err := r.host.Run(ctx, Command{Path: s.Command[0], Args: s.Command[1:]})
		return err
	case spec.SaveSysctls:
		return r.nodes.saveSysctls(ctx, s.Names)
	case spec.HoldMountNamespace:
		return r.nodes.holdMountNamespace(ctx, s.Node)
	case spec.MakeCgroups:
		return r.nodes.makeCgroups(s.Cgroup)
	case spec.OpenImageStore:
		return r.nodes.openStore(s.Node)
	case spec.ImportImages:
		if !s.Background || r.host.DryRun() {
			return r.nodes.importImages(ctx, s)
		}
		result := make(chan error, 1)
		r.mu.Lock()
		r.background[comp.Name] = result
		r.mu.Unlock()
		go func() { result <- r.nodes.importImages(context.WithoutCancel(ctx), s) }()
		return nil
	case spec.KillCgroupTasks:
		r.nodes.killCgroupTasks(s.Cgroup)
		return nil
	case spec.CleanContainers:
		r.nodes.cleanContainers(s.Node)
		return nil
	case spec.TeardownNodes:
		return r.nodes.teardown(r.procs)
	case spec.StartMultiKueueWorker:
		return r.startMultiKueueWorker(ctx)
	case spec.StopMultiKueueWorker:
		r.stopMultiKueueWorker(ctx)
		return nil
	}
	return fmt.Errorf("no host action for the step %T", step)
}

// kubectl runs kubectl as the admin, with a discovery cache of the stack's
// own: the start runs kubectl before our apiserver serves, and a cache
// written then would hide our kinds from users' kubectl for hours.
func (r *runner) kubectl(ctx context.Context, stdin []byte, args ...string) error {
	p := r.cfg.Paths
	args = append([]string{"--kubeconfig=" + p.Kubeconfig(), "--cache-dir=" + filepath.Join(p.Dir, "kubectl-cache")}, args...)
	_, err := r.host.Run(ctx, Command{Path: r.cfg.Bin("kubectl"), Args: args, Stdin: stdin})
	return err
}

// apply applies manifest files, one kubectl for all of them; server-side
// takes them over from whoever applied them before.
func (r *runner) apply(ctx context.Context, s spec.Apply) error {
	args := []string{"apply"}
	if s.ServerSide {
		args = append(args, "--server-side", "--force-conflicts")
	}
	for _, f := range s.Files {
		args = append(args, "-f", f)
	}
	return r.kubectl(ctx, nil, args...)
}

// writePKI issues the items in order.
func (r *runner) writePKI(s spec.WritePKI) error {
	if err := r.host.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	p := newPKI(r.host, s.Dir)
	for _, item := range s.Items {
		var err error
		switch i := item.(type) {
		case spec.CA:
			err = p.ca(i.Name, i.CommonName)
		case spec.Cert:
			kind := clientCert
			if i.Server {
				kind = serverCert
			}
			_, _, err = p.cert(i.CA, i.Name, i.Orgs, i.CommonName, kind, i.SANs...)
		case spec.Kubeconfig:
			err = p.client(i.File, i.Server, i.Name, i.Orgs, i.User)
		case spec.KeyPair:
			err = p.keypair(i.Name)
		default:
			err = fmt.Errorf("no way to issue %T", item)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", item, err)
		}
	}
	return nil
}

// writeConfigs renders the configuration files and writes them. The Kueue
// module may be missing from the cache when its binary was built elsewhere.
func (r *runner) writeConfigs() error {
	if r.cfg.Settings.Kueue {
		if err := ensureModule(r.cfg.Paths.Repo, "kueue", "sigs.k8s.io/kueue", r.cfg.Paths.Modules.Kueue); err != nil {
			return err
		}
	}
	files, err := spec.ConfigFiles(r.cfg, r.source())
	if err != nil {
		return err
	}
	for _, f := range files {
		if f.Dir {
			err = r.host.MkdirAll(f.Path, f.Mode)
		} else {
			err = r.host.WriteFile(f.Path, f.Data, f.Mode)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// source reads the machine's files; a dry run wrote no PKI, and reads a
// stand-in for its files.
func (r *runner) source() spec.FileSystem {
	if r.host.DryRun() {
		return spec.FileSystem{Placeholders: r.cfg.Paths.PKI()}
	}
	return spec.FileSystem{}
}

// ensureModule downloads a module the module cache lacks (a binary built
// elsewhere), from the tools module that pins it.
func ensureModule(repo, tool, module, dir string) error {
	if fileExists(dir) {
		return nil
	}
	cmd := exec.Command("go", "mod", "download", module)
	cmd.Dir = filepath.Join(repo, "hack", "tools", tool)
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("downloading %s: %w: %s", module, err, out)
	}
	if !fileExists(dir) {
		return fmt.Errorf("%s is not in the module cache at %s", module, dir)
	}
	return nil
}
