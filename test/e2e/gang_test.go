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
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// gangBackend is the controller's gang scheduler in this run of the suite:
// hack/test-e2e.sh runs the gang tests once per backend.
func gangBackend() string {
	if b := os.Getenv("E2E_GANG_BACKEND"); b != "" {
		return b
	}
	return "workload"
}

// gangGroupResource is the group object each backend makes per job.
func gangGroupResource() schema.GroupVersionResource {
	if gangBackend() == "coscheduling" {
		return schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}
	}
	return schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1beta1", Resource: "podgroups"}
}

// gangGroupUID returns the UID of the job's group object, or "" if none.
func gangGroupUID(f *framework.Framework, job string) types.UID {
	f.T.Helper()
	client := dynamic.NewForConfigOrDie(f.Config)
	group, err := client.Resource(gangGroupResource()).Namespace(f.Namespace).Get(f.Context(), job, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return group.GetUID()
}

// gangJob is a TensorFlow job of a chief and workers-1 workers, one GPU
// each, on pool, gang-scheduled.
// gangPool gives a gang test a pool of n nodes with gpus GPUs each. On a
// stack with Kueue, the queue the gang jobs name ("default") is a
// LocalQueue with room for any of them: Kueue admits each job as a whole,
// then its pods are gang-scheduled.
func gangPool(f *framework.Framework, n int, gpus int64) *framework.NodePool {
	f.T.Helper()
	pool := f.NewNodePool(n, gpus)
	if f.KueueServed() {
		f.NewKueueQueue(pool, 1000, "default")
	}
	return pool
}

func gangJob(name string, pods int32, pool *framework.NodePool) *framework.JobBuilder {
	return framework.NewTFJob(name).WithReplicas("chief", 1).WithReplicas("worker", pods-1).
		GPUs(1).OnPool(pool).Gang("default", 0)
}

// bound counts the job's pods that have a node.
func bound(pods []corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// needsGangBackend skips a gang test on a stack started without any gang
// scheduler (LOCAL_GANG_WORKLOAD=0 LOCAL_SCHEDULER_PLUGINS=0).
func needsGangBackend(t *testing.T) {
	t.Helper()
	if gangBackend() == "none" {
		t.Skip("the local stack runs no gang scheduler")
	}
	t.Logf("gang scheduling backend: %s", gangBackend())
}

// TestGangTwoJobsOnEightGPUs: two jobs of six one-GPU pods on nodes with
// room for eight GPUs. Without gang scheduling each would get some GPUs and
// both would wait forever (artifacts/deploy/README.md); with it one job has
// all its pods placed and the other none, until the first finishes.
func TestGangTwoJobsOnEightGPUs(t *testing.T) {
	t.Parallel()
	needsGangBackend(t)
	f := framework.New(t, "gang-two")
	pool := gangPool(f, 2, 4)
	a := f.Create(gangJob("job-a", 6, pool).ExitCode(0).RunFor("15s"))
	b := f.Create(gangJob("job-b", 6, pool).ExitCode(0).RunFor("15s"))

	var first, second framework.JobRef
	f.Eventually(2*time.Minute, "one job with all 6 pods placed", func(context.Context) (bool, error) {
		placedA, placedB := bound(f.Pods(a)), bound(f.Pods(b))
		if placedA > 0 && placedB > 0 {
			return false, framework.Stop("both jobs have pods placed: %d of job-a and %d of job-b", placedA, placedB)
		}
		switch {
		case placedA == 6:
			first, second = a, b
		case placedB == 6:
			first, second = b, a
		default:
			return false, nil
		}
		return true, nil
	})
	f.WaitForCondition(second, v1beta1.ConditionGangScheduled, metav1.ConditionFalse, "WaitingForGang")
	// While the first runs, the second gets nothing: not 2 pods, none.
	f.Consistently(5*time.Second, second.Name+" has no pod placed", func(context.Context) error {
		if n := bound(f.Pods(second)); n != 0 {
			return fmt.Errorf("%d pods of %s placed while %s holds 6 of the 8 GPUs", n, second.Name, first.Name)
		}
		return nil
	})
	f.WaitForPhase(first, v1beta1.JobSucceeded)
	f.WaitForPhase(second, v1beta1.JobSucceeded)
	if !framework.HasCondition(f.MustGetJob(second), v1beta1.ConditionGangScheduled, metav1.ConditionTrue, "GangPlaced") {
		t.Errorf("%s ran without its GangScheduled condition turning True", second.Name)
	}
}

// TestGangNeverFits: a job needing more GPUs than the nodes have gets none,
// and its condition says why, with the scheduler's words.
func TestGangNeverFits(t *testing.T) {
	t.Parallel()
	needsGangBackend(t)
	f := framework.New(t, "gang-never")
	pool := gangPool(f, 2, 4)
	ref := f.Create(gangJob("too-big", 10, pool))
	job := f.WaitForCondition(ref, v1beta1.ConditionGangScheduled, metav1.ConditionFalse, "WaitingForGang")
	if c := framework.Condition(job, v1beta1.ConditionGangScheduled); !strings.Contains(c.Message, "0 of 10 pods placed") {
		t.Errorf("GangScheduled message %q, want it to count 0 of 10 pods placed", c.Message)
	}
	f.Consistently(10*time.Second, "no pod of the job placed", func(context.Context) error {
		if n := bound(f.Pods(ref)); n != 0 {
			return fmt.Errorf("%d of the 10 pods placed on 8 GPUs", n)
		}
		return nil
	})
	if job := f.MustGetJob(ref); job.JobStatus().Phase != v1beta1.JobPending {
		t.Errorf("phase %s, want Pending", job.JobStatus().Phase)
	}
	r := f.KubectlNS("get", ref.KubectlName(), "--no-headers")
	if !strings.Contains(r.Stdout, "Pending (WaitingForGang)") {
		t.Errorf("kubectl get shows %q, want the phase Pending (WaitingForGang)", r.Stdout)
	}
}

// TestGangEveryKind: every kind's replicas form one gang, the launcher or
// master with the workers: a job of 10 one-GPU pods on 8 GPUs gets none
// placed, and says it waits for its gang.
func TestGangEveryKind(t *testing.T) {
	t.Parallel()
	needsGangBackend(t)
	for _, kind := range []struct {
		newJob func(string) *framework.JobBuilder
		first  string
	}{{framework.NewXGBoostJob, "master"}, {framework.NewGenericJob, "coordinator"}, {framework.NewMPIJob, "launcher"}} {
		job := kind.newJob("too-big")
		t.Run(string(job.Kind()), func(t *testing.T) {
			t.Parallel()
			f := framework.New(t, "gang-kind")
			pool := gangPool(f, 2, 4)
			ref := f.Create(job.WithReplicas(kind.first, 1).WithReplicas("worker", 9).GPUs(1).OnPool(pool).Gang("default", 0))
			f.WaitForCondition(ref, v1beta1.ConditionGangScheduled, metav1.ConditionFalse, "WaitingForGang")
			f.Consistently(5*time.Second, "no pod of the job placed", func(context.Context) error {
				if n := bound(f.Pods(ref)); n != 0 {
					return fmt.Errorf("%d of the 10 pods placed on 8 GPUs", n)
				}
				return nil
			})
		})
	}
}

// TestGangPauseResumeAndRestart: pausing a gang job deletes its pods and
// keeps its group; a job resized while paused resumes with the same group,
// resized; a replica whose pod is deleted is replaced, and the group admits
// the replacement.
func TestGangPauseResumeAndRestart(t *testing.T) {
	t.Parallel()
	needsGangBackend(t)
	f := framework.New(t, "gang-pause")
	pool := gangPool(f, 1, 8)
	// A deleted pod counts as a failure of its replica: OnFailure restarts it.
	ref := f.Create(gangJob("pausable", 4, pool).WithRestartPolicy("worker", v1beta1.RestartPolicyOnFailure))
	f.WaitForRunningPods(ref, 4)
	group := gangGroupUID(f, ref.Name)
	if group == "" {
		t.Fatalf("no %s for the job", gangGroupResource())
	}

	f.MustAction(ref, "pause", "")
	f.WaitForPhase(ref, v1beta1.JobPaused)
	f.WaitForNoPods(ref, framework.Timeout)
	if uid := gangGroupUID(f, ref.Name); uid != group {
		t.Fatalf("after pause the group is %q, want the same %q", uid, group)
	}
	// Resized while paused, as a job should be: the gang follows.
	f.MustKubectl("patch", ref.KubectlName(), "-p", `{"spec":{"replicaSpecs":[{"type":"worker","replicas":2}]}}`)
	f.MustAction(ref, "resume", "")
	pods := f.WaitForRunningPods(ref, 3)
	if uid := gangGroupUID(f, ref.Name); uid != group {
		t.Errorf("after resume the group is %q, want the same %q", uid, group)
	}

	// A replica restart: delete one worker's pod; its replacement must be
	// placed although the other two are already running.
	var victim corev1.Pod
	for _, p := range pods {
		if p.Labels[v1beta1.LabelReplicaType] == "worker" {
			victim = p
			break
		}
	}
	if err := f.Kube.CoreV1().Pods(f.Namespace).Delete(f.Context(), victim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.WaitForPods(ref, "the deleted worker replaced and placed", framework.Timeout, func(pods []corev1.Pod) (bool, error) {
		for _, p := range pods {
			if p.Name == victim.Name && p.UID != victim.UID && p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning {
				return true, nil
			}
		}
		return false, nil
	})
}
