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

package controller

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/podbuilder"
)

// inPlacePod is a pod of an in-place job for the policy's tests.
type inPlacePod struct {
	attempt, released int32 // 0: the annotation is absent
	parked            bool
	asked             time.Time
	deleting          bool
	agentRule         bool
	phase             corev1.PodPhase
	disrupted         bool
	agentStopped      bool
}

func (p inPlacePod) build(name string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}}}
	if p.attempt > 0 {
		pod.Annotations[podbuilder.AnnotationAttempt] = strconv.Itoa(int(p.attempt))
	}
	if p.released > 0 {
		pod.Annotations[podbuilder.AnnotationAttemptReleased] = strconv.Itoa(int(p.released))
	}
	if !p.asked.IsZero() {
		pod.Annotations[podbuilder.AnnotationAttemptAsked] = p.asked.UTC().Format(time.RFC3339)
	}
	if p.agentStopped {
		pod.Annotations[podbuilder.AnnotationRestartAgent] = podbuilder.RestartAgentStop
	}
	if p.deleting {
		pod.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	}
	if p.agentRule {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{
			Name: podbuilder.RestartAgentContainerName,
			RestartPolicyRules: []corev1.ContainerRestartRule{{
				Action: corev1.ContainerRestartRuleActionRestartAllContainers,
			}},
		})
	}
	barrier := corev1.ContainerStatus{Name: podbuilder.AttemptBarrierContainerName}
	if p.parked {
		barrier.State.Running = &corev1.ContainerStateRunning{}
	}
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{barrier}
	pod.Status.Phase = p.phase
	if pod.Status.Phase == "" {
		pod.Status.Phase = corev1.PodRunning
	}
	if p.disrupted {
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}
	}
	return pod
}

func inPlaceReplicasOf(pods ...*inPlacePod) []inPlaceReplica {
	replicas := make([]inPlaceReplica, len(pods))
	for i, p := range pods {
		replicas[i].host = "worker-" + strconv.Itoa(i)
		if p != nil {
			replicas[i].pod = p.build(replicas[i].host)
		}
	}
	return replicas
}

