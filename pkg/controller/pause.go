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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

func (r *reconciler) planPause() {
	remaining := len(r.extra)
	for _, s := range r.slots {
		if s.pod == nil {
			s.phase = v1beta1.ReplicaDeleted
			continue
		}
		remaining++
		s.phase = podPhase(s.pod)
		if s.pod.DeletionTimestamp == nil {
			r.delete(s.pod, "the job is paused")
		}
	}
	if remaining > 0 {
		r.setCondition(v1beta1.ConditionPaused, metav1.ConditionTrue, ReasonPausing,
			fmt.Sprintf("waiting for %d pods to terminate", remaining))
		return
	}
	r.setCondition(v1beta1.ConditionPaused, metav1.ConditionTrue, ReasonPaused, "the job is paused: it has no pods")
	if r.status.Phase != v1beta1.JobPaused {
		r.status.Phase = v1beta1.JobPaused
		r.event(corev1.EventTypeNormal, ReasonPaused, "Paused: every pod of the job is gone")
	}
}

// finish makes the job terminal and plans its clean-up.
func (r *reconciler) hasBeenPaused() bool {
	c := meta.FindStatusCondition(r.status.Conditions, v1beta1.ConditionPaused)
	return c != nil && (c.Status == metav1.ConditionTrue || c.Reason == ReasonResumed)
}
