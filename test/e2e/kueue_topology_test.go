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
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// racksOf says how many of a job's pods run in each rack.
func racksOf(t *testing.T, f *framework.Framework, pods []corev1.Pod) map[string]int {
	t.Helper()
	racks := map[string]int{}
	for _, p := range pods {
		node, err := f.Kube.CoreV1().Nodes().Get(f.Context(), p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("pod %s on node %q: %v", p.Name, p.Spec.NodeName, err)
		}
		racks[node.Labels[framework.LabelRack]]++
	}
	return racks
}

// scheduledPods waits for n pods of the job bound to nodes.
func scheduledPods(f *framework.Framework, ref framework.JobRef, n int) []corev1.Pod {
	var out []corev1.Pod
	f.WaitForPods(ref, fmt.Sprintf("%d pods on nodes", n), framework.Timeout, func(pods []corev1.Pod) (bool, error) {
		out = pods
		bound := 0
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		return len(pods) == n && bound == n, nil
	})
	return out
}

// TestKueueTopology: Kueue's topology-aware scheduling on two racks of four
// GPU slots (two nodes of two GPUs each). Two 4-pod jobs that require a
// rack each run within one rack, one rack each; a 6-pod job that requires a
// rack stays queued with Kueue's reason and no pod, whatever the quota; a
// 6-pod job that prefers a rack runs on as few racks as can hold it, two.
func TestKueueTopology(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "kueue-tas")
	needsKueue(t, f)
	f.NewTopologyQueue(2, 2, 2, 100, "lq")
	rackJob := func(name string, workers int32, key string) *framework.JobBuilder {
		return framework.NewPyTorchJob(name).WithReplicas("master", 1).WithReplicas("worker", workers).GPUs(1).
			Label("kueue.x-k8s.io/queue-name", "lq").Annotate(key, framework.LabelRack).ExitCode(0).RunFor("10s")
	}
	a := f.Create(rackJob("a", 3, batch.AnnotationRequiredTopology))
	b := f.Create(rackJob("b", 3, batch.AnnotationRequiredTopology))
	tooLarge := f.Create(rackJob("six", 5, batch.AnnotationRequiredTopology))
	// A level the Topology does not have: queued, and Kueue's message names it.
	noLevel := f.Create(framework.NewPyTorchJob("nolevel").WithReplicas("master", 1).GPUs(1).
		Label("kueue.x-k8s.io/queue-name", "lq").Annotate(batch.AnnotationRequiredTopology, "e2e.tensorstack.dev/row"))

	used := map[string]string{}
	for _, ref := range []framework.JobRef{a, b} {
		racks := racksOf(t, f, scheduledPods(f, ref, 4))
		t.Logf("job %s: pods per rack %v", ref.Name, racks)
		if len(racks) != 1 {
			t.Errorf("job %s spans racks %v, want one", ref.Name, racks)
		}
		for rack := range racks {
			if other, taken := used[rack]; taken {
				t.Errorf("jobs %s and %s share rack %s: four slots cannot hold both", other, ref.Name, rack)
			}
			used[rack] = ref.Name
		}
	}
	job := f.WaitForJob(tooLarge, "queued with Kueue's topology reason", framework.Timeout, func(job v1beta1.TrainingJob) (bool, error) {
		c := framework.Condition(job, v1beta1.ConditionQueued)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "topology"), nil
	})
	t.Logf("the 6-pod job requiring a rack: %s", framework.Condition(job, v1beta1.ConditionQueued).Message)
	job = f.WaitForJob(noLevel, "queued, Kueue naming the missing level", framework.Timeout, func(job v1beta1.TrainingJob) (bool, error) {
		c := framework.Condition(job, v1beta1.ConditionQueued)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "e2e.tensorstack.dev/row"), nil
	})
	t.Logf("the job requiring a level no node carries: %s", framework.Condition(job, v1beta1.ConditionQueued).Message)
	for _, ref := range []framework.JobRef{a, b} {
		checkSucceeded(t, f.WaitForPhase(ref, v1beta1.JobSucceeded))
	}

	preferred := f.Create(rackJob("spread", 5, batch.AnnotationPreferredTopology))
	racks := racksOf(t, f, scheduledPods(f, preferred, 6))
	counts := slices.Sorted(maps.Values(racks))
	t.Logf("the 6-pod job preferring a rack: pods per rack %v", racks)
	if !slices.Equal(counts, []int{2, 4}) {
		t.Errorf("pods per rack %v, want 4 and 2: as few racks as hold six pods", racks)
	}
	checkSucceeded(t, f.WaitForPhase(preferred, v1beta1.JobSucceeded))
	f.Consistently(3*time.Second, "the 6-pod job requiring a rack still queued, without pods", func(ctx context.Context) error {
		if pods := f.Pods(tooLarge); len(pods) != 0 {
			return fmt.Errorf("pods %v", podSummary(pods))
		}
		return nil
	})
}

