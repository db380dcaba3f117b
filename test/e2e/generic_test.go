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
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// TestGenericJobSucceedsByItsRule: a GenericJob whose success rule names
// its workers succeeds when they do, while its server would run on, and the
// server's pod, unfinished, is cleaned up; every container is told every
// replica's address, its own place and the size of the job; kubectl finds
// the job by its short name and in the trainingjobs category.
func TestGenericJobSucceedsByItsRule(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "generic")
	ref := f.Create(framework.NewGenericJob("meet").WithReplicas("server", 1).WithReplicas("worker", 2).
		ExitCode(0).RunFor("8s").Forever("server").
		SucceedsWhen(v1beta1.ReplicaRule{Replicas: []v1beta1.ReplicaSelector{{Type: "worker"}}}))
	pods := f.WaitForRunningPods(ref, 3)
	suffix := ".meet." + f.Namespace + ".svc"
	wantCluster := map[string][]string{"server": {"server-0" + suffix}, "worker": {"worker-0" + suffix, "worker-1" + suffix}}
	ranks := map[string]string{"meet-server-0": "0", "meet-worker-0": "1", "meet-worker-1": "2"}
	for _, p := range pods {
		env := f.ContainerEnv(&p, framework.TrainingContainer(ref.Kind, &p))
		var cluster map[string][]string
		if err := json.Unmarshal([]byte(env["TENSORSTACK_CLUSTER"]), &cluster); err != nil {
			t.Errorf("pod %s: TENSORSTACK_CLUSTER %q: %v", p.Name, env["TENSORSTACK_CLUSTER"], err)
		}
		if got, want := strings.Join(cluster["worker"], ","), strings.Join(wantCluster["worker"], ","); got != want ||
			env["TENSORSTACK_WORKER_HOSTS"] != want || env["TENSORSTACK_SERVER_HOSTS"] != wantCluster["server"][0] {
			t.Errorf("pod %s: cluster %v, hosts %q and %q; want %v", p.Name, cluster, env["TENSORSTACK_WORKER_HOSTS"],
				env["TENSORSTACK_SERVER_HOSTS"], wantCluster)
		}
		if env["TENSORSTACK_RANK"] != ranks[p.Name] || env["TENSORSTACK_WORLD_SIZE"] != "3" ||
			env["TENSORSTACK_REPLICA_TYPE"]+"-"+env["TENSORSTACK_REPLICA_INDEX"] != strings.TrimPrefix(p.Name, "meet-") {
			t.Errorf("pod %s: %s-%s, rank %q of %q; want rank %s of 3", p.Name, env["TENSORSTACK_REPLICA_TYPE"],
				env["TENSORSTACK_REPLICA_INDEX"], env["TENSORSTACK_RANK"], env["TENSORSTACK_WORLD_SIZE"], ranks[p.Name])
		}
	}

	f.WaitForPhase(ref, v1beta1.JobSucceeded)
	f.WaitForPods(ref, "the running server cleaned up", framework.Timeout, func(pods []corev1.Pod) (bool, error) {
		for _, p := range pods {
			if p.Name == "meet-server-0" && p.DeletionTimestamp == nil {
				return false, nil
			}
		}
		return true, nil
	})

	out := f.MustKubectl("get", "gj", "-n", f.Namespace, "-o", "name")
	if strings.TrimSpace(out) != "genericjob.batch.tensorstack.dev/meet" {
		t.Errorf("kubectl get gj: %q", out)
	}
	out = f.MustKubectl("get", "trainingjobs", "-n", f.Namespace)
	if !strings.Contains(out, "meet") || !strings.Contains(out, "Succeeded") {
		t.Errorf("kubectl get trainingjobs does not show the job as Succeeded:\n%s", out)
	}
}

