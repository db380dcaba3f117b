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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// Kueue's resources, as the e2e tests create and read them.
var (
	KueueWorkloads       = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta1", Resource: "workloads"}
	kueueClusterQueues   = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta1", Resource: "clusterqueues"}
	kueueLocalQueues     = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta1", Resource: "localqueues"}
	kueueResourceFlavors = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta1", Resource: "resourceflavors"}
)

// KueueServed says whether the stack runs Kueue (its Workloads are served).
func (f *Framework) KueueServed() bool {
	list, err := f.Kube.Discovery().ServerResourcesForGroupVersion("kueue.x-k8s.io/v1beta1")
	if err != nil {
		return false
	}
	for _, r := range list.APIResources {
		if r.Name == "workloads" {
			return true
		}
	}
	return false
}

// Dynamic is a dynamic client on the admin credentials.
func (f *Framework) Dynamic() dynamic.Interface {
	f.T.Helper()
	d, err := dynamic.NewForConfig(f.Config)
	if err != nil {
		f.T.Fatal(err)
	}
	return d
}

// NewKueueQueue gives the test a queue of its own: a ResourceFlavor that
// places pods on pool (its node labels and toleration; any node without a
// pool), a ClusterQueue with
// gpus GPUs of it that preempts lower priorities, and a LocalQueue named
// queue in the test's namespace, whose name it returns. The cluster-scoped
// ones are deleted when the test ends, the LocalQueue with the namespace.
func (f *Framework) NewKueueQueue(pool *NodePool, gpus int64, queue string) string {
	f.T.Helper()
	d := f.Dynamic()
	ctx := f.Context()
	name := f.Namespace
	flavor := map[string]any{}
	if pool != nil {
		labels := map[string]any{}
		for k, v := range pool.Selector() {
			labels[k] = v
		}
		tol := pool.Toleration()
		flavor = map[string]any{"nodeLabels": labels, "tolerations": []any{map[string]any{
			"key": tol.Key, "operator": string(tol.Operator), "value": tol.Value, "effect": string(tol.Effect)}}}
	}
	objects := []struct {
		gvr schema.GroupVersionResource
		obj map[string]any
	}{
		{kueueResourceFlavors, map[string]any{
			"kind": "ResourceFlavor", "metadata": map[string]any{"name": name}, "spec": flavor,
		}},
		{kueueClusterQueues, map[string]any{
			"kind": "ClusterQueue", "metadata": map[string]any{"name": name},
			"spec": map[string]any{
				"namespaceSelector": map[string]any{},
				"preemption":        map[string]any{"withinClusterQueue": "LowerPriority"},
				"resourceGroups": []any{map[string]any{
					"coveredResources": []any{"cpu", "memory", string(ResourceGPU)},
					"flavors": []any{map[string]any{"name": name, "resources": []any{
						map[string]any{"name": "cpu", "nominalQuota": "1000"},
						map[string]any{"name": "memory", "nominalQuota": "10Ti"},
						map[string]any{"name": string(ResourceGPU), "nominalQuota": fmt.Sprint(gpus)},
					}}},
				}},
			},
		}},
		{kueueLocalQueues, map[string]any{
			"kind": "LocalQueue", "metadata": map[string]any{"name": queue, "namespace": f.Namespace},
			"spec": map[string]any{"clusterQueue": name},
		}},
	}
	for _, o := range objects {
		u := &unstructured.Unstructured{Object: o.obj}
		u.SetAPIVersion("kueue.x-k8s.io/v1beta1")
		ri := d.Resource(o.gvr)
		var err error
		if u.GetNamespace() != "" {
			_, err = ri.Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
		} else {
			_, err = ri.Create(ctx, u, metav1.CreateOptions{})
			gvr, n := o.gvr, u.GetName()
			f.T.Cleanup(func() { _ = d.Resource(gvr).Delete(context.Background(), n, metav1.DeleteOptions{}) })
		}
		if err != nil {
			f.T.Fatalf("creating %s %s: %v", o.gvr.Resource, u.GetName(), err)
		}
	}
	return queue
}

// Workload returns the job's Kueue Workload.
func (f *Framework) Workload(ctx context.Context, ref JobRef) (*unstructured.Unstructured, error) {
	prefix := "tj-"
	if ref.Kind == KindPyTorch {
		prefix = "pj-"
	}
	return f.Dynamic().Resource(KueueWorkloads).Namespace(f.Namespace).Get(ctx, prefix+ref.Name, metav1.GetOptions{})
}
