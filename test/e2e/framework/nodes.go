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

package framework

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ResourceGPU is the extended resource of the simulated GPUs.
const ResourceGPU corev1.ResourceName = "nvidia.com/gpu"

// poolKey labels and taints the nodes of a NodePool.
const poolKey = "e2e.tensorstack.dev/pool"

// NodePool is a set of simulated nodes that belongs to one test: tainted so
// that only the test's pods land there, and sized so that the test knows
// exactly how much room there is.
type NodePool struct {
	Name  string
	Nodes []string
}

// Selector selects the pool's nodes.
func (p *NodePool) Selector() map[string]string { return map[string]string{poolKey: p.Name} }

// Toleration lets a pod onto the pool's nodes.
func (p *NodePool) Toleration() corev1.Toleration {
	return corev1.Toleration{Key: poolKey, Operator: corev1.TolerationOpEqual, Value: p.Name, Effect: corev1.TaintEffectNoSchedule}
}

// NewNodePool creates n simulated nodes with gpus nvidia.com/gpu each, named
// after the test's namespace, and deletes them when the test ends.
func (f *Framework) NewNodePool(n int, gpus int64) *NodePool {
	f.T.Helper()
	return f.NewLabelledNodePool(n, gpus, nil)
}

// NewLabelledNodePool is NewNodePool whose i-th node also carries
// labels(i), when labels is not nil.
func (f *Framework) NewLabelledNodePool(n int, gpus int64, labels func(i int) map[string]string) *NodePool {
	f.T.Helper()
	pool := &NodePool{Name: f.Namespace}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("512Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
		ResourceGPU:           *resource.NewQuantity(gpus, resource.DecimalSI),
	}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-%d", f.Namespace, i)
		nodeLabels := map[string]string{poolKey: pool.Name, "type": "kwok", corev1.LabelHostname: name}
		if labels != nil {
			for k, v := range labels(i) {
				nodeLabels[k] = v
			}
		}
		_, err := f.Kube.CoreV1().Nodes().Create(f.Context(), &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
				Labels:      nodeLabels,
			},
			Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: poolKey, Value: pool.Name, Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
		}, metav1.CreateOptions{})
		if err != nil {
			f.T.Fatalf("creating node %s: %v", name, err)
		}
		pool.Nodes = append(pool.Nodes, name)
		f.T.Cleanup(func() { _ = f.Kube.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	f.Eventually(Timeout, fmt.Sprintf("%d nodes of pool %s Ready", n, pool.Name), func(ctx context.Context) (bool, error) {
		for _, name := range pool.Nodes {
			node, err := f.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			ready := false
			for _, c := range node.Status.Conditions {
				ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
			}
			if !ready {
				return false, nil
			}
		}
		return true, nil
	})
	return pool
}
