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
	"fmt"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// dependentsGone waits until nothing the controller created for the job is
// left: pods, the Service, the TensorBoard Deployment and Service, and the
// TensorBoard's ReplicaSets.
func dependentsGone(f *framework.Framework, ref framework.JobRef) {
	f.T.Helper()
	tb := ref.Name + "-tensorboard"
	f.Eventually(framework.GCTimeout, fmt.Sprintf("the dependents of %s to be garbage-collected", ref), func(ctx context.Context) (bool, error) {
		var left []string
		pods, err := f.ListPods(ctx, ref)
		if err != nil {
			return false, err
		}
		for _, p := range pods {
			left = append(left, "pod/"+p.Name)
		}
		for _, name := range []string{ref.Name, tb} {
			_, err := f.Kube.CoreV1().Services(ref.Namespace).Get(ctx, name, metav1.GetOptions{})
			switch {
			case err == nil:
				left = append(left, "service/"+name)
			case !apierrors.IsNotFound(err):
				return false, err
			}
		}
		_, err = f.Kube.AppsV1().Deployments(ref.Namespace).Get(ctx, tb, metav1.GetOptions{})
		switch {
		case err == nil:
			left = append(left, "deployment/"+tb)
		case !apierrors.IsNotFound(err):
			return false, err
		}
		rss, err := f.Kube.AppsV1().ReplicaSets(ref.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, rs := range rss.Items {
			left = append(left, "replicaset/"+rs.Name)
		}
		if len(left) > 0 {
			return false, fmt.Errorf("still there: %v", left)
		}
		return true, nil
	})
}

// TestDeleteJobCollectsDependents: deleting a job (kubectl delete, in the
// background) lets kube-controller-manager's garbage collector remove its
// pods, Service and TensorBoard through their ownerReferences.
func TestDeleteJobCollectsDependents(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "gc")
	ref := f.Create(framework.NewTFJob("doomed").WithReplicas("chief", 1).WithReplicas("worker", 2).
		TensorBoard("docker.io/tensorflow/tensorflow:2.16.1", "t9k://pvc/logs/train"))
	f.WaitForRunningPods(ref, 3)
	job := f.MustGetJob(ref)
	deploy, svc := waitForTensorBoard(f, ref)
	checkOwnedByJob(t, job, ref.Kind, deploy)
	checkOwnedByJob(t, job, ref.Kind, svc)
	checkService(t, f, job, ref, []replicaGroup{{"chief", 1, 2222}, {"worker", 2, 2222}})

	f.MustKubectl("delete", ref.KubectlName(), "--wait=false")
	f.WaitForJobGone(ref, framework.Timeout)
	dependentsGone(f, ref)
}

// TestForegroundDeletion: with foreground propagation the job stays, marked
// for deletion, until the garbage collector has removed its pods.
func TestForegroundDeletion(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "fg")
	ref := f.Create(framework.NewPyTorchJob("foreground").WithReplicas("master", 1).WithReplicas("worker", 2))
	f.WaitForRunningPods(ref, 3)
	fg := metav1.DeletePropagationForeground
	err := f.Training.BatchV1beta1().PyTorchTrainingJobs(f.Namespace).Delete(f.Context(), ref.Name, metav1.DeleteOptions{PropagationPolicy: &fg})
	if err != nil {
		t.Fatal(err)
	}
	job, err := f.GetJob(f.Context(), ref)
	switch {
	case apierrors.IsNotFound(err):
		// The collector was quick; the pods must be gone already.
		if pods := f.Pods(ref); len(pods) != 0 {
			t.Errorf("the job is gone but %d pods are left: %v", len(pods), podSummary(pods))
		}
	case err != nil:
		t.Fatal(err)
	default:
		if job.GetDeletionTimestamp() == nil || !slices.Contains(job.GetFinalizers(), metav1.FinalizerDeleteDependents) {
			t.Errorf("after a foreground delete: deletionTimestamp %v finalizers %v, want the %s finalizer",
				job.GetDeletionTimestamp(), job.GetFinalizers(), metav1.FinalizerDeleteDependents)
		}
	}
	f.WaitForJobGone(ref, framework.GCTimeout)
	dependentsGone(f, ref)
}

// TestDeleteNamespaceWithJobs: the namespace controller deletes the jobs of
// a namespace being deleted (running, paused and finished), and the
// namespace goes away.
func TestDeleteNamespaceWithJobs(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "nsdel")
	running := f.Create(framework.NewTFJob("running").WithReplicas("worker", 2))
	paused := f.Create(framework.NewTFJob("paused").WithReplicas("worker", 1).Paused())
	done := f.Create(framework.NewPyTorchJob("done").WithReplicas("worker", 1).ExitCode(0).RunFor("1s").CleanUp(v1beta1.CleanUpPolicyNone))
	f.WaitForRunningPods(running, 2)
	f.WaitForPhase(paused, v1beta1.JobPaused)
	f.WaitForPhase(done, v1beta1.JobSucceeded)

	if err := f.Kube.CoreV1().Namespaces().Delete(f.Context(), f.Namespace, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Eventually(framework.Timeout, "namespace "+f.Namespace+" to be deleted", func(ctx context.Context) (bool, error) {
		ns, err := f.Kube.CoreV1().Namespaces().Get(ctx, f.Namespace, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return false, fmt.Errorf("phase %s, conditions %+v", ns.Status.Phase, ns.Status.Conditions)
	})
}
