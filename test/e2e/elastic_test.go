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
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// TestElasticScale: kubectl scale takes a running elastic job from 2 to 4
// replicas and back to 2. Pods appear and go by index, the survivors keep
// their pods, and nothing counts against backoffLimit. The scale
// subresource reads back as a HorizontalPodAutoscaler reads it, through
// client-go's scale client and discovery.
func TestElasticScale(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "elastic")
	ref := f.Create(framework.NewPyTorchJob("grow").WithReplicas("worker", 2).Forever("worker").
		Torchrun(v1beta1.TorchrunConfig{}).Elastic(1, 4, 2))
	pods := f.WaitForRunningPods(ref, 2)
	uids := map[string]types.UID{}
	for _, p := range pods {
		uids[p.Name] = p.UID
	}

	scales := hpaScaleClient(t, f)
	gr := schema.GroupResource{Group: v1beta1.GroupName, Resource: v1beta1.PyTorchTrainingJobResource}
	for _, n := range []int{4, 2} {
		f.MustKubectl("scale", "pj/grow", fmt.Sprintf("--replicas=%d", n))
		want := make([]string, n)
		for i := range want {
			want[i] = fmt.Sprintf("grow-worker-%d", i)
		}
		pods = f.WaitForPods(ref, fmt.Sprintf("%d workers running", n), framework.Timeout, func(pods []corev1.Pod) (bool, error) {
			var names []string
			for _, p := range pods {
				if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
					names = append(names, p.Name)
				}
			}
			slices.Sort(names)
			return slices.Equal(names, want) && len(pods) == n, nil
		})
		for _, p := range pods {
			if uid, ok := uids[p.Name]; ok && uid != p.UID {
				t.Errorf("after scaling to %d: %s was replaced (uid %s, was %s)", n, p.Name, p.UID, uid)
			}
			uids[p.Name] = p.UID
		}
		// The status that counts n replicas can be written while the new
		// pods are still starting; the one that follows says Running.
		job := f.WaitForJob(ref, fmt.Sprintf("status replicas %d, Running", n), framework.Timeout, func(job v1beta1.TrainingJob) (bool, error) {
			st := job.JobStatus()
			return st.Replicas != nil && int(*st.Replicas) == n && st.Phase == v1beta1.JobRunning, nil
		})
		if st := job.JobStatus(); st.BackoffCount != 0 || st.Phase != v1beta1.JobRunning || st.LastScaleTime == nil {
			t.Errorf("after scaling to %d: phase %s, backoffCount %d, lastScaleTime %v; want Running, 0 and a time", n, st.Phase, st.BackoffCount, st.LastScaleTime)
		}
		s, err := scales.Scales(f.Namespace).Get(f.Context(), gr, "grow", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the scale as an autoscaler reads it: %v", err)
		}
		if int(s.Spec.Replicas) != n || int(s.Status.Replicas) != n || !strings.Contains(s.Status.Selector, v1beta1.LabelJobName+"=grow") {
			t.Errorf("scale %+v, want %d replicas and the job's selector", s, n)
		}
		if out := f.MustKubectl("get", "pj", "grow", "-o", "wide"); !strings.Contains(out, fmt.Sprintf("worker:%d/%d", n, n)) {
			t.Errorf("kubectl get -o wide:\n%s\nwant worker:%d/%d", out, n, n)
		}
	}
	if r := f.KubectlNS("scale", "pj/grow", "--replicas=5"); r.Err == nil || !strings.Contains(r.Stderr, "spec.elastic.expectedReplicas") {
		t.Errorf("kubectl scale beyond maxReplicas: %s, want a refusal naming spec.elastic.expectedReplicas", r)
	}
	// Events are written in the background: the last may lag the pods.
	var events string
	f.Eventually(framework.Timeout, "a Scaled event per scale", func(context.Context) (bool, error) {
		r := f.KubectlNS("get", "events", "--field-selector", "reason=Scaled,involvedObject.name=grow", "-o", "name")
		events = r.Stdout
		return r.Err == nil && len(strings.Fields(events)) >= 2, nil
	})
	if n := len(strings.Fields(events)); n != 2 {
		t.Errorf("%d Scaled events, want 2 (2 to 4, 4 to 2): %s", n, events)
	}
}

