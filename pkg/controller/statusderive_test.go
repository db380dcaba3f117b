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
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

func TestContainerStatusesRecordHowContainersEnded(t *testing.T) {
	finished := metav1.NewTime(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	pod := func(states ...corev1.ContainerState) *corev1.Pod {
		p := &corev1.Pod{}
		for i, s := range states {
			name := []string{"pytorch", "sidecar"}[i]
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: name})
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: name, State: s})
		}
		return p
	}
	oomKilled := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 137, Reason: "OOMKilled", Message: strings.Repeat("x", 500) + " out of memory", FinishedAt: finished}}
	signalled := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 143, Signal: 15, Reason: "Error"}}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	pulling := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "no such image"}}
	previous := []v1beta1.ContainerStatus{{Name: "pytorch", State: "Terminated", ExitCode: 1,
		LastTermination: &v1beta1.ContainerTermination{ExitCode: 1, Reason: "Error", Message: "loss is NaN"}}}

	oomTermination := &v1beta1.ContainerTermination{ExitCode: 137, Reason: "OOMKilled",
		Message: v1beta1.TerminationMessageTail(oomKilled.Terminated.Message), FinishedAt: &finished}
	cases := []struct {
		name string
		pod  *corev1.Pod
		prev []v1beta1.ContainerStatus
		want []v1beta1.ContainerStatus
	}{
		{
			name: "an OOM kill, its message cut to its end",
			pod:  pod(oomKilled),
			want: []v1beta1.ContainerStatus{{Name: "pytorch", State: "Terminated", ExitCode: 137, Reason: "OOMKilled", LastTermination: oomTermination}},
		},
		{
			name: "a signal, over what the previous pod recorded",
			pod:  pod(signalled),
			prev: previous,
			want: []v1beta1.ContainerStatus{{Name: "pytorch", State: "Terminated", ExitCode: 143, Reason: "Error",
				LastTermination: &v1beta1.ContainerTermination{ExitCode: 143, Signal: 15, Reason: "Error"}}},
		},
		{
			name: "a replacement that runs keeps how the previous pod ended",
			pod:  pod(running, running),
			prev: previous,
			want: []v1beta1.ContainerStatus{
				{Name: "pytorch", State: "Running", LastTermination: previous[0].LastTermination},
				{Name: "sidecar", State: "Running"},
			},
		},
		{
			name: "a waiting container says why",
			pod:  pod(pulling),
			want: []v1beta1.ContainerStatus{{Name: "pytorch", State: "Waiting", Reason: "ImagePullBackOff"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := containerStatuses(tc.pod, tc.prev)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("containerStatuses (-want +got):\n%s", diff)
			}
		})
	}
	if n := len(oomTermination.Message); n > v1beta1.MaxTerminationMessageBytes || !strings.HasSuffix(oomTermination.Message, "out of memory") {
		t.Errorf("recorded message of %d bytes ending %q, want at most %d bytes with the end kept", n,
			oomTermination.Message[max(0, n-20):], v1beta1.MaxTerminationMessageBytes)
	}

	t.Run("a replica without a pod keeps only how its containers ended", func(t *testing.T) {
		got := lastTerminations(append(previous, v1beta1.ContainerStatus{Name: "sidecar", State: "Running"}))
		want := []v1beta1.ContainerStatus{{Name: "pytorch", LastTermination: previous[0].LastTermination}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("lastTerminations (-want +got):\n%s", diff)
		}
	})
}

