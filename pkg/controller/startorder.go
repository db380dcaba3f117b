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

// The startup order carried out: the gates planned and opened (the rule is
// in startorder_policy.go).

// ReasonLeadersReady is the event of a job whose waiting replicas were
// released.
const ReasonLeadersReady = "LeadersReady"

// planStartupGates lists the waiting pods to release, once every leader is
// Ready (decideStartGates).
func (r *reconciler) planStartupGates() {
	if !podbuilder.InOrder(r.spec) || r.status.Phase.IsFinished() {
		return
	}
	in := startGatesInput{}
	for _, id := range r.kind.Leaders(r.topo) {
		var p *corev1.Pod
		if s := r.byName[podbuilder.PodName(r.job.GetName(), id)]; s != nil {
			p = s.pod
		}
		in.leaders = append(in.leaders, p)
	}
	for _, s := range r.slots {
		if s.pod != nil {
			in.pods = append(in.pods, s.pod)
		}
	}
	d := decideStartGates(in)
	r.gatesOpen, r.opens = d.open, d.release
}

// openStartupGates releases the planned pods. A pod gone meanwhile needs
// nothing; its replacement is created open.
func (r *reconciler) openStartupGates(ctx context.Context) error {
	if len(r.opens) == 0 {
		return nil
	}
	opened, err := annotatePods(ctx, r.podClient(), r.logger, r.opens, map[string]any{podbuilder.AnnotationStartupGate: podbuilder.StartupGateOpen},
		"opening the startup gate")
	if opened > 0 {
		r.c.recorder.Eventf(r.job, corev1.EventTypeNormal, ReasonLeadersReady,
			"The job's leaders are ready: released %d waiting replica(s)", opened)
	}
	return err
}
