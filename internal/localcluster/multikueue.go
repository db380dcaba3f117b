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
	"reflect"
	"strings"
)

// MultiKueue on the local stack (LOCAL_MULTIKUEUE=1): a second stack beside
// this one is the worker cluster Kueue dispatches to. It is a stack like any
// other (its own control plane, Kueue, kwok nodes, our components), in the
// directory DIR-worker on ports multiKueuePortOffset above this stack's, with
// no real node and no second scheduler; it stops with this stack.
const (
	multiKueuePortOffset   = 100
	multiKueueWorkerSecret = "multikueue-worker"
)

func (c *Cluster) multiKueueWorkerDir() string { return c.Paths.Dir + "-worker" }

// multiKueueWorkerCluster describes the worker stack.
func (c *Cluster) multiKueueWorkerCluster(h Host) *Cluster {
	s := c.Settings
	_ = settingFields(&s, func(name, _ string, field reflect.Value) error {
		if isPortSetting(name) {
			field.SetInt(field.Int() + multiKueuePortOffset)
		}
		return nil
	})
	s.MultiKueue, s.RealNode, s.SchedulerPlugins, s.FakeNodes = false, false, false, 4
	// The extra flags (service-account identities, audit logs) are this
	// stack's alone.
	s.APIServerExtraArgs, s.TrainingAPIServerExtraArgs, s.TrainingControllerManagerExtraArgs = nil, nil, nil
	p := c.Paths
	p.Dir, p.Persist = c.multiKueueWorkerDir(), c.multiKueueWorkerDir()+"-persist"
	return New(s, p, h, 0)
}

// workerHost writes the worker's progress into this stack's log directory.
func (c *Cluster) workerHost() (Host, func(), error) {
	if c.Host.DryRun() {
		return c.Host, func() {}, nil
	}
	if err := os.MkdirAll(c.Paths.Logs(), 0o755); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(c.Paths.LogFile("multikueue-worker"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	return &RealHost{Out: f}, func() { f.Close() }, nil
}

func (c *Cluster) multiKueueWorker() *Component {
	return &Component{
		Name: "multikueue-worker",
		Do: func(ctx context.Context) error {
			h, done, err := c.workerHost()
			if err != nil {
				return err
			}
			defer done()
			worker := c.multiKueueWorkerCluster(h)
			c.Host.Logf("starting the MultiKueue worker: a second stack in %s (ports +%d; log: %s)",
				relTo(c.Paths.Repo, worker.Paths.Dir), multiKueuePortOffset, relTo(c.Paths.Repo, c.Paths.LogFile("multikueue-worker")))
			if err := worker.Up(ctx); err != nil {
				return fmt.Errorf("the MultiKueue worker stack did not start (log: %s): %w", c.Paths.LogFile("multikueue-worker"), err)
			}
			if err := worker.apply(ctx, c.Paths.Hack()+"/multikueue/worker.yaml"); err != nil {
				return err
			}
			c.Host.Logf("connecting Kueue to the worker: Secret %s/%s, MultiKueueCluster worker, AdmissionCheck multikueue, LocalQueue default/multikueue-queue",
				kueueNamespace, multiKueueWorkerSecret)
			// The worker's kubeconfig carries its certificates inline, as
			// MultiKueue requires.
			kubeconfig, err := c.readOrPlaceholder(worker.Paths.Kubeconfig())
			if err != nil {
				return err
			}
			secret := fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\n  namespace: %s\nstringData:\n  kubeconfig: |\n%s",
				multiKueueWorkerSecret, kueueNamespace, indent(string(kubeconfig), "    "))
			if err := c.kubectl(ctx, []byte(secret), "apply", "-f", "-"); err != nil {
				return err
			}
			return c.apply(ctx, c.config("multikueue-manager.yaml"))
		},
		Ready: []Check{{
			What: "MultiKueueCluster worker Active and ClusterQueue multikueue-cluster-queue Active",
			Probe: func(ctx context.Context) error {
				if err := c.kube.conditionTrue("/apis/kueue.x-k8s.io/v1beta2/multikueueclusters/worker", "Active")(ctx); err != nil {
					return err
				}
				return c.kube.conditionTrue("/apis/kueue.x-k8s.io/v1beta2/clusterqueues/multikueue-cluster-queue", "Active")(ctx)
			},
		}},
		After: []string{"kueue-queues", "training-roles"},
	}
}

// multiKueueWorkerDown stops the worker stack, if one runs.
func (c *Cluster) multiKueueWorkerDown(ctx context.Context) {
	h, done, err := c.workerHost()
	if err != nil {
		c.Host.Logf("WARNING: %v", err)
		return
	}
	defer done()
	worker := c.multiKueueWorkerCluster(h)
	if c.Host.DryRun() || len(worker.Running()) == 0 {
		return
	}
	c.Host.Logf("stopping the MultiKueue worker stack (%s)", relTo(c.Paths.Repo, worker.Paths.Dir))
	if err := worker.Down(ctx); err != nil {
		c.Host.Logf("WARNING: stopping the MultiKueue worker failed: %v", err)
	}
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}
