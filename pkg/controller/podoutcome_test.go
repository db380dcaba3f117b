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

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// exitedRunning is a pod the kubelet still reports Running whose containers
// all exited with the given codes: what it reports between a container's
// end and the sandbox's teardown.
func exitedRunning(policy corev1.RestartPolicy, codes ...int32) *corev1.Pod {
	p := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: policy}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for i, code := range codes {
		name := string(rune('a' + i))
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: name})
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}},
		})
	}
	return p
}

func TestPodOutcome(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	tests := []struct {
		name string
		pod  *corev1.Pod
		want corev1.PodPhase
	}{
		{"every container exited 0, Never", exitedRunning(corev1.RestartPolicyNever, 0, 0), corev1.PodSucceeded},
		{"every container exited 0, OnFailure", exitedRunning(corev1.RestartPolicyOnFailure, 0), corev1.PodSucceeded},
		{"restarted after exiting 0 under Always", exitedRunning(corev1.RestartPolicyAlways, 0), corev1.PodRunning},
		{"one container exited 1", exitedRunning(corev1.RestartPolicyNever, 0, 1), corev1.PodRunning},
		{"one container still runs", func() *corev1.Pod {
			p := exitedRunning(corev1.RestartPolicyNever, 0, 0)
			p.Status.ContainerStatuses[1].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
			return p
		}(), corev1.PodRunning},
		{"a container not reported yet", func() *corev1.Pod {
			p := exitedRunning(corev1.RestartPolicyNever, 0, 0)
			p.Status.ContainerStatuses = p.Status.ContainerStatuses[:1]
			return p
		}(), corev1.PodRunning},
		{"a container with a restart policy of its own", func() *corev1.Pod {
			p := exitedRunning(corev1.RestartPolicyNever, 0)
			p.Spec.Containers[0].RestartPolicy = &always
			return p
		}(), corev1.PodRunning},
		{"a container with restart rules", func() *corev1.Pod {
			p := exitedRunning(corev1.RestartPolicyNever, 0)
			p.Spec.Containers[0].RestartPolicyRules = []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart}}
			return p
		}(), corev1.PodRunning},
		{"the kubelet's phase stands when it is terminal", func() *corev1.Pod {
			p := exitedRunning(corev1.RestartPolicyNever, 0)
			p.Status.Phase = corev1.PodFailed
			return p
		}(), corev1.PodFailed},
		{"no containers", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, corev1.PodRunning},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := podOutcome(tc.pod); got != tc.want {
				t.Errorf("podOutcome = %s, want %s", got, tc.want)
			}
		})
	}
}

// A job succeeds as soon as the kubelet reports its pods' containers exited
// 0, before the pods' phase turns Succeeded, and the pods are kept.
func TestJobSucceedsWhenContainersExitedZero(t *testing.T) {
	job := newPyTorchJob("pt").withReplicas("worker", 2).obj()
	f := newFixture(t, job)
	f.mustSync(job)
	f.setAll(running)
	f.mustSync(job)
	f.setPod("pt-worker-0", exitedZeroStillRunning)
	f.mustSync(job)
	if st := f.status(job); st.Phase == v1beta1.JobSucceeded {
		t.Fatalf("job Succeeded with one of two replicas done")
	}
	f.setPod("pt-worker-1", exitedZeroStillRunning)
	f.mustSync(job)
	if st := f.status(job); st.Phase != v1beta1.JobSucceeded {
		t.Fatalf("phase %s once every container exited 0, want Succeeded", st.Phase)
	}
	if names := f.podNames(); len(names) != 2 {
		t.Errorf("pods %v after the job succeeded, want both kept", names)
	}
}

func exitedZeroStillRunning(p *corev1.Pod) {
	succeeded(p)
	p.Status.Phase = corev1.PodRunning
}
