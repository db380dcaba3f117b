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
	"encoding/json"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/jobclient"
	"tensorstack.dev/training/test/bench/internal/benchkit"
	"tensorstack.dev/training/test/e2e/framework"
)

// result is one run: a workload of o.pods pods, from its create until every
// pod exists, and o.settle more for its status writes.
type result struct {
	// Workload is one of the workload names, Title the table's heading.
	Workload string `json:"workload"`
	Title    string `json:"title"`
	// AllPods is from the create until the last pod was seen.
	AllPods time.Duration `json:"allPods"`
	Pods    int           `json:"pods"`
	// ControllerCPU is the CPU seconds of the process that made the pods,
	// from the create until the settle ended.
	ControllerCPU float64 `json:"controllerCPU"`
	Controller    string  `json:"controller"`
	// PodMaker is the component that makes the pods when the controller
	// does not (a JobSet's Jobs are kube-controller-manager's), and
	// PodMakerCPU its CPU seconds over the same time.
	PodMaker     string  `json:"podMaker,omitempty"`
	PodMakerCPU  float64 `json:"podMakerCPU,omitempty"`
	StatusWrites float64 `json:"statusWrites"`
	// StatusBytes and ObjectBytes are the sizes of the largest status seen
	// and of its object, in JSON.
	StatusBytes int `json:"statusBytes"`
	ObjectBytes int `json:"objectBytes"`
	// Settle is how long status writes were still counted.
	Settle time.Duration `json:"settle"`
	// PodBytes is what the workload's pods take in the cluster's etcd,
	// encoded as kube-apiserver stores them (protobuf), once every pod
	// exists; LargestPodBytes the largest of them. ConfigMapBytes is the
	// same for the ConfigMaps the workload's controller made for it.
	PodBytes        int `json:"podBytes"`
	LargestPodBytes int `json:"largestPodBytes"`
	ConfigMapBytes  int `json:"configMapBytes"`
}

// podTemplate is the pod every workload runs: the benchmark jobs' container.
func podTemplate() corev1.PodTemplateSpec {
	job := framework.NewPyTorchJob("template").WithReplicas("worker", 1).Build(namespace).(*v1beta1.PyTorchTrainingJob)
	return job.Spec.ReplicaSpecs[0].Template
}

// runReplicaSet is a second floor: kube-controller-manager's ReplicaSet
// controller making o.pods pods of the same template.
func (b *bench) runReplicaSet(ctx context.Context) (*result, error) {
	r := &result{Workload: workloadReplicaSet, Title: "ReplicaSet (kube-controller-manager)", Controller: "kube-controller-manager"}
	template := podTemplate()
	template.Labels = map[string]string{"bench-wide": "floor"}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "floor", Namespace: namespace},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(int32(b.o.pods)),
			Selector: &metav1.LabelSelector{MatchLabels: template.Labels},
			Template: template,
		},
	}
	err := b.measure(ctx, r, "replicasets", b.kubeMetrics, func(ctx context.Context) error {
		_, err := b.kube.AppsV1().ReplicaSets(namespace).Create(ctx, rs, metav1.CreateOptions{})
		return err
	}, func(ctx context.Context) (any, any, error) {
		got, err := b.kube.AppsV1().ReplicaSets(namespace).Get(ctx, rs.Name, metav1.GetOptions{})
		if err != nil {
			return nil, nil, err
		}
		return got, got.Status, nil
	})
	if err != nil {
		return nil, err
	}
	return r, b.deleteAll(ctx, func(ctx context.Context) error {
		return b.kube.AppsV1().ReplicaSets(namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{})
	})
}

