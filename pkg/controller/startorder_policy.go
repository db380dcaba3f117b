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

// Startup order (runPolicy.startupPolicy: InOrder) holds the containers of
// every replica but the leaders until the leaders are Ready. The pods are
// created together, so a gang scheduler still places them at once; only
// their containers wait, behind an init container that the controller
// releases. It cannot use scheduling gates, which would keep the pods
// from being placed with the gang, nor wait on DNS, which lists a
// replica's address (publishNotReadyAddresses) before its container runs.
//
// The gate is an annotation on the pod, which the init container reads
// through a downward API volume: the kubelet rewrites the file when the
// annotation changes, so opening the gate is one patch per waiting pod.

// ReasonLeadersReady is the event of a job whose waiting replicas were
// released.
const ReasonLeadersReady = "LeadersReady"

// startGatesInput is what the gates of an InOrder job that has not
// finished are decided on.
type startGatesInput struct {
	// leaders are the leaders' pods, in the kind's order; nil for a leader
	// without one.
	leaders []*corev1.Pod
	// pods are the pods of every replica.
	pods []*corev1.Pod
}

// startGates is what the gates do now.
type startGates struct {
	// open: every leader is Ready; pods created now start released.
	open bool
	// release are the waiting pods to release.
	release []*corev1.Pod
}

// decideStartGates opens the gates once every leader's pod is Ready: its
// containers run and pass their readiness probes.
func decideStartGates(in startGatesInput) startGates {
	for _, p := range in.leaders {
		if p == nil || p.DeletionTimestamp != nil || !podReady(p) {
			return startGates{}
		}
	}
	d := startGates{open: true}
	for _, p := range in.pods {
		if p.DeletionTimestamp == nil && p.Annotations[podbuilder.AnnotationStartupGate] == podbuilder.StartupGateClosed {
			d.release = append(d.release, p)
		}
	}
	return d
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
