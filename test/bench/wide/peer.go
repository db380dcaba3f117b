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

package main

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"tensorstack.dev/training/test/bench/internal/benchkit"
)

// pytorchJobResource is Kubeflow's PyTorchJob custom resource
// (training-operator v1.9.4, manifests/base/crds/kubeflow.org_pytorchjobs.yaml).
var pytorchJobResource = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}

// runPeerJob is the peer: Kubeflow's PyTorchJob of one master and o.pods-1
// workers with the same pod template, made by training-operator.
func (b *bench) runPeerJob(ctx context.Context) (*result, error) {
	r := &result{Workload: workloadPeer, Title: "Kubeflow PyTorchJob (training-operator v1.9.4)", Controller: "training-operator"}
	job, err := peerJob("wide", b.o.pods)
	if err != nil {
		return nil, err
	}
	jobs := b.dynamic.Resource(pytorchJobResource).Namespace(namespace)
	err = b.measure(ctx, r, pytorchJobResource.Resource, b.kubeMetrics, func(ctx context.Context) error {
		_, err := jobs.Create(ctx, job, metav1.CreateOptions{})
		return err
	}, func(ctx context.Context) (any, any, error) {
		got, err := jobs.Get(ctx, job.GetName(), metav1.GetOptions{})
		if err != nil {
			return nil, nil, err
		}
		return got.Object, got.Object["status"], nil
	})
	if err != nil {
		return nil, err
	}
	return r, b.deleteAll(ctx, func(ctx context.Context) error {
		return jobs.Delete(ctx, job.GetName(), metav1.DeleteOptions{})
	})
}

// peerJob is a PyTorchJob of a master and pods-1 workers, each running
// podTemplate (whose container is named pytorch, as Kubeflow asks).
func peerJob(name string, pods int) (*unstructured.Unstructured, error) {
	template, err := benchkit.UnstructuredTemplate(podTemplate())
	if err != nil {
		return nil, err
	}
	replicas := func(n int) map[string]interface{} {
		return map[string]interface{}{"replicas": int64(n), "restartPolicy": "OnFailure", "template": template}
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": pytorchJobResource.GroupVersion().String(),
		"kind":       "PyTorchJob",
		"metadata":   map[string]interface{}{"name": name, "namespace": namespace},
		"spec": map[string]interface{}{
			"pytorchReplicaSpecs": map[string]interface{}{
				"Master": replicas(1),
				"Worker": replicas(pods - 1),
			},
		},
	}}, nil
}
