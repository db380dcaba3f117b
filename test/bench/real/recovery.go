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
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/internal/localcluster"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	clientset "tensorstack.dev/training/pkg/generated/clientset/versioned"
	"tensorstack.dev/training/pkg/podbuilder"
	"tensorstack.dev/training/test/bench/internal/benchkit"
)

// The recovery measurement: a 2-rank DDP job whose RestartJob rule
// restarts it on any failure; once both ranks train, rank 1's training
// container is killed with SIGKILL through its node's containerd, and the
// time runs until every rank has logged a step of the new attempt. The
// same job restarts once by recreating its pods and once in place.

var anyStep = regexp.MustCompile(`rank=(\d+) step=\d+ loss=\S+ at=([0-9.]+)`)

// recoveryTimes is one recovery and where its time went, each phase
// ending when the last pod reached it.
type recoveryTimes struct {
	// total: the kill → every rank past a step of the new attempt.
	total time.Duration
	// decided: the kill → the job counted the restart.
	decided time.Duration
	// left: → no container of the old attempt runs. Recreate: both old
	// pods are gone (their termination, SIGTERM and its grace period);
	// InPlace: both pods wait at their barrier (the kubelet kills the old
	// containers without a grace period).
	left time.Duration
	// released: → the new attempt may start. Recreate: the new pods are
	// created, once the restart backoff has passed; InPlace: the
	// controller released the attempt.
	released time.Duration
	// started: → every training container runs again (Recreate: the
	// scheduling, sandbox and container of a new pod).
	started time.Duration
}

// recovery runs one job under the strategy and measures its recovery.
func recovery(ctx context.Context, kube kubernetes.Interface, training clientset.Interface, nodes realNodes, name string,
	strategy v1beta1.RestartStrategy) (recoveryTimes, error) {
	c := container("python3", "pytorch_ddp.py")
	c.Env = []corev1.EnvVar{{Name: "STEPS", Value: "100000"}, {Name: "STEP_SECONDS", Value: "0.1"}}
	j := &v1beta1.PyTorchTrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1beta1.PyTorchTrainingJobSpec{
			TorchrunConfig: &v1beta1.TorchrunConfig{Enabled: true, ProcPerNode: "1", ExtraOptions: []string{monitorInterval}},
			TrainingJobSpec: v1beta1.TrainingJobSpec{
				ReplicaSpecs: []v1beta1.ReplicaSpec{{
					Type: "node", Replicas: ptr.To[int32](2),
					Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{c}}},
				}},
				RunPolicy: v1beta1.RunPolicy{
					BackoffLimit: ptr.To[int32](5), RestartStrategy: strategy,
					FailurePolicy: &v1beta1.FailurePolicy{Rules: []v1beta1.FailurePolicyRule{{Action: v1beta1.FailurePolicyActionRestartJob}}},
				},
			},
		},
	}
	jobs := training.BatchV1beta1().PyTorchTrainingJobs(namespace)
	if _, err := jobs.Create(ctx, j, metav1.CreateOptions{}); err != nil {
		return recoveryTimes{}, err
	}
	defer func() {
		_ = jobs.Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
		_ = wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			list, err := kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: v1beta1.LabelJobName + "=" + name})
			return err == nil && len(list.Items) == 0, nil
		})
	}()
	pods := []string{name + "-node-0", name + "-node-1"}
	logOf := func(ctx context.Context, pod string) string {
		log, _ := trainingLog(ctx, kube, pod)
		return log
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, p := range pods {
			if len(anyStep.FindAllString(logOf(ctx, p), 3)) < 3 {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return recoveryTimes{}, fmt.Errorf("waiting for both ranks to train: %w", err)
	}
	victim, err := kube.CoreV1().Pods(namespace).Get(ctx, pods[1], metav1.GetOptions{})
	if err != nil {
		return recoveryTimes{}, err
	}
	killed := time.Now()
	if err := nodes.killTraining(ctx, victim); err != nil {
		return recoveryTimes{}, err
	}
	var decided, left, released, started time.Time
	getPods := func(ctx context.Context) ([]*corev1.Pod, error) {
		var ps []*corev1.Pod
		for _, n := range pods {
			p, err := kube.CoreV1().Pods(namespace).Get(ctx, n, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				ps = append(ps, nil)
				continue
			}
			if err != nil {
				return nil, err
			}
			ps = append(ps, p)
		}
		return ps, nil
	}
	every := func(ps []*corev1.Pod, ok func(p *corev1.Pod) bool) bool {
		for _, p := range ps {
			if !ok(p) {
				return false
			}
		}
		return true
	}
	newPod := func(p *corev1.Pod) bool { return p != nil && p.CreationTimestamp.After(killed.Add(-time.Second)) }
	var last time.Time
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		now := time.Now()
		if decided.IsZero() {
			got, err := jobs.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if got.Status.Phase == v1beta1.JobFailed {
				return false, fmt.Errorf("job %s failed", name)
			}
			if got.Status.BackoffCount >= 1 {
				decided = now
			}
			return false, nil
		}
		ps, err := getPods(ctx)
		if err != nil {
			return false, err
		}
		inPlace := strategy == v1beta1.RestartStrategyInPlace
		releasedNow := every(ps, func(p *corev1.Pod) bool {
			return p != nil && p.Annotations[podbuilder.AnnotationAttemptReleased] == "2"
		})
		if left.IsZero() {
			// A phase passed between two looks ends at the later one.
			if inPlace && (releasedNow || every(ps, func(p *corev1.Pod) bool { return p != nil && podbuilder.ParkedAtBarrier(p) })) ||
				!inPlace && every(ps, func(p *corev1.Pod) bool { return p == nil || newPod(p) }) {
				left = now
			} else {
				return false, nil
			}
		}
		if released.IsZero() {
			if inPlace && releasedNow || !inPlace && every(ps, newPod) {
				released = now
			}
			return false, nil
		}
		if started.IsZero() {
			if every(ps, func(p *corev1.Pod) bool {
				if p == nil {
					return false
				}
				for _, cs := range p.Status.ContainerStatuses {
					if cs.Name == "pytorch" && cs.State.Running != nil && cs.State.Running.StartedAt.After(killed.Add(-time.Second)) {
						return true
					}
				}
				return false
			}) {
				started = now
			}
			return false, nil
		}
		last = time.Time{}
		for _, n := range pods {
			m := anyStep.FindStringSubmatch(logOf(ctx, n))
			if m == nil {
				return false, nil
			}
			at := unixTime(m[2])
			if !at.After(killed) {
				return false, fmt.Errorf("pod %s: its first step after the restart is from before the kill", n)
			}
			last = latest(last, at)
		}
		return true, nil
	})
	if err != nil {
		return recoveryTimes{}, fmt.Errorf("%s: waiting for the restart: %w", strategy, err)
	}
	return recoveryTimes{
		total: last.Sub(killed), decided: decided.Sub(killed), left: left.Sub(decided),
		released: released.Sub(left), started: started.Sub(released),
	}, nil
}