func TestDecideInPlaceProgress(t *testing.T) {
	start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	parked := func(attempt, released int32) *inPlacePod {
		return &inPlacePod{attempt: attempt, released: released, parked: true}
	}
	cases := []struct {
		name     string
		replicas []inPlaceReplica
		opened   bool
		settled  bool
		now      time.Time
		noOpen   bool
		want     inPlaceProgress
	}{{
		name:     "a new attempt asks every pod and releases nothing",
		replicas: inPlaceReplicasOf(parked(1, 1), parked(1, 1)),
		opened:   true, settled: true, now: start,
		want: inPlaceProgress{asks: []int{0, 1}, waiting: true},
	}, {
		name:     "every pod waits at its barrier: the attempt is released to all",
		replicas: inPlaceReplicasOf(parked(2, 1), parked(2, 1)),
		settled:  true, now: start.Add(time.Second),
		want: inPlaceProgress{releases: []int{0, 1}, waiting: true},
	}, {
		name:     "not before the caches hold what was written",
		replicas: inPlaceReplicasOf(parked(2, 1), parked(2, 1)),
		now:      start.Add(time.Second),
		want:     inPlaceProgress{waiting: true},
	}, {
		name:     "a pod already released needs no release; the others get it",
		replicas: inPlaceReplicasOf(parked(2, 2), parked(2, 1)),
		settled:  true, now: start.Add(time.Second),
		want: inPlaceProgress{releases: []int{1}, waiting: true},
	}, {
		name:     "a pod that does not know the attempt yet holds the release and is asked",
		replicas: inPlaceReplicasOf(parked(2, 1), parked(1, 1)),
		settled:  true, now: start.Add(time.Second),
		want: inPlaceProgress{asks: []int{1}, waiting: true},
	}, {
		name:     "a replica without a pod, or one being replaced, holds the release",
		replicas: append(inPlaceReplicasOf(parked(2, 1), nil), inPlaceReplica{host: "w", pod: parked(2, 1).build("w"), replacing: true}),
		settled:  true, now: start.Add(time.Second),
		want: inPlaceProgress{releases: nil, waiting: true},
	}, {
		name: "a pod asked just now is left alone until it may be asked again",
		replicas: inPlaceReplicasOf(parked(2, 1),
			&inPlacePod{attempt: 2, released: 1, asked: start.Add(2 * time.Second)}),
		settled: true, now: start.Add(3 * time.Second),
		want: inPlaceProgress{waiting: true, requeueAt: start.Add(2*time.Second + inPlaceAskAgain)},
	}, {
		name: "a pod asked inPlaceAskAgain ago is asked again",
		replicas: inPlaceReplicasOf(parked(2, 1),
			&inPlacePod{attempt: 2, released: 1, asked: start}),
		settled: true, now: start.Add(inPlaceAskAgain),
		want: inPlaceProgress{asks: []int{1}, waiting: true, requeueAt: start.Add(inPlaceGiveUp)},
	}, {
		name: "a pod with no time it was asked is asked",
		replicas: inPlaceReplicasOf(parked(2, 1),
			&inPlacePod{attempt: 2, released: 1}),
		settled: true, now: start.Add(time.Second),
		want: inPlaceProgress{asks: []int{1}, waiting: true, requeueAt: start.Add(inPlaceGiveUp)},
	}, {
		name: "a pod not at its barrier inPlaceGiveUp after the attempt began is recreated",
		replicas: inPlaceReplicasOf(parked(2, 1),
			&inPlacePod{attempt: 2, released: 1, asked: start.Add(18 * time.Second)}),
		settled: true, now: start.Add(inPlaceGiveUp),
		want: inPlaceProgress{recreate: []int{1}, waiting: true},
	}, {
		name: "without an open attempt a slow pod is neither asked nor given up on",
		replicas: inPlaceReplicasOf(parked(2, 1),
			&inPlacePod{attempt: 2, released: 1}),
		settled: true, now: start.Add(time.Hour), noOpen: true,
		want: inPlaceProgress{waiting: true},
	}, {
		name:     "pods that run the released attempt need nothing",
		replicas: inPlaceReplicasOf(&inPlacePod{attempt: 2, released: 2}, &inPlacePod{attempt: 2, released: 2}),
		settled:  true, now: start.Add(time.Hour),
		want: inPlaceProgress{},
	}, {
		name:     "a pod made without the in-place annotations is not counted as waiting",
		replicas: inPlaceReplicasOf(parked(2, 1), &inPlacePod{}),
		settled:  true, now: start.Add(time.Second),
		want: inPlaceProgress{waiting: true},
	}, {
		name:     "no replicas: nothing to release",
		replicas: nil,
		settled:  true, now: start,
		want: inPlaceProgress{},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := inPlaceProgressInput{attempt: 2, opened: tc.opened, settled: tc.settled, replicas: tc.replicas, now: tc.now}
			if !tc.noOpen {
				in.attemptStart = &start
			}
			got := decideInPlaceProgress(in)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(inPlaceProgress{})); diff != "" {
				t.Errorf("decideInPlaceProgress (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInPlaceBlocker(t *testing.T) {
	ok := func() *inPlacePod { return &inPlacePod{attempt: 1, released: 1, agentRule: true} }
	with := func(change func(*inPlacePod)) *inPlacePod {
		p := ok()
		change(p)
		return p
	}
	cases := []struct {
		name     string
		replicas []inPlaceReplica
		want     string // a part of the reason; "" when the restart may go in place
	}{
		{"every pod can restart in place", inPlaceReplicasOf(ok(), ok()), ""},
		{"a replica without a pod", inPlaceReplicasOf(ok(), nil), "replica worker-1 has no pod"},
		{"a pod being deleted", inPlaceReplicasOf(with(func(p *inPlacePod) { p.deleting = true })), "is being deleted"},
		{"a pod without the agent's rule", inPlaceReplicasOf(with(func(p *inPlacePod) { p.agentRule = false })), "has no in-place restart rule"},
		{"a pod that ended", inPlaceReplicasOf(with(func(p *inPlacePod) { p.phase = corev1.PodFailed })), "has ended (Failed)"},
		{"a pod of a lost node", inPlaceReplicasOf(with(func(p *inPlacePod) { p.phase = corev1.PodUnknown })), "is lost"},
		{"a pod about to be evicted", inPlaceReplicasOf(with(func(p *inPlacePod) { p.disrupted = true })), "is lost"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := inPlaceBlocker(tc.replicas)
			if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
				t.Errorf("inPlaceBlocker = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAgentStops(t *testing.T) {
	succeeded := &inPlacePod{attempt: 1, released: 1, phase: corev1.PodRunning}
	cases := []struct {
		name     string
		pods     []*inPlacePod
		finished bool
		want     []int
	}{
		{"a running job stops no agent", []*inPlacePod{{attempt: 1, released: 1}, nil}, false, nil},
		{"a finished job stops every running agent", []*inPlacePod{{attempt: 1, released: 1}, {attempt: 1, parked: true}}, true, []int{0, 1}},
		{"an agent told to stop is not told again", []*inPlacePod{{attempt: 1, agentStopped: true}}, true, nil},
		{"a pod that ended has no agent to stop", []*inPlacePod{{attempt: 1, phase: corev1.PodFailed}}, true, nil},
		{"a pod without the in-place annotations has no agent", []*inPlacePod{{}}, true, nil},
		{"a pod being deleted is left alone", []*inPlacePod{{attempt: 1, deleting: true}}, true, nil},
		{"a pod whose training succeeded stops its agent", []*inPlacePod{succeeded}, false, []int{0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			replicas := inPlaceReplicasOf(tc.pods...)
			if tc.name == "a pod whose training succeeded stops its agent" {
				// The training container ended 0; the agent runs on.
				replicas[0].pod.Spec.Containers = []corev1.Container{{Name: "training"}, {Name: podbuilder.RestartAgentContainerName}}
				replicas[0].pod.Status.ContainerStatuses = []corev1.ContainerStatus{
					{Name: "training", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}},
					{Name: podbuilder.RestartAgentContainerName, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
				}
			}
			if diff := cmp.Diff(tc.want, agentStops(replicas, tc.finished)); diff != "" {
				t.Errorf("agentStops (-want +got):\n%s", diff)
			}
		})
	}
}