// runIndexedJob is the floor the issue holds jobs to: kube-controller-
// manager's Job controller making o.pods pods of the same template as one
// Indexed Job, each pod its own index, as a training job's replicas are.
func (b *bench) runIndexedJob(ctx context.Context) (*result, error) {
	r := &result{Workload: workloadIndexedJob, Title: "Indexed Job (kube-controller-manager, the floor)", Controller: "kube-controller-manager"}
	template := podTemplate()
	template.Labels = map[string]string{"bench-wide": "indexed-job"}
	template.Spec.RestartPolicy = corev1.RestartPolicyNever
	n := int32(b.o.pods)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "indexed", Namespace: namespace},
		Spec: batchv1.JobSpec{
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Completions:    &n,
			Parallelism:    &n,
			Template:       template,
		},
	}
	jobs := b.kube.BatchV1().Jobs(namespace)
	err := b.measure(ctx, r, "jobs", b.kubeMetrics, func(ctx context.Context) error {
		_, err := jobs.Create(ctx, job, metav1.CreateOptions{})
		return err
	}, func(ctx context.Context) (any, any, error) {
		got, err := jobs.Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return nil, nil, err
		}
		return got, got.Status, nil
	})
	if err != nil {
		return nil, err
	}
	background := metav1.DeletePropagationBackground
	return r, b.deleteAll(ctx, func(ctx context.Context) error {
		return jobs.Delete(ctx, job.Name, metav1.DeleteOptions{PropagationPolicy: &background})
	})
}

// trainingJob is a job of one of our kinds with o.pods replicas: one
// leader (a chief, master, coordinator or launcher) and the rest workers.
func (b *bench) trainingJob(workload string) (*framework.JobBuilder, error) {
	workers := int32(b.o.pods - 1)
	switch workload {
	case workloadPyTorch:
		return framework.NewPyTorchJob("wide").WithReplicas("master", 1).WithReplicas("worker", workers), nil
	case workloadTensorFlow:
		return framework.NewTFJob("wide").WithReplicas("chief", 1).WithReplicas("worker", workers), nil
	case workloadXGBoost:
		return framework.NewXGBoostJob("wide").WithReplicas("master", 1).WithReplicas("worker", workers), nil
	case workloadGeneric:
		return framework.NewGenericJob("wide").WithReplicas("coordinator", 1).WithReplicas("worker", workers), nil
	case workloadMPI:
		return framework.NewMPIJob("wide").WithReplicas("launcher", 1).WithReplicas("worker", workers), nil
	}
	return nil, fmt.Errorf("unknown workload %q", workload)
}

// runJob is ours: a job of the workload's kind with o.pods replicas.
func (b *bench) runJob(ctx context.Context, workload string) (*result, error) {
	builder, err := b.trainingJob(workload)
	if err != nil {
		return nil, err
	}
	job := builder.Build(namespace)
	kind, err := jobclient.Of(job)
	if err != nil {
		return nil, err
	}
	r := &result{Workload: workload, Title: kind.Name + " (training-controller-manager)", Controller: "training-controller-manager"}
	jobs := kind.Client(b.training, namespace)
	err = b.measure(ctx, r, kind.Resource, b.trainingMetrics, func(ctx context.Context) error {
		_, err := jobs.Create(ctx, job, metav1.CreateOptions{})
		return err
	}, func(ctx context.Context) (any, any, error) {
		got, err := jobs.Get(ctx, job.GetName())
		if err != nil {
			return nil, nil, err
		}
		return got, got.JobStatus(), nil
	})
	if err != nil {
		return nil, err
	}
	return r, b.deleteAll(ctx, func(ctx context.Context) error {
		return jobs.Delete(ctx, job.GetName(), metav1.DeleteOptions{})
	})
}

