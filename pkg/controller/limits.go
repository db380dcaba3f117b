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

// Reasons of the ReplicaFailure condition, and of the event, of a job beyond
// the limits on replicas (one stored before they existed), and a status too
// large to store; each condition turns False with the second reason of its
// pair once its cause is gone.
const (
	ReasonTooManyReplicas     = "TooManyReplicas"
	ReasonReplicasWithinLimit = "ReplicasWithinLimit"
	ReasonStatusTooLarge      = "StatusTooLarge"
	ReasonStatusStored        = "StatusStored"
)

// planOverLimit plans a job beyond the limits every job keeps (see
// Topology.limitError): no slot, pod or replica status is built for it, and
// no pod is created or deleted. The job says why in its ReplicaFailure
// condition (reason TooManyReplicas) and a Warning event, keeps its phase
// (Pending if it had none), and waits for its spec to change.
func (r *reconciler) planOverLimit(why error) {
	message := fmt.Sprintf("%v: the controller creates no pods for it until spec.replicaSpecs is within the limits", why)
	r.logger.V(2).Info("Not acting on a job beyond the limits", "reason", why)
	if c := meta.FindStatusCondition(r.status.Conditions, v1beta1.ConditionReplicaFailure); c == nil ||
		c.Status != metav1.ConditionTrue || c.Reason != ReasonTooManyReplicas || c.Message != message {
		r.event(corev1.EventTypeWarning, ReasonTooManyReplicas, "%s", message)
	}
	r.setCondition(v1beta1.ConditionReplicaFailure, metav1.ConditionTrue, ReasonTooManyReplicas, message)
	if r.status.Phase == "" {
		r.status.Phase = v1beta1.JobPending
	}
	r.status.ObservedGeneration = r.job.GetGeneration()
}

// resolveReplicaFailure turns a ReplicaFailure condition that is True for
// the given reason False, once its cause is gone.
func (r *reconciler) resolveReplicaFailure(reason, resolvedReason, message string) {
	c := meta.FindStatusCondition(r.status.Conditions, v1beta1.ConditionReplicaFailure)
	if c != nil && c.Status == metav1.ConditionTrue && c.Reason == reason {
		r.setCondition(v1beta1.ConditionReplicaFailure, metav1.ConditionFalse, resolvedReason, message)
	}
}
