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
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

func TestStoppedReplicaPhase(t *testing.T) {
	hadPod := &v1beta1.ReplicaStatus{Phase: v1beta1.ReplicaRunning, UID: "u1"}
	neverCreated := &v1beta1.ReplicaStatus{Phase: v1beta1.ReplicaCreating}
	cases := []struct {
		name    string
		hasPod  bool
		prev    *v1beta1.ReplicaStatus
		podless v1beta1.ReplicaPhase
		want    v1beta1.ReplicaPhase
	}{
		{"a pod is deleted", true, nil, v1beta1.ReplicaCreating, v1beta1.ReplicaDeleted},
		{"a pod recorded before is deleted", true, hadPod, v1beta1.ReplicaCreating, v1beta1.ReplicaDeleted},
		{"a pod already gone stays replaced", false, hadPod, v1beta1.ReplicaCreating, v1beta1.ReplicaDeleted},
		{"no pod ever: paused", false, nil, v1beta1.ReplicaDeleted, v1beta1.ReplicaDeleted},
		{"no pod ever: not admitted", false, nil, v1beta1.ReplicaCreating, v1beta1.ReplicaCreating},
		{"an entry without a UID is podless", false, neverCreated, v1beta1.ReplicaCreating, v1beta1.ReplicaCreating},
	}
	for _, tc := range cases {
		if got := stoppedReplicaPhase(tc.hasPod, tc.prev, tc.podless); got != tc.want {
			t.Errorf("%s: stoppedReplicaPhase = %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestPhaseBeforeStop(t *testing.T) {
	pod := func(change func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "j-master-0"}}
		change(p)
		return p
	}
	stopping := func(p *corev1.Pod) {
		succeeded(p)
		p.DeletionTimestamp = &metav1.Time{}
	}
	recordedSuccess := &v1beta1.ReplicaStatus{Phase: v1beta1.ReplicaSucceeded, UID: "u1"}
	recordedRunning := &v1beta1.ReplicaStatus{Phase: v1beta1.ReplicaRunning, UID: "u1"}
	cases := []struct {
		name string
		pod  *corev1.Pod
		prev *v1beta1.ReplicaStatus
		want v1beta1.ReplicaPhase
	}{
		{"a running pod", pod(running), recordedRunning, v1beta1.ReplicaRunning},
		{"a pod that finished", pod(succeeded), recordedRunning, v1beta1.ReplicaSucceeded},
		{"a pod that exited 0 while being stopped", pod(stopping), recordedRunning, v1beta1.ReplicaDeleted},
		{"a recorded success whose pod is gone", nil, recordedSuccess, v1beta1.ReplicaSucceeded},
		{"a pod gone without an outcome", nil, recordedRunning, v1beta1.ReplicaDeleted},
		{"no pod yet", nil, nil, v1beta1.ReplicaCreating},
	}
	for _, tc := range cases {
		if got := phaseBeforeStop(tc.pod, tc.prev); got != tc.want {
			t.Errorf("%s: phaseBeforeStop = %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestPauseState(t *testing.T) {
	cases := []struct {
		remaining  int
		wantReason string
		wantMsg    string
		wantPaused bool
	}{
		{0, ReasonPaused, "the job is paused: it has no pods", true},
		{1, ReasonPausing, "waiting for 1 pods to terminate", false},
		{1000, ReasonPausing, "waiting for 1000 pods to terminate", false},
	}
	for _, tc := range cases {
		reason, msg, paused := pauseState(tc.remaining)
		if reason != tc.wantReason || msg != tc.wantMsg || paused != tc.wantPaused {
			t.Errorf("pauseState(%d) = %q, %q, %v; want %q, %q, %v",
				tc.remaining, reason, msg, paused, tc.wantReason, tc.wantMsg, tc.wantPaused)
		}
	}
}

func TestRerunsAfterSuccess(t *testing.T) {
	cases := []struct {
		debug  bool
		policy v1beta1.RestartPolicy
		want   bool
	}{
		{false, v1beta1.RestartPolicyNever, false},
		{false, v1beta1.RestartPolicyOnFailure, false},
		{false, v1beta1.RestartPolicyExitCode, false},
		{false, "", false},
		{false, v1beta1.RestartPolicyAlways, true},
		{true, v1beta1.RestartPolicyNever, true},
		{true, v1beta1.RestartPolicyOnFailure, true},
		{true, v1beta1.RestartPolicyAlways, true},
	}
	for _, tc := range cases {
		if got := rerunsAfterSuccess(tc.debug, tc.policy); got != tc.want {
			t.Errorf("rerunsAfterSuccess(debug %v, %q) = %v, want %v", tc.debug, tc.policy, got, tc.want)
		}
	}
}

func TestRunModeChanged(t *testing.T) {
	made := func(mode string) *corev1.Pod {
		p := &corev1.Pod{}
		if mode != "" {
			p.ObjectMeta = metav1.ObjectMeta{Annotations: map[string]string{podbuilder.AnnotationRunMode: mode}}
		}
		return p
	}
	cases := []struct {
		pod   *corev1.Pod
		debug bool
		want  bool
	}{
		{made(podbuilder.RunModeImmediate), false, false},
		{made(podbuilder.RunModeDebug), true, false},
		{made(podbuilder.RunModeImmediate), true, true},
		{made(podbuilder.RunModeDebug), false, true},
		{made(""), true, false},
		{made(""), false, false},
	}
	for _, tc := range cases {
		if got := runModeChanged(tc.pod, tc.debug); got != tc.want {
			t.Errorf("runModeChanged(pod made %q, debug %v) = %v, want %v",
				tc.pod.Annotations[podbuilder.AnnotationRunMode], tc.debug, got, tc.want)
		}
	}
}