// measure creates a workload, times it until o.pods pods exist, and counts
// its status writes (resource's, at the apiserver metrics serves) and the
// controller's CPU until o.settle later; the largest status is sampled
// every second meanwhile.
func (b *bench) measure(ctx context.Context, r *result, resource string, metrics rest.Interface,
	create func(context.Context) error, read func(context.Context) (object, status any, err error)) error {
	pid, err := b.controllerPid(r)
	if err != nil {
		return err
	}
	makerPid := 0
	if r.PodMaker != "" {
		if makerPid, err = b.stack.Pid(r.PodMaker); err != nil {
			return err
		}
	}
	watcher, err := watchPods(ctx, b.kube, namespace)
	if err != nil {
		return err
	}
	defer watcher.stop()
	before, err := benchkit.ScrapeMetrics(ctx, metrics)
	if err != nil {
		return err
	}
	cpuBefore, err := benchkit.CPUSeconds(pid)
	if err != nil {
		return err
	}
	makerBefore, err := b.podMakerCPU(makerPid)
	if err != nil {
		return err
	}
	benchkit.Logf("%s: creating %d pods", r.Title, b.o.pods)
	start := time.Now()
	if err := create(ctx); err != nil {
		return err
	}
	sizes := func() error {
		object, status, err := read(ctx)
		if err != nil {
			return err
		}
		s, _ := json.Marshal(status)
		if len(s) > r.StatusBytes {
			o, _ := json.Marshal(object)
			r.StatusBytes, r.ObjectBytes = len(s), len(o)
		}
		return nil
	}
	if r.AllPods, err = watcher.waitFor(b.o.pods, start, b.o.timeout, sizes); err != nil {
		return err
	}
	r.Pods, r.Settle = b.o.pods, b.o.settle
	benchkit.Logf("%s: %d pods exist after %s; counting status writes for %s more", r.Title, r.Pods,
		r.AllPods.Round(time.Millisecond), b.o.settle)
	if err := b.storedBytes(ctx, r); err != nil {
		return err
	}
	for end := time.Now().Add(b.o.settle); time.Now().Before(end); time.Sleep(time.Second) {
		if err := sizes(); err != nil {
			return err
		}
	}
	cpuAfter, err := benchkit.CPUSeconds(pid)
	if err != nil {
		return err
	}
	r.ControllerCPU = cpuAfter - cpuBefore
	makerAfter, err := b.podMakerCPU(makerPid)
	if err != nil {
		return err
	}
	r.PodMakerCPU = makerAfter - makerBefore
	after, err := benchkit.ScrapeMetrics(ctx, metrics)
	if err != nil {
		return err
	}
	match := func(l map[string]string) bool {
		return l["resource"] == resource && l["subresource"] == "status" && !benchkit.ReadOnlyVerb(l["verb"]) && l["dry_run"] == ""
	}
	r.StatusWrites = after.Sum("apiserver_request_total", match) - before.Sum("apiserver_request_total", match)
	return nil
}

// storedBytes records what the namespace's pods and ConfigMaps take in
// etcd: kube-apiserver stores each as its protobuf encoding (with a
// few bytes of envelope, the same for every object, left out here).
func (b *bench) storedBytes(ctx context.Context, r *result) error {
	pods, err := b.kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range pods.Items {
		n := pods.Items[i].Size()
		r.PodBytes += n
		r.LargestPodBytes = max(r.LargestPodBytes, n)
	}
	configMaps, err := b.kube.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range configMaps.Items {
		if configMaps.Items[i].Name != "kube-root-ca.crt" {
			r.ConfigMapBytes += configMaps.Items[i].Size()
		}
	}
	return nil
}

// controllerPid is the process that makes r's pods: a component of the
// stack, or the peer given on the command line.
func (b *bench) controllerPid(r *result) (int, error) {
	if !peer(r.Workload) {
		return b.stack.Pid(r.Controller)
	}
	if b.o.controllerPid <= 0 {
		return 0, errors.New("-controller-pid is required for " + r.Workload)
	}
	return b.o.controllerPid, nil
}

// podMakerCPU is the CPU seconds of the pod maker's process, none if 0.
func (b *bench) podMakerCPU(pid int) (float64, error) {
	if pid == 0 {
		return 0, nil
	}
	return benchkit.CPUSeconds(pid)
}

// deleteAll deletes a workload and waits until its pods are gone.
func (b *bench) deleteAll(ctx context.Context, del func(context.Context) error) error {
	if err := del(ctx); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, time.Second, b.o.timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := b.kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return len(pods.Items) == 0, nil
	})
}
