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
	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/pkg/podbuilder"
)

// podOutcome is the phase a pod has, or the one it is certain to reach: a
// pod whose containers have all exited 0 and will not run again has
// succeeded, although its phase says so only once the kubelet has torn its
// sandbox down (a second or more later). Deciding a job's outcome from the
// containers saves that time, and the kubelet cannot come to another
// conclusion: it derives the phase from the same container states.
//
// A pod that restarts in place has failed once one of its containers
// failed: its restart agent keeps it running for a restart the controller
// may or may not decide.
func podOutcome(p *corev1.Pod) corev1.PodPhase {
	if p.Status.Phase == corev1.PodRunning {
		if containersSucceeded(p) {
			return corev1.PodSucceeded
		}
		if containerFailedBesideAgent(p) {
			return corev1.PodFailed
		}
	}
	return p.Status.Phase
}

// containerFailedBesideAgent says whether a pod with an in-place restart
// agent has another regular container that exited non-zero.
func containerFailedBesideAgent(p *corev1.Pod) bool {
	if _, ok := podbuilder.PodAttempt(p); !ok {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 && !podbuilder.IsRestartAgent(cs.Name) {
			return true
		}
	}
	return false
}

// containersSucceeded says whether the kubelet has reported every regular
// container of the pod exited with code 0, under restart rules that do not
// run a container again after it exits 0. A container with restart rules of
// its own is left to the kubelet's phase: its rules may run it again. The
// in-place restart agent is left aside: it runs until the controller, seeing
// the others done, tells it to stop.
func containersSucceeded(p *corev1.Pod) bool {
	if p.Spec.RestartPolicy == corev1.RestartPolicyAlways || len(p.Spec.Containers) == 0 ||
		len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
		return false
	}
	for i := range p.Spec.Containers {
		if c := &p.Spec.Containers[i]; (c.RestartPolicy != nil || len(c.RestartPolicyRules) > 0) && !podbuilder.IsRestartAgent(c.Name) {
			return false
		}
	}
	for i := range p.Status.ContainerStatuses {
		if podbuilder.IsRestartAgent(p.Status.ContainerStatuses[i].Name) {
			// It runs until told the pod is done (planAgentStops).
			continue
		}
		t := p.Status.ContainerStatuses[i].State.Terminated
		if t == nil || t.ExitCode != 0 {
			return false
		}
	}
	return true
}

// isTerminated says whether a pod has ended, or certainly will without
// running anything more.
func isTerminated(pod *corev1.Pod) bool {
	phase := podOutcome(pod)
	return phase == corev1.PodSucceeded || phase == corev1.PodFailed
}
