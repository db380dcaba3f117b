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
	"k8s.io/utils/ptr"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"
)

// KueueServed says whether the stack runs Kueue: it serves v1beta2
// Workloads, the version the controller uses.
func (f *Framework) KueueServed() bool {
	return f.serves("kueue.x-k8s.io/v1beta2", "workloads")
}

// KueueV1beta1Served says whether the stack still serves Kueue's v1beta1,
// which Kueue v0.20 stops serving and the e2e stack marks unserved.
func (f *Framework) KueueV1beta1Served() bool {
	return f.serves("kueue.x-k8s.io/v1beta1", "workloads")
}

func (f *Framework) serves(groupVersion, resource string) bool {
	list, err := f.Kube.Discovery().ServerResourcesForGroupVersion(groupVersion)
	if err != nil {
		return false
	}
	for _, r := range list.APIResources {
		if r.Name == resource {
			return true
		}
	}
	return false
}

// Kueue is Kueue's typed clientset on the admin credentials.
func (f *Framework) Kueue() kueueclient.Interface {
	f.T.Helper()
	c, err := kueueclient.NewForConfig(f.Config)
	if err != nil {
		f.T.Fatal(err)
	}
	return c
}

// NewKueueQueue gives the test a queue of its own: a ResourceFlavor that
// places pods on pool (its node labels and toleration; any node without a
// pool), a ClusterQueue with gpus GPUs of it that preempts lower
// priorities, and a LocalQueue named queue in the test's namespace, whose
// name it returns. The cluster-scoped ones are deleted when the test ends,
// the LocalQueue with the namespace.
func (f *Framework) NewKueueQueue(pool *NodePool, gpus int64, queue string) string {
	f.T.Helper()
	flavor := &kueuev1beta2.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: f.Namespace}}
	if pool != nil {
		flavor.Spec.NodeLabels = pool.Selector()
		flavor.Spec.Tolerations = []corev1.Toleration{pool.Toleration()}
	}
	f.NewKueueQueueWithFlavor(flavor, gpus, queue)
	return queue
}

// NewKueueQueueWithFlavor is NewKueueQueue on a flavor the test builds; the
// ClusterQueue takes the flavor's name.
func (f *Framework) NewKueueQueueWithFlavor(flavor *kueuev1beta2.ResourceFlavor, gpus int64, queue string) {
	f.T.Helper()
	f.NewKueueQueueWithQuota(flavor, corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("1000"),
		corev1.ResourceMemory: resource.MustParse("10Ti"),
		ResourceGPU:           *resource.NewQuantity(gpus, resource.DecimalSI),
	}, queue)
}

