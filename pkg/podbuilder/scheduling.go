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

package podbuilder

import (
	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// PriorityClass buckets of spec.scheduler.t9kScheduler.priority, shipped in
// artifacts/deploy/base/priorityclasses.yaml with the bucket's upper bound as
// value and preemptionPolicy Never: a higher priority goes first in the
// scheduling queue but does not evict running pods.
const (
	PriorityClassP25  = "tensorstack-training-p25"
	PriorityClassP50  = "tensorstack-training-p50"
	PriorityClassP75  = "tensorstack-training-p75"
	PriorityClassP100 = "tensorstack-training-p100"
)

// PriorityClassName maps a priority of 0 to 100 to its PriorityClass:
// 1–25 p25, 26–50 p50, 51–75 p75, 76–100 p100. Priority 0, the default, has
// none, so such pods keep the cluster's default priority and their
// template's class.
func PriorityClassName(priority int32) string {
	switch {
	case priority <= 0:
		return ""
	case priority <= 25:
		return PriorityClassP25
	case priority <= 50:
		return PriorityClassP50
	case priority <= 75:
		return PriorityClassP75
	default:
		return PriorityClassP100
	}
}

// T9kScheduler is the job's request for gang scheduling, or nil.
func T9kScheduler(spec *v1beta1.TrainingJobSpec) *v1beta1.T9kScheduler {
	if spec.Scheduler == nil {
		return nil
	}
	return spec.Scheduler.T9kScheduler
}

// Placement is what a queue's admission asks of one replica type's pods:
// the assigned flavors' node labels and tolerations, the admission checks'
// updates, and the scheduling gates the queue lifts itself (Kueue's
// topology gate).
type Placement struct {
	NodeSelector    map[string]string
	Tolerations     []corev1.Toleration
	Labels          map[string]string
	Annotations     map[string]string
	SchedulingGates []string
}

// place applies the placement to a replica's pod. The job's own labels are
// kept.
func (p *Placement) place(pod *corev1.Pod) {
	if len(p.NodeSelector) > 0 && pod.Spec.NodeSelector == nil {
		pod.Spec.NodeSelector = map[string]string{}
	}
	for k, v := range p.NodeSelector {
		pod.Spec.NodeSelector[k] = v
	}
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, p.Tolerations...)
	for k, v := range p.Labels {
		if _, ours := pod.Labels[k]; !ours {
			pod.Labels[k] = v
		}
	}
	for k, v := range p.Annotations {
		pod.Annotations[k] = v
	}
	for _, gate := range p.SchedulingGates {
		pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: gate})
	}
}
