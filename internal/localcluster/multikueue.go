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
	"os"
	"path/filepath"
	"strings"

	"tensorstack.dev/training/internal/localcluster/spec"
)

// worker is the MultiKueue worker stack, writing its progress into this
// stack's log directory.
func (r *runner) worker() (*Cluster, func(), error) {
	wc := r.cfg.MultiKueueWorkerConfig()
	if r.host.DryRun() {
		return New(wc.Settings, wc.Paths, r.host, 0), func() {}, nil
	}
	if err := os.MkdirAll(r.cfg.Paths.Logs(), 0o755); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(r.cfg.Paths.LogFile("multikueue-worker"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	return New(wc.Settings, wc.Paths, &RealHost{Out: f}, 0), func() { f.Close() }, nil
}

// startMultiKueueWorker starts the worker stack and connects Kueue to it.
func (r *runner) startMultiKueueWorker(ctx context.Context) error {
	worker, done, err := r.worker()
	if err != nil {
		return err
	}
	defer done()
	repo, log := r.cfg.Paths.Repo, r.cfg.Paths.LogFile("multikueue-worker")
	r.host.Logf("starting the MultiKueue worker: a second stack in %s (ports +%d; log: %s)",
		spec.RelTo(repo, worker.Config.Paths.Dir), spec.MultiKueuePortOffset, spec.RelTo(repo, log))
	if err := worker.Up(ctx); err != nil {
		return fmt.Errorf("the MultiKueue worker stack did not start (log: %s): %w", log, err)
	}
	if err := worker.steps.apply(ctx, spec.Apply{Files: []string{r.cfg.Paths.Hack() + "/multikueue/worker.yaml"}}); err != nil {
		return err
	}
	r.host.Logf("connecting Kueue to the worker: Secret %s/%s, MultiKueueCluster worker, AdmissionCheck multikueue, LocalQueue default/multikueue-queue",
		spec.KueueNamespace, spec.MultiKueueWorkerSecret)
	// The worker's kubeconfig carries its certificates inline, as
	// MultiKueue requires.
	kubeconfig := []byte("<" + filepath.Base(worker.Config.Paths.Kubeconfig()) + ">")
	if !r.host.DryRun() {
		if kubeconfig, err = os.ReadFile(worker.Config.Paths.Kubeconfig()); err != nil {
			return err
		}
	}
	secret := fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\n  namespace: %s\nstringData:\n  kubeconfig: |\n%s",
		spec.MultiKueueWorkerSecret, spec.KueueNamespace, indent(string(kubeconfig), "    "))
	if err := r.kubectl(ctx, []byte(secret), "apply", "-f", "-"); err != nil {
		return err
	}
	return r.apply(ctx, spec.Apply{Files: []string{r.cfg.ConfigFile("multikueue-manager.yaml")}})
}

// stopMultiKueueWorker stops the worker stack, if one runs.
func (r *runner) stopMultiKueueWorker(ctx context.Context) {
	worker, done, err := r.worker()
	if err != nil {
		r.host.Logf("WARNING: %v", err)
		return
	}
	defer done()
	if r.host.DryRun() || len(worker.Running()) == 0 {
		return
	}
	r.host.Logf("stopping the MultiKueue worker stack (%s)", spec.RelTo(r.cfg.Paths.Repo, worker.Config.Paths.Dir))
	if err := worker.Down(ctx); err != nil {
		r.host.Logf("WARNING: stopping the MultiKueue worker failed: %v", err)
	}
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}
