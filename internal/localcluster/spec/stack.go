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

package spec

import "reflect"

// MultiKueue on the local stack (LOCAL_MULTIKUEUE=1): a second stack beside
// this one is the worker cluster Kueue dispatches to. It is a stack like any
// other (its own control plane, Kueue, kwok nodes, our components), in the
// directory DIR-worker on ports MultiKueuePortOffset above this stack's, with
// no real node and no second scheduler; it stops with this stack.
const (
	MultiKueuePortOffset   = 100
	MultiKueueWorkerSecret = "multikueue-worker"
	KueueNamespace         = kueueNamespace
)

// MultiKueueWorkerConfig describes the worker stack.
func (c Config) MultiKueueWorkerConfig() Config {
	s := c.Settings
	_ = settingFields(&s, func(name, _ string, field reflect.Value) error {
		if isPortSetting(name) {
			field.SetInt(field.Int() + MultiKueuePortOffset)
		}
		return nil
	})
	s.MultiKueue, s.RealNode, s.SchedulerPlugins, s.FakeNodes = false, false, false, 4
	// The extra flags (service-account identities, audit logs) are this
	// stack's alone.
	s.APIServerExtraArgs, s.TrainingAPIServerExtraArgs, s.TrainingControllerManagerExtraArgs = nil, nil, nil
	p := c.Paths
	p.Dir = c.Paths.Dir + "-worker"
	p.Persist = p.Dir + "-persist"
	return NewConfig(s, p, 0)
}

// MultiKueueWorker starts the worker stack and connects Kueue to it: the
// worker's objects, the Secret with its kubeconfig, the MultiKueueCluster,
// the AdmissionCheck and the LocalQueue that dispatches.
func MultiKueueWorker(c Config) *Component {
	dir := c.MultiKueueWorkerConfig().Paths.Dir
	return &Component{
		Name:     "multikueue-worker",
		Steps:    []Step{StartMultiKueueWorker{Dir: dir}},
		Teardown: []Step{StopMultiKueueWorker{Dir: dir}},
		Ready: []Check{
			{
				What:  "MultiKueueCluster worker Active",
				Probe: ConditionTrue{Path: "/apis/kueue.x-k8s.io/v1beta2/multikueueclusters/worker", Type: "Active"},
			},
			{
				What:  "ClusterQueue multikueue-cluster-queue Active",
				Probe: ConditionTrue{Path: "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/multikueue-cluster-queue", Type: "Active"},
			},
		},
		After: []string{"kueue-queues", "training-roles"},
	}
}

// Components lists every component of the stack, in start order.
func Components(c Config) ([]*Component, error) {
	s := &c.Settings
	var list []*Component
	add := func(cs ...*Component) { list = append(list, cs...) }
	add(Files(c), NodeNetwork(c))
	add(Etcd(c), KubeAPIServer(c))
	if s.SchedulerPlugins {
		add(SchedulerPluginsCRD(c))
	}
	if s.Kueue {
		add(KueueInstall(c))
	}
	add(KubeControllerManager(c), KubeScheduler(c))
	if s.SchedulerPlugins {
		add(SchedulerPlugins(c))
	}
	if s.Kueue {
		add(Kueue(c), KueueQueues(c))
	}
	add(KwokPolicy(c), Kwok(c), FakeNodes(c))
	if len(c.Nodes) > 0 {
		add(Nodeproxy(c), RealNodeObjects(c), Registry(c))
		for i := range c.Nodes {
			add(RealNode(c, i)...)
		}
		add(Storage(c), LocalPathProvisioner(c))
	}
	if s.Training() {
		add(TrainingAPIRegistration(c), TrainingAPIServer(c), TrainingControllerManager(c), TrainingRoles(c))
	}
	if s.MultiKueueOn() {
		add(MultiKueueWorker(c))
	}
	add(DefaultServiceAccount(c))
	return order(list)
}
