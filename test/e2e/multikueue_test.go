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

package e2e

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/kueue"
	clientset "tensorstack.dev/training/pkg/generated/clientset/versioned"
	"tensorstack.dev/training/test/e2e/framework"
)

// multiKueueQueue is the manager's ClusterQueue whose admission goes through
// the MultiKueue AdmissionCheck (hack/local/multikueue/manager.yaml), and the
// worker's own ClusterQueue (hack/local/kueue/queues.yaml).
const (
	multiKueueClusterQueue = "multikueue-cluster-queue"
	workerClusterQueue     = "cluster-queue"
)

// worker is the MultiKueue worker cluster of the local stack
// (LOCAL_MULTIKUEUE=1, hack/lib/multikueue.sh).
type worker struct {
	*framework.Clients
	kueue kueueclient.Interface
}

func newWorker(t *testing.T) *worker {
	t.Helper()
	kubeconfig := os.Getenv("E2E_MULTIKUEUE_WORKER_KUBECONFIG")
	if kubeconfig == "" {
		t.Skip("the stack has no MultiKueue worker (LOCAL_MULTIKUEUE=1; hack/test-e2e.sh starts one)")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("loading %s: %v", kubeconfig, err)
	}
	w := &worker{Clients: &framework.Clients{Config: cfg}}
	if w.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if w.Training, err = clientset.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if w.kueue, err = kueueclient.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestMultiKueue: Kueue's MultiKueue dispatches a job that names it in
// spec.managedBy to the worker cluster, through its adapter for custom
// jobs. In the manager our controller keeps the job's Workload and nothing
// else; in the worker our controller takes the Workload MultiKueue prebuilt
// and runs the job. The worker's status comes back to the manager's copy,
// and deleting the manager's job deletes the worker's.
func TestMultiKueue(t *testing.T) {
	t.Parallel()
	w := newWorker(t)
	f := framework.New(t, "multikueue")
	ctx := f.Context()

	// The namespace and a LocalQueue of the same name in both clusters.
	const queue = "mk"
	if _, err := w.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.Namespace}},
		metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s in the worker: %v", f.Namespace, err)
	}
	t.Cleanup(func() {
		_ = w.Kube.CoreV1().Namespaces().Delete(context.Background(), f.Namespace, metav1.DeleteOptions{})
	})
	for _, c := range []struct {
		client       kueueclient.Interface
		clusterQueue string
	}{{f.Kueue(), multiKueueClusterQueue}, {w.kueue, workerClusterQueue}} {
		lq := &kueuev1beta2.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: queue},
			Spec: kueuev1beta2.LocalQueueSpec{ClusterQueue: kueuev1beta2.ClusterQueueReference(c.clusterQueue)}}
		if _, err := c.client.KueueV1beta2().LocalQueues(f.Namespace).Create(ctx, lq, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating LocalQueue %s on %s: %v", queue, c.clusterQueue, err)
		}
	}

	// The jobs ask for a GPU per pod: Kueue applies a ClusterQueue's
	// admission checks only to Workloads it assigns a flavor, and a pod
	// that requests none of the queue's resources gets none.
	start := time.Now()
	ref := f.Create(framework.NewPyTorchJob("dispatched").WithReplicas("master", 1).WithReplicas("worker", 1).GPUs(1).
		Label("kueue.x-k8s.io/queue-name", queue).ManagedBy(batch.ManagedByMultiKueue).ExitCode(0).RunFor("10s"))
	var remote v1beta1.TrainingJob
	f.Eventually(framework.Timeout, "the job created in the worker", func(ctx context.Context) (bool, error) {
		job, err := w.GetJob(ctx, ref)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		remote = job
		return err == nil, err
	})
	dispatched := time.Since(start)
	workload := framework.WorkloadName(ref)
	if got := kueue.PrebuiltWorkload(remote); got != workload {
		t.Errorf("the worker's job names prebuilt Workload %q; want the manager's %q", got, workload)
	}
	if remote.CommonSpec().ManagedBy != nil {
		t.Errorf("the worker's job has spec.managedBy %q; want it ours (unset)", *remote.CommonSpec().ManagedBy)
	}

	running := f.WaitForJob(ref, "the worker's Running status copied to the manager", framework.Timeout,
		func(job v1beta1.TrainingJob) (bool, error) { return job.JobStatus().Phase == v1beta1.JobRunning, nil })
	ranAfter := time.Since(start)
	if a := running.JobStatus().Aggregate; a.Running != 2 {
		t.Errorf("copied aggregate %+v; want 2 replicas running", a)
	}
	remotePods, err := w.ListPods(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if len(remotePods) != 2 {
		t.Errorf("pods in the worker while it runs: %v; want 2", podSummary(remotePods))
	}
	f.Eventually(framework.Timeout, "the manager's Workload PodsReady", func(ctx context.Context) (bool, error) {
		wl, err := f.Workload(ctx, ref)
		if err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(wl.Status.Conditions, kueuev1beta2.WorkloadPodsReady), nil
	})
	checkSucceeded(t, f.WaitForPhase(ref, v1beta1.JobSucceeded))
	succeededAfter := time.Since(start)
	if pods := f.Pods(ref); len(pods) != 0 {
		t.Errorf("pods in the manager: %v; want none", podSummary(pods))
	}
	f.Eventually(framework.Timeout, "the manager's Workload Finished", func(ctx context.Context) (bool, error) {
		wl, err := f.Workload(ctx, ref)
		if err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(wl.Status.Conditions, kueuev1beta2.WorkloadFinished), nil
	})

	// Deleting the manager's job deletes the worker's.
	long := f.Create(framework.NewPyTorchJob("deleted").WithReplicas("master", 1).GPUs(1).
		Label("kueue.x-k8s.io/queue-name", queue).ManagedBy(batch.ManagedByMultiKueue))
	f.WaitForJob(long, "the long job Running in the worker", framework.Timeout,
		func(job v1beta1.TrainingJob) (bool, error) { return job.JobStatus().Phase == v1beta1.JobRunning, nil })
	deleteStart := time.Now()
	if err := f.DeleteJob(ctx, long); err != nil {
		t.Fatal(err)
	}
	f.Eventually(framework.GCTimeout, "the worker's copy of the deleted job gone", func(ctx context.Context) (bool, error) {
		_, err := w.GetJob(ctx, long)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	// The other kinds go the same way: dispatched, run in the worker only
	// (the manager's controller leaves a job MultiKueue manages alone), their
	// success copied back.
	for _, newJob := range []func(string) *framework.JobBuilder{framework.NewXGBoostJob, framework.NewGenericJob, framework.NewMPIJob} {
		builder := newJob("dispatched-kind")
		other := f.Create(builder.WithReplicas(builder.Kind().LeadReplicaType(), 1).WithReplicas("worker", 1).GPUs(1).
			Label("kueue.x-k8s.io/queue-name", queue).ManagedBy(batch.ManagedByMultiKueue).ExitCode(0).RunFor("2s"))
		checkSucceeded(t, f.WaitForPhase(other, v1beta1.JobSucceeded))
		if pods := f.Pods(other); len(pods) != 0 {
			t.Errorf("%s: pods in the manager: %v; want none", other, podSummary(pods))
		}
	}

	t.Logf("MultiKueue round trip: in the worker after %v, Running copied back after %v, Succeeded after %v "+
		"(%d pods ran in the worker, none in the manager); the worker's copy deleted %v after the manager's job",
		dispatched.Round(time.Millisecond), ranAfter.Round(time.Millisecond), succeededAfter.Round(time.Millisecond),
		len(remotePods), time.Since(deleteStart).Round(time.Millisecond))
}