// TestGenericJobFailureRules: a GenericJob whose failure rule names its
// chief runs on when both workers fail for good, leaves their pods as they
// ended, says so in an event, and succeeds by its chief; one whose failure
// rule names the workers fails once both have failed, saying why.
func TestGenericJobFailureRules(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "generic-failures")
	chief := v1beta1.ReplicaRule{Replicas: []v1beta1.ReplicaSelector{{Type: "chief"}}}
	workers := v1beta1.ReplicaRule{Replicas: []v1beta1.ReplicaSelector{{Type: "worker"}}}
	newJob := func(name string, failure v1beta1.ReplicaRule) *framework.JobBuilder {
		return framework.NewGenericJob(name).WithReplicas("chief", 1).WithReplicas("worker", 2).
			ReplicaExitCode("chief", 0).ReplicaRunFor("chief", "20s").
			ReplicaExitCode("worker", 3).ReplicaRunFor("worker", "2s").
			SucceedsWhen(chief).FailsWhen(failure)
	}
	tolerant := f.Create(newJob("tolerant", chief))
	strict := f.Create(newJob("strict", workers))

	// Both workers fail for good while the chief runs: the tolerant job
	// runs on, with its workers' pods left as they ended.
	failedWorkers := func(pods []corev1.Pod) (bool, error) {
		n := 0
		for _, p := range pods {
			if strings.Contains(p.Name, "-worker-") && p.Status.Phase == corev1.PodFailed {
				n++
			}
		}
		return n == 2, nil
	}
	pods := f.WaitForPods(tolerant, "both workers failed", framework.Timeout, failedWorkers)
	uids := map[string]string{}
	for _, p := range pods {
		uids[p.Name] = string(p.UID)
	}
	job := f.WaitForCondition(tolerant, v1beta1.ConditionReplicaFailure, metav1.ConditionTrue, "ReplicaFailed")
	if phase := job.JobStatus().Phase; phase != v1beta1.JobRunning {
		t.Errorf("tolerant job is %s with both workers failed, want Running", phase)
	}
	tolerated := func(ctx context.Context) (int, error) {
		events, err := f.JobEvents(ctx, tolerant)
		n := 0
		for _, e := range events {
			if e.Reason == "FailureTolerated" && e.Type == corev1.EventTypeWarning {
				n += int(max(e.Count, 1))
			}
		}
		return n, err
	}
	f.Eventually(framework.Timeout, "a FailureTolerated event per worker", func(ctx context.Context) (bool, error) {
		n, err := tolerated(ctx)
		return n >= 2, err
	})

	// The strict job fails once both workers have: its rule holds.
	failed := f.WaitForPhase(strict, v1beta1.JobFailed)
	if c := apimeta.FindStatusCondition(failed.JobStatus().Conditions, v1beta1.ConditionFailed); c == nil ||
		c.Reason != "ReplicaFailed" || !strings.Contains(c.Message, "a failure rule holds") {
		t.Errorf("strict job's Failed condition %+v, want ReplicaFailed saying a failure rule holds", c)
	}

	// The tolerant job succeeds by its chief; its workers ran once.
	done := f.WaitForPhase(tolerant, v1beta1.JobSucceeded)
	if n := done.JobStatus().BackoffCount; n != 0 {
		t.Errorf("tolerant job used %d restarts, want none", n)
	}
	if n, err := tolerated(f.Context()); err != nil || n != 2 {
		t.Errorf("%d FailureTolerated events (%v), want one per worker", n, err)
	}
	for _, p := range f.Pods(tolerant) {
		if old, ok := uids[p.Name]; ok && old != string(p.UID) {
			t.Errorf("pod %s was replaced (uid %s, was %s): a replica failed for good runs no more", p.Name, p.UID, old)
		}
	}
}

// TestGenericJobScales: an elastic GenericJob scaled with kubectl scale, by
// a user who holds the namespace's built-in edit role (ours aggregates into
// it), re-forms at the new size: every pod is replaced, each told the new
// world size and the scaled type's hosts, and nothing counts as a restart.
func TestGenericJobScales(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "generic-scale")
	ref := f.Create(framework.NewGenericJob("grow").WithReplicas("coordinator", 1).WithReplicas("worker", 1).
		Forever("coordinator").Forever("worker").Elastic(2, 4, 2))
	before := map[string]string{}
	for _, p := range f.WaitForRunningPods(ref, 2) {
		before[p.Name] = string(p.UID)
	}

	_, err := f.Kube.RbacV1().RoleBindings(f.Namespace).Create(f.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "carol-edits"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "carol"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// RBAC reaches the authorizers through informers: wait for the binding.
	f.Eventually(framework.Timeout, "carol may scale the job", func(context.Context) (bool, error) {
		r := f.KubectlNS("--as=carol", "scale", "gj/grow", "--replicas=4")
		if r.Err != nil && !strings.Contains(r.Stderr, "forbidden") {
			return false, fmt.Errorf("%s", r)
		}
		return r.Err == nil, nil
	})

	pods := f.WaitForPods(ref, "4 pods of the new size running", framework.Timeout, func(pods []corev1.Pod) (bool, error) {
		running := 0
		for _, p := range pods {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && p.UID != types.UID(before[p.Name]) {
				running++
			}
		}
		return running == 4 && len(pods) == 4, nil
	})
	for _, p := range pods {
		env := f.ContainerEnv(&p, framework.TrainingContainer(ref.Kind, &p))
		if env["TENSORSTACK_WORLD_SIZE"] != "4" || strings.Count(env["TENSORSTACK_WORKER_HOSTS"], ",") != 2 {
			t.Errorf("pod %s: world size %q, workers %q; want 4 and three workers", p.Name,
				env["TENSORSTACK_WORLD_SIZE"], env["TENSORSTACK_WORKER_HOSTS"])
		}
	}
	// The job is Pending while it re-forms, and Running again at its new size.
	job := f.WaitForJob(ref, "Running with 4 replicas", framework.Timeout, func(job v1beta1.TrainingJob) (bool, error) {
		st := job.JobStatus()
		return st.Replicas != nil && *st.Replicas == 4 && st.Phase == v1beta1.JobRunning, nil
	})
	if st := job.JobStatus(); st.BackoffCount != 0 {
		t.Errorf("after scaling: backoffCount %d, want 0: a resize is not a failure", st.BackoffCount)
	}
	if out := f.MustKubectl("get", "gj", "grow", "-n", f.Namespace, "-o", "wide"); !strings.Contains(out, "worker:3/3") {
		t.Errorf("kubectl get -o wide does not show the scaled type as worker:3/3:\n%s", out)
	}
}
