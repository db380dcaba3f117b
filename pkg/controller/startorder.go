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
	"context"

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

// leadersReady says whether every leader's pod is Ready: its containers run
// and pass their readiness probes.
func (r *reconciler) leadersReady() bool {
	leaders := r.kind.Leaders(r.topo)
	if len(leaders) == 0 {
		return true
	}
	for _, id := range leaders {
		s := r.byName[podbuilder.PodName(r.job.GetName(), id)]
		if s == nil || s.pod == nil || s.pod.DeletionTimestamp != nil || !podReady(s.pod) {
			return false
		}
	}
	return true
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// planStartupGates lists the waiting pods to release, once every leader is
// Ready.
func (r *reconciler) planStartupGates() {
	if !podbuilder.InOrder(r.spec) || r.status.Phase.IsFinished() || !r.leadersReady() {
		return
	}
	r.gatesOpen = true
	for _, s := range r.slots {
		if p := s.pod; p != nil && p.DeletionTimestamp == nil && p.Annotations[podbuilder.AnnotationStartupGate] == podbuilder.StartupGateClosed {
			r.opens = append(r.opens, p)
		}
	}
}

// openStartupGates releases the planned pods. A pod gone meanwhile needs
// nothing; its replacement is created open.
func (r *reconciler) openStartupGates(ctx context.Context) error {
	if len(r.opens) == 0 {
		return nil
	}
	opened, err := r.annotatePods(ctx, r.opens, map[string]any{podbuilder.AnnotationStartupGate: podbuilder.StartupGateOpen},
		"opening the startup gate")
	if opened > 0 {
		r.c.recorder.Eventf(r.job, corev1.EventTypeNormal, ReasonLeadersReady,
			"The job's leaders are ready: released %d waiting replica(s)", opened)
	}
	return err
}