// TestElasticGenericJobUnderKueue: a GenericJob re-forms at each size, every
// pod told the count. Admitted by its Kueue queue at 2, it may not scale out
// while it runs (its Workload cannot grow, so a third replica would not
// start while the two wait for it): kubectl scale is refused, saying why.
// It scales in at once; paused, it scales out, and resumed it is queued
// again at its new size: every pod made is a pod told.
func TestElasticGenericJobUnderKueue(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "elastic-kueue")
	needsKueue(t, f)
	queue := f.NewKueueQueue(nil, 4, "lq")
	ref := f.Create(framework.NewGenericJob("reform").WithReplicas("worker", 2).GPUs(1).Forever("worker").
		Elastic(1, 4, 2).Label("kueue.x-k8s.io/queue-name", queue))
	// runningTold waits for n running workers, each told the job has n.
	runningTold := func(n int) {
		t.Helper()
		f.WaitForPods(ref, fmt.Sprintf("%d workers running, told %d", n, n), framework.Timeout, func(pods []corev1.Pod) (bool, error) {
			running := 0
			for _, p := range pods {
				if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
					continue
				}
				running++
				for _, e := range p.Spec.Containers[0].Env {
					if e.Name == batch.EnvWorldSize && e.Value != strconv.Itoa(n) {
						return false, nil
					}
				}
			}
			return running == n && len(pods) == n, nil
		})
	}
	runningTold(2)
	waitQueued := func(reason string) {
		f.WaitForJob(ref, "admitted", framework.Timeout, func(job v1beta1.TrainingJob) (bool, error) {
			c := framework.Condition(job, v1beta1.ConditionQueued)
			return c != nil && c.Reason == reason, nil
		})
	}
	waitQueued(v1beta1.ReasonAdmitted)

	r := f.KubectlNS("scale", "gj/reform", "--replicas=3")
	if r.Err == nil || !strings.Contains(r.Stderr, "spec.elastic.expectedReplicas") || !strings.Contains(r.Stderr, "Pause the job") {
		t.Fatalf("kubectl scale out of an admitted GenericJob: %s, want a refusal naming spec.elastic.expectedReplicas and the way", r)
	}
	f.MustKubectl("scale", "gj/reform", "--replicas=1")
	runningTold(1)

	f.MustAction(ref, "pause", "")
	f.WaitForPhase(ref, v1beta1.JobPaused)
	f.MustKubectl("scale", "gj/reform", "--replicas=3")
	f.MustAction(ref, "resume", "")
	runningTold(3)
	wl, err := f.Workload(f.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if count := wl.Spec.PodSets[0].Count; count != 3 {
		t.Errorf("the Workload's pod set counts %d, want the job queued again at 3", count)
	}
}

// hpaScaleClient is client-go's scale client as the HorizontalPodAutoscaler
// controller builds it: the scale kind found through discovery.
func hpaScaleClient(t *testing.T, f *framework.Framework) scale.ScalesGetter {
	t.Helper()
	disco := f.Kube.Discovery()
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	client, err := scale.NewForConfig(f.Config, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(disco))
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// TestElasticPartialAdmission: in a queue of 3 GPUs, an elastic job of a
// 1-GPU master and four 1-GPU workers (minReplicas 2) is admitted partly by
// Kueue and runs the master and two workers, saying the other two wait.
func TestElasticPartialAdmission(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "elastic-kueue")
	needsKueue(t, f)
	pool := f.NewNodePool(1, 8)
	queue := f.NewKueueQueue(pool, 3, "lq")
	ref := f.Create(framework.NewPyTorchJob("partial").WithReplicas("master", 1).WithReplicas("worker", 4).GPUs(1).
		Forever("master").Forever("worker").Torchrun(v1beta1.TorchrunConfig{}).Elastic(2, 5, 5).
		Label("kueue.x-k8s.io/queue-name", queue))
	f.WaitForRunningPods(ref, 3)
	job := f.WaitForCondition(ref, v1beta1.ConditionQueued, metav1.ConditionFalse, v1beta1.ReasonAdmitted)
	if c := framework.Condition(job, v1beta1.ConditionQueued); !strings.Contains(c.Message, "2 of the 4 worker replicas") {
		t.Errorf("Queued condition %q, want it to say 2 of the 4 workers run", c.Message)
	}
	f.Consistently(5*time.Second, "no more than the admitted pods", func(context.Context) error {
		if n := len(f.Pods(ref)); n != 3 {
			return fmt.Errorf("%d pods, want the 3 Kueue admitted", n)
		}
		return nil
	})
}

// TestGangElasticGrows: under gang scheduling an elastic job's gang is its
// minReplicas. On a node of four GPUs of which another job holds two, an
// elastic job of up to four 1-GPU workers (minReplicas 2) starts with two,
// and gets the other two once the first job is done.
func TestGangElasticGrows(t *testing.T) {
	t.Parallel()
	needsGangBackend(t)
	f := framework.New(t, "gang-elastic")
	pool := gangPool(f, 1, 4)
	blocker := f.Create(gangJob("blocker", 2, pool).ExitCode(0).RunFor("20s"))
	f.WaitForPods(blocker, "both pods placed", framework.Timeout, func(pods []corev1.Pod) (bool, error) {
		return bound(pods) == 2, nil
	})
	ref := f.Create(framework.NewPyTorchJob("elastic").WithReplicas("worker", 4).GPUs(1).OnPool(pool).Gang("default", 0).
		Forever("worker").Torchrun(v1beta1.TorchrunConfig{}).Elastic(2, 4, 4))
	f.WaitForPods(ref, "minReplicas placed while the other job runs", framework.Timeout, func(pods []corev1.Pod) (bool, error) {
		if job := f.MustGetJob(blocker); job.JobStatus().Phase.IsFinished() {
			return false, framework.Stop("the other job finished before the elastic job started")
		}
		return len(pods) == 4 && bound(pods) == 2, nil
	})
	checkSucceeded(t, f.WaitForPhase(blocker, v1beta1.JobSucceeded))
	f.WaitForPods(ref, "all four placed once there is room", framework.Timeout, func(pods []corev1.Pod) (bool, error) {
		return bound(pods) == 4, nil
	})
	f.WaitForPhase(ref, v1beta1.JobRunning)
}