func TestRunningConditionSaysWhyAReplicaCannotStart(t *testing.T) {
	cases := []struct {
		name       string
		pod        func(*corev1.Pod)
		wantReason string
		wantIn     string
	}{
		{"a pod on its way", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "tensorflow",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}
		}, "Pending", "waiting for every replica to start"},
		{"an image that cannot be pulled", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "tensorflow",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "tf:404"`}}}}
		}, "ImagePullBackOff", `replica worker-0: container tensorflow: ImagePullBackOff: Back-off pulling image "tf:404"`},
		{"a missing Secret", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "tensorflow",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: `secret "wandb" not found`}}}}
		}, "CreateContainerConfigError", `secret "wandb" not found`},
		{"no node for it", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}}
		}, "Unschedulable", "replica worker-0: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := newTFJob("j").withReplicas("worker", 1).obj()
			f := newFixture(t, job)
			f.step(job)
			f.setPod("j-worker-0", tc.pod)
			f.step(job)
			st := f.status(job)
			assertCondition(t, st, v1beta1.ConditionRunning, metav1.ConditionFalse, tc.wantReason)
			if msg := condition(st, v1beta1.ConditionRunning).Message; !strings.Contains(msg, tc.wantIn) {
				t.Errorf("Running condition message %q, want it to contain %q", msg, tc.wantIn)
			}
		})
	}
}

func TestActivePhase(t *testing.T) {
	cases := []struct {
		phase   v1beta1.JobPhase
		started bool
		want    v1beta1.JobPhase
	}{
		{phase: "", started: false, want: v1beta1.JobPending},
		{phase: "", started: true, want: v1beta1.JobRunning},
		{phase: v1beta1.JobPending, started: false, want: v1beta1.JobPending},
		{phase: v1beta1.JobPending, started: true, want: v1beta1.JobRunning},
		// A restart does not take a running job back to Pending.
		{phase: v1beta1.JobRunning, started: false, want: v1beta1.JobRunning},
		{phase: v1beta1.JobRunning, started: true, want: v1beta1.JobRunning},
		{phase: v1beta1.JobResuming, started: false, want: v1beta1.JobResuming},
		{phase: v1beta1.JobResuming, started: true, want: v1beta1.JobRunning},
	}
	for _, tc := range cases {
		if got := activePhase(tc.phase, tc.started); got != tc.want {
			t.Errorf("activePhase(%q, started %v) = %q, want %q", tc.phase, tc.started, got, tc.want)
		}
	}
}

// conditionsOf lists a decision's conditions as type=status/reason.
func conditionsOf(d decision) []string {
	var out []string
	for _, c := range d.conditions {
		out = append(out, c.typ+"="+string(c.status)+"/"+c.reason)
	}
	return out
}

func TestStatusConditionDecisions(t *testing.T) {
	trueCondition := func(typ, reason string) []metav1.Condition {
		return []metav1.Condition{{Type: typ, Status: metav1.ConditionTrue, Reason: reason}}
	}
	noBlocker := func() (string, string) { return "", "" }
	mountBlocked := func() (string, string) { return "FailedMount", "replica worker-0: volume data" }
	withPod, withoutPod := &slot{pod: &corev1.Pod{}}, &slot{}
	succeededWithoutPod := &slot{phase: v1beta1.ReplicaSucceeded}
	cases := []struct {
		name string
		got  decision
		want []string
	}{
		{"running", runningCondition(v1beta1.JobRunning, noBlocker),
			[]string{"Running=True/" + ReasonReplicasRunning}},
		{"pending, nothing in the way", runningCondition(v1beta1.JobPending, noBlocker),
			[]string{"Running=False/Pending"}},
		{"pending on a mount", runningCondition(v1beta1.JobPending, mountBlocked),
			[]string{"Running=False/FailedMount"}},
		{"paused ignores start blockers", runningCondition(v1beta1.JobPaused, mountBlocked),
			[]string{"Running=False/Paused"}},
		{"finished: the finish sets it", runningCondition(v1beta1.JobSucceeded, mountBlocked), nil},
		{"no phase yet", runningCondition("", mountBlocked), nil},

		{"a replica without a pod", initializedCondition(nil, []*slot{withPod, withoutPod}),
			[]string{"Initialized=False/" + ReasonCreatingReplicas}},
		{"every replica has a pod or succeeded", initializedCondition(nil, []*slot{withPod, succeededWithoutPod}),
			[]string{"Initialized=True/" + ReasonReplicasCreated}},
		{"initialized stays", initializedCondition(trueCondition(v1beta1.ConditionInitialized, ReasonReplicasCreated),
			[]*slot{withoutPod}), nil},

		{"a failure now", replicaFailureCondition(nil, "worker-0 failed", false),
			[]string{"ReplicaFailure=True/" + ReasonReplicaFailed}},
		{"healthy once started", replicaFailureCondition(trueCondition(v1beta1.ConditionReplicaFailure, ReasonReplicaFailed), "", true),
			[]string{"ReplicaFailure=False/" + ReasonReplicasHealthy}},
		{"not before every replica started", replicaFailureCondition(trueCondition(v1beta1.ConditionReplicaFailure, ReasonReplicaFailed), "", false), nil},

		{"resolved for its own reason", resolvedReplicaFailure(trueCondition(v1beta1.ConditionReplicaFailure, ReasonStatusTooLarge),
			ReasonStatusTooLarge, ReasonStatusStored, "stored"), []string{"ReplicaFailure=False/" + ReasonStatusStored}},
		{"another reason stays", resolvedReplicaFailure(trueCondition(v1beta1.ConditionReplicaFailure, ReasonReplicaFailed),
			ReasonStatusTooLarge, ReasonStatusStored, "stored"), nil},
	}
	for _, tc := range cases {
		if diff := cmp.Diff(tc.want, conditionsOf(tc.got)); diff != "" {
			t.Errorf("%s: conditions (-want +got):\n%s", tc.name, diff)
		}
	}
}