// NewKueueQueueWithQuota is NewKueueQueueWithFlavor with the ClusterQueue's
// nominal quota of cpu, memory and GPUs given; a resource left out has none.
func (f *Framework) NewKueueQueueWithQuota(flavor *kueuev1beta2.ResourceFlavor, quota corev1.ResourceList, queue string) {
	f.T.Helper()
	kc := f.Kueue().KueueV1beta2()
	ctx := f.Context()
	name := flavor.Name
	if _, err := kc.ResourceFlavors().Create(ctx, flavor, metav1.CreateOptions{}); err != nil {
		f.T.Fatalf("creating ResourceFlavor %s: %v", name, err)
	}
	f.T.Cleanup(func() { _ = kc.ResourceFlavors().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	cq := &kueuev1beta2.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kueuev1beta2.ClusterQueueSpec{
			NamespaceSelector: &metav1.LabelSelector{},
			Preemption:        &kueuev1beta2.ClusterQueuePreemption{WithinClusterQueue: kueuev1beta2.PreemptionPolicyLowerPriority},
			ResourceGroups: []kueuev1beta2.ResourceGroup{{
				CoveredResources: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, ResourceGPU},
				Flavors: []kueuev1beta2.FlavorQuotas{{Name: kueuev1beta2.ResourceFlavorReference(name), Resources: []kueuev1beta2.ResourceQuota{
					{Name: corev1.ResourceCPU, NominalQuota: quota[corev1.ResourceCPU]},
					{Name: corev1.ResourceMemory, NominalQuota: quota[corev1.ResourceMemory]},
					{Name: ResourceGPU, NominalQuota: quota[ResourceGPU]},
				}}},
			}},
		},
	}
	if _, err := kc.ClusterQueues().Create(ctx, cq, metav1.CreateOptions{}); err != nil {
		f.T.Fatalf("creating ClusterQueue %s: %v", name, err)
	}
	f.T.Cleanup(func() { _ = kc.ClusterQueues().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	lq := &kueuev1beta2.LocalQueue{
		ObjectMeta: metav1.ObjectMeta{Name: queue, Namespace: f.Namespace},
		Spec:       kueuev1beta2.LocalQueueSpec{ClusterQueue: kueuev1beta2.ClusterQueueReference(name)},
	}
	if _, err := kc.LocalQueues(f.Namespace).Create(ctx, lq, metav1.CreateOptions{}); err != nil {
		f.T.Fatalf("creating LocalQueue %s: %v", queue, err)
	}
}

// Topology levels of a NewTopologyQueue, as node labels.
const (
	LabelBlock = "e2e.tensorstack.dev/block"
	LabelRack  = "e2e.tensorstack.dev/rack"
)

// NewTopologyQueue gives the test a queue whose flavor places pods by
// Kueue's topology-aware scheduling on a pool of racks × nodesPerRack
// nodes of gpus GPUs each, in one block: a Topology (block, rack,
// hostname), a ResourceFlavor that uses it, a ClusterQueue of quota GPUs
// and the LocalQueue queue. Rack j's nodes carry LabelRack <namespace>-r<j>.
func (f *Framework) NewTopologyQueue(racks, nodesPerRack int, gpus, quota int64, queue string) *NodePool {
	f.T.Helper()
	pool := f.NewLabelledNodePool(racks*nodesPerRack, gpus, func(i int) map[string]string {
		return map[string]string{LabelBlock: f.Namespace + "-b0", LabelRack: fmt.Sprintf("%s-r%d", f.Namespace, i/nodesPerRack)}
	})
	kc := f.Kueue().KueueV1beta2()
	topology := &kueuev1beta2.Topology{
		ObjectMeta: metav1.ObjectMeta{Name: f.Namespace},
		Spec: kueuev1beta2.TopologySpec{Levels: []kueuev1beta2.TopologyLevel{
			{NodeLabel: LabelBlock}, {NodeLabel: LabelRack}, {NodeLabel: corev1.LabelHostname},
		}},
	}
	if _, err := kc.Topologies().Create(f.Context(), topology, metav1.CreateOptions{}); err != nil {
		f.T.Fatalf("creating Topology %s: %v", topology.Name, err)
	}
	f.T.Cleanup(func() { _ = kc.Topologies().Delete(context.Background(), topology.Name, metav1.DeleteOptions{}) })
	f.NewKueueQueueWithFlavor(&kueuev1beta2.ResourceFlavor{
		ObjectMeta: metav1.ObjectMeta{Name: f.Namespace},
		Spec: kueuev1beta2.ResourceFlavorSpec{
			NodeLabels:   pool.Selector(),
			Tolerations:  []corev1.Toleration{pool.Toleration()},
			TopologyName: ptr.To(kueuev1beta2.TopologyReference(topology.Name)),
		},
	}, quota, queue)
	return pool
}

// WorkloadName is the name of the job's Kueue Workload: the kind's short
// name, then the job's.
func WorkloadName(ref JobRef) string { return ref.Kind.Short() + "-" + ref.Name }

// Workload returns the job's Kueue Workload.
func (f *Framework) Workload(ctx context.Context, ref JobRef) (*kueuev1beta2.Workload, error) {
	return f.Kueue().KueueV1beta2().Workloads(f.Namespace).Get(ctx, WorkloadName(ref), metav1.GetOptions{})
}