// TestKueueTopologyOffSuspectNodes: Kueue places a 2-pod job node by node
// in a rack of three; one pod exits with a node failure code, so its node
// becomes suspect. Kueue's ungater would give the replacement the same
// node, which the pod's affinity now rules out, so it would never run.
// Instead the job's Workload is evicted, gives its quota back and asks
// again with pod sets that keep off the node, and Kueue places both pods
// on the other two nodes, where they run.
func TestKueueTopologyOffSuspectNodes(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "kueue-tas-suspect")
	needsKueue(t, f)
	f.NewTopologyQueue(1, 3, 1, 100, "lq")
	ref := f.Create(framework.NewPyTorchJob("suspect").WithReplicas("master", 1).WithReplicas("worker", 1).GPUs(1).
		Label("kueue.x-k8s.io/queue-name", "lq").Annotate(batch.AnnotationRequiredTopology, framework.LabelRack).
		WithRestartPolicy("worker", v1beta1.RestartPolicyOnFailure).NodeFailureExitCodes(42))
	var worker corev1.Pod
	for _, p := range scheduledPods(f, ref, 2) {
		if strings.Contains(p.Name, "-worker-") {
			worker = p
		}
	}
	bad := worker.Spec.NodeName
	t.Logf("worker %s on node %s exits with 42", worker.Name, bad)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"42",%q:"100ms"}}}`, framework.AnnotationExitCode, framework.AnnotationRunDuration)
	if _, err := f.Kube.CoreV1().Pods(f.Namespace).Patch(f.Context(), worker.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("making %s exit: %v", worker.Name, err)
	}

	job := f.WaitForJob(ref, "node "+bad+" suspect", framework.Timeout, func(job v1beta1.TrainingJob) (bool, error) {
		return slices.Contains(job.JobStatus().SuspectNodeNames(), bad), nil
	})
	t.Logf("suspect nodes: %+v", job.JobStatus().SuspectNodes)
	f.Eventually(framework.Timeout, "the Workload's pod sets keep off "+bad, func(ctx context.Context) (bool, error) {
		wl, err := f.Workload(ctx, ref)
		if err != nil {
			return false, err
		}
		for _, ps := range wl.Spec.PodSets {
			if !keepsOff(ps.Template.Spec, bad) {
				return false, nil
			}
		}
		return true, nil
	})
	f.WaitForPods(ref, "both pods running off "+bad, framework.Timeout, func(pods []corev1.Pod) (bool, error) {
		running := 0
		for _, p := range pods {
			if p.Spec.NodeName == bad && p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodFailed {
				return false, nil
			}
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
			}
		}
		return running == 2, nil
	})
	f.WaitForPhase(ref, v1beta1.JobRunning)
}

// keepsOff says whether a pod spec's required node affinity rules out the
// node in every term.
func keepsOff(spec corev1.PodSpec, node string) bool {
	a := spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return false
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		off := false
		for _, r := range term.MatchFields {
			off = off || (r.Key == "metadata.name" && r.Operator == corev1.NodeSelectorOpNotIn && slices.Contains(r.Values, node))
		}
		if !off {
			return false
		}
	}
	return true
}
