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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"tensorstack.dev/training/test/bench/internal/benchkit"
)

// crdNamespace holds the CRD's jobs, apart from ours.
const crdNamespace = "bench-scale-crd"

// crdJobs is Kubeflow's TFJob CRD served by kube-apiserver, read with the
// dynamic client in JSON.
type crdJobs struct {
	client dynamic.ResourceInterface
}

func (c crdJobs) list(ctx context.Context, opts metav1.ListOptions) (int, string, error) {
	list, err := c.client.List(ctx, opts)
	if err != nil {
		return 0, "", err
	}
	return len(list.Items), list.GetContinue(), nil
}

func (c crdJobs) watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return c.client.Watch(ctx, opts)
}

// crdServer is kube-apiserver holding the CRD's jobs, on the stack's etcd.
func (b *bench) crdServer() server {
	return server{
		component: "kube-apiserver",
		jobs:      crdJobs{client: b.dynamic.Resource(benchkit.TFJobResource).Namespace(crdNamespace)},
		etcdDB:    b.stack.EtcdDB(),
	}
}

// measureCRD stores the same history as Kubeflow TFJobs in kube-apiserver
// (the CRD installed by hack/bench-scale.sh) and measures it as ours. Our
// servers are stopped first, so kube-apiserver has the machine.
func (b *bench) measureCRD(ctx context.Context) (*fillResult, *storageResult, error) {
	for _, component := range []string{"training-controller-manager", "training-apiserver"} {
		if err := b.restart("--stop", component); err != nil {
			return nil, nil, err
		}
	}
	s := b.crdServer()
	r := &storageResult{}
	var err error
	if r.rssEmpty, _, err = b.settledRSS(s); err != nil {
		return nil, nil, err
	}
	fill, err := b.fillCRD(ctx)
	if err != nil {
		return nil, nil, err
	}
	return fill, r, b.measureStorage(ctx, s, r)
}

// fillCRD stores o.jobs TFJobs with the pod templates of ours, and marks all
// but the last o.running of them succeeded, with the status
// training-operator leaves.
func (b *bench) fillCRD(ctx context.Context) (*fillResult, error) {
	if err := benchkit.EnsureNamespace(ctx, b.kube, crdNamespace); err != nil {
		return nil, err
	}
	r := &fillResult{jobs: b.o.jobs, finished: max(b.o.jobs-b.o.running, 0)}
	jobs := b.dynamic.Resource(benchkit.TFJobResource).Namespace(crdNamespace)
	// A custom resource's update needs the resourceVersion.
	created := make([]*unstructured.Unstructured, r.finished)
	benchkit.Logf("storing %d Kubeflow TFJobs", r.jobs)
	var err error
	r.creates, _, err = benchkit.Parallel(ctx, r.jobs, 32, func(ctx context.Context, i int) error {
		job, err := benchkit.KubeflowJob(crdNamespace, jobName(i), benchkit.JobOptions{})
		if err != nil {
			return err
		}
		got, err := jobs.Create(ctx, job, metav1.CreateOptions{})
		if err == nil && i < r.finished {
			created[i] = got
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	benchkit.Logf("stored %d TFJobs in %s; finishing %d", r.jobs, r.creates.Round(time.Second), r.finished)
	started := time.Now().Add(-2 * time.Hour).UTC().Truncate(time.Second)
	completed := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	r.statuses, _, err = benchkit.Parallel(ctx, r.finished, 32, func(ctx context.Context, i int) error {
		job := created[i]
		created[i] = nil
		job.Object["status"] = kubeflowSucceededStatus(started, completed)
		_, err := jobs.UpdateStatus(ctx, job, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, err
	}
	benchkit.Logf("finished %d TFJobs in %s", r.finished, r.statuses.Round(time.Second))
	return r, nil
}

// kubeflowSucceededStatus is the status training-operator leaves on a TFJob
// whose every replica succeeded: its conditions, a count per replica type
// and the times.
func kubeflowSucceededStatus(started, completed time.Time) map[string]interface{} {
	condition := func(typ, status, reason, message string, at time.Time) map[string]interface{} {
		return map[string]interface{}{
			"type": typ, "status": status, "reason": reason, "message": message,
			"lastUpdateTime": at.Format(time.RFC3339), "lastTransitionTime": at.Format(time.RFC3339),
		}
	}
	replicas := map[string]interface{}{}
	for _, r := range benchkit.Shape {
		replicas[r.Kubeflow] = map[string]interface{}{"succeeded": int64(r.Replicas)}
	}
	return map[string]interface{}{
		"conditions": []interface{}{
			condition("Created", "True", "TFJobCreated", "TFJob is created.", started),
			condition("Running", "False", "TFJobRunning", "TFJob is running.", completed),
			condition("Succeeded", "True", "TFJobSucceeded", "TFJob successfully completed.", completed),
		},
		"replicaStatuses": replicas,
		"startTime":       started.Format(time.RFC3339),
		"completionTime":  completed.Format(time.RFC3339),
	}
}
