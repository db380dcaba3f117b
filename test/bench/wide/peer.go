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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"tensorstack.dev/training/test/bench/internal/benchkit"
)

// pytorchJobResource is Kubeflow's PyTorchJob custom resource
// (training-operator v1.9.4, manifests/base/crds/kubeflow.org_pytorchjobs.yaml).
var pytorchJobResource = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}

// jobSetResource is JobSet's custom resource (v0.12.0,
// config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml).
var jobSetResource = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}

// peer says whether a workload runs under a peer controller, whose process
// the stack does not know.
func peer(workload string) bool {
	return workload == workloadPeer || workload == workloadJobSet
}

// runPeerJob is the peer: Kubeflow's PyTorchJob of one master and o.pods-1
// workers with the same pod template, made by training-operator.
func (b *bench) runPeerJob(ctx context.Context) (*result, error) {
	r := &result{Workload: workloadPeer, Title: "Kubeflow PyTorchJob (training-operator v1.9.4)", Controller: "training-operator"}
	job, err := peerJob("wide", b.o.pods)
	if err != nil {
		return nil, err
	}
	return r, b.runCustom(ctx, r, pytorchJobResource, job)
}

// runJobSet is the second peer: a JobSet of a leader Job of one pod and an
// Indexed Job of o.pods-1 workers, the same pod template. The JobSet
// controller makes the two Jobs, kube-controller-manager's Job controller
// their pods: both processes' CPU is counted.
func (b *bench) runJobSet(ctx context.Context) (*result, error) {
	r := &result{Workload: workloadJobSet, Title: "JobSet v0.12.0 (its pods by kube-controller-manager)",
		Controller: "jobset", PodMaker: "kube-controller-manager"}
	js, err := jobSet("wide", b.o.pods)
	if err != nil {
		return nil, err
	}
	return r, b.runCustom(ctx, r, jobSetResource, js)
}

// runCustom measures a custom resource's object until its pods exist, then
// deletes it.
func (b *bench) runCustom(ctx context.Context, r *result, resource schema.GroupVersionResource, obj *unstructured.Unstructured) error {
	client := b.dynamic.Resource(resource).Namespace(namespace)
	err := b.measure(ctx, r, resource.Resource, b.kubeMetrics, func(ctx context.Context) error {
		_, err := client.Create(ctx, obj, metav1.CreateOptions{})
		return err
	}, func(ctx context.Context) (any, any, error) {
		got, err := client.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil {
			return nil, nil, err
		}
		return got.Object, got.Object["status"], nil
	})
	if err != nil {
		return err
	}
	// In the background, as for the Indexed Job: the Jobs and pods go with
	// their owner.
	background := metav1.DeletePropagationBackground
	return b.deleteAll(ctx, func(ctx context.Context) error {
		return client.Delete(ctx, obj.GetName(), metav1.DeleteOptions{PropagationPolicy: &background})
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

// jobSet is a JobSet of two replicated Jobs, each once: leader, of one pod,
// and worker, an Indexed Job of pods-1 pods all at once; each pod runs
// podTemplate, with restartPolicy Never as a Job's pods need.
func jobSet(name string, pods int) (*unstructured.Unstructured, error) {
	t := podTemplate()
	t.Spec.RestartPolicy = corev1.RestartPolicyNever
	template, err := benchkit.UnstructuredTemplate(t)
	if err != nil {
		return nil, err
	}
	replicatedJob := func(name string, n int) map[string]interface{} {
		return map[string]interface{}{
			"name":     name,
			"replicas": int64(1),
			"template": map[string]interface{}{
				"spec": map[string]interface{}{
					"completionMode": "Indexed",
					"completions":    int64(n),
					"parallelism":    int64(n),
					"backoffLimit":   int64(0),
					"template":       template,
				},
			},
		}
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": jobSetResource.GroupVersion().String(),
		"kind":       "JobSet",
		"metadata":   map[string]interface{}{"name": name, "namespace": namespace},
		"spec": map[string]interface{}{
			"replicatedJobs": []interface{}{replicatedJob("leader", 1), replicatedJob("worker", pods-1)},
		},
	}}, nil
}