// realNodes reaches the containers of the stack's real nodes.
type realNodes struct {
	ctr, stackDir string
}

// killTraining sends SIGKILL to a pod's training container through its
// real node's containerd.
func (n realNodes) killTraining(ctx context.Context, pod *corev1.Pod) error {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == "pytorch" && cs.ContainerID != "" {
			return localcluster.SignalContainer(ctx, n.ctr, n.stackDir, pod.Spec.NodeName, cs.ContainerID, "SIGKILL")
		}
	}
	return fmt.Errorf("pod %s runs no training container", pod.Name)
}

// recoveryTable is the side-by-side of the two strategies.
func recoveryTable(runs int, recreate, inPlace []recoveryTimes) benchkit.Table {
	t := benchkit.Table{Header: []string{"SIGKILL of rank 1 → every rank past a step (" + strconv.Itoa(runs) + " runs, median ms)",
		"Recreate", "InPlace"}}
	median := func(rs []recoveryTimes, get func(recoveryTimes) time.Duration) time.Duration {
		ds := make([]time.Duration, len(rs))
		for i, r := range rs {
			ds[i] = get(r)
		}
		return benchkit.Median(ds)
	}
	row := func(name string, get func(recoveryTimes) time.Duration) {
		t.Add(name, benchkit.Ms(median(recreate, get)), benchkit.Ms(median(inPlace, get)))
	}
	row("total", func(r recoveryTimes) time.Duration { return r.total })
	row("kill → restart counted", func(r recoveryTimes) time.Duration { return r.decided })
	row("→ the old attempt gone (Recreate: both old pods deleted; InPlace: both pods at their barrier)",
		func(r recoveryTimes) time.Duration { return r.left })
	row("→ the new attempt released (Recreate: new pods created, after the restart backoff; InPlace: released)",
		func(r recoveryTimes) time.Duration { return r.released })
	row("→ every training container running", func(r recoveryTimes) time.Duration { return r.started })
	row("→ every rank past a step (import, rendezvous, step)", func(r recoveryTimes) time.Duration {
		return r.total - r.decided - r.left - r.released - r.started
	})
	rec, in := median(recreate, func(r recoveryTimes) time.Duration { return r.total }), median(inPlace, func(r recoveryTimes) time.Duration { return r.total })
	t.Add("InPlace / Recreate", "", benchkit.Ratio(float64(in), float64(rec)))
	return t
}

// recoveries measures both strategies, runs times each, taking turns at
// going first.
func recoveries(ctx context.Context, kube kubernetes.Interface, training clientset.Interface, nodes realNodes,
	runs int) (recreate, inPlace []recoveryTimes, err error) {
	for i := range runs {
		order := []v1beta1.RestartStrategy{v1beta1.RestartStrategyRecreate, v1beta1.RestartStrategyInPlace}
		if i%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, s := range order {
			r, err := recovery(ctx, kube, training, nodes, fmt.Sprintf("bench-recover-%s-%d", strings.ToLower(string(s)), i), s)
			if err != nil {
				return nil, nil, fmt.Errorf("recovery (%s), run %d: %w", s, i, err)
			}
			benchkit.Logf("run %d: %s recovered in %s: counted after %s, old attempt gone %s later, new one released %s later, "+
				"containers running %s later", i, s, benchkit.Ms(r.total), benchkit.Ms(r.decided), benchkit.Ms(r.left),
				benchkit.Ms(r.released), benchkit.Ms(r.started))
			if s == v1beta1.RestartStrategyRecreate {
				recreate = append(recreate, r)
			} else {
				inPlace = append(inPlace, r)
			}
		}
	}
	return recreate, inPlace, nil
}
