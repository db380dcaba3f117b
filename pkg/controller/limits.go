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
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// refuseOverLimit handles a job beyond the limits every job keeps (see
// Topology.limitError): no slot, pod or replica status is built for it, and
// no pod is created or deleted. The job says why in its ReplicaFailure
// condition (reason TooManyReplicas) and a Warning event, keeps its phase
// (Pending if it had none), and waits for its spec to change.
func (r *reconciler) refuseOverLimit(ctx context.Context, why error) error {
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
	if err := r.writeStatus(ctx); err != nil {
		return err
	}
	r.flushEvents()
	return nil
}

// resolveReplicaFailure turns a ReplicaFailure condition that is True for
// the given reason False, once its cause is gone.
func (r *reconciler) resolveReplicaFailure(reason, resolvedReason, message string) {
	c := meta.FindStatusCondition(r.status.Conditions, v1beta1.ConditionReplicaFailure)
	if c != nil && c.Status == metav1.ConditionTrue && c.Reason == reason {
		r.setCondition(v1beta1.ConditionReplicaFailure, metav1.ConditionFalse, resolvedReason, message)
	}
}

// reportStatusTooLarge handles a status the apiserver refused for its size.
// The status lists every replica; a job at the replica cap with a very large
// spec can still outgrow what etcd stores. Rather than fail quietly on every
// reconcile, the controller records a Warning event and sets the
// ReplicaFailure condition (reason StatusTooLarge) on the status it last
// stored, which fitted. It acts on nothing meanwhile: what it planned is
// safe to do only once recorded. The returned error has the job retried
// with backoff.
func (r *reconciler) reportStatusTooLarge(ctx context.Context, cause error) error {
	r.logger.Error(cause, "The job's status is too large to store")
	r.c.recorder.Eventf(r.job, corev1.EventTypeWarning, ReasonStatusTooLarge, "Cannot store the job's status: %v", cause)
	*r.status = *r.old.DeepCopy()
	r.setCondition(v1beta1.ConditionReplicaFailure, metav1.ConditionTrue, ReasonStatusTooLarge, fmt.Sprintf(
		"the job's status is too large to store (%v); no pods are created or deleted until it fits", cause))
	r.events = nil
	if equality.Semantic.DeepEqual(r.old, r.status) {
		return cause
	}
	updated, err := r.patchStatus(ctx)
	if err != nil {
		return errors.Join(cause, fmt.Errorf("reporting that the status is too large: %w", err))
	}
	r.c.statusWrites.wrote(r.key, updated.GetResourceVersion())
	r.setJob(updated)
	return cause
}

// tooLargeMessages are how etcd, and its gRPC client, refuse a write over
// their size limits; the apiserver may pass either on in a 500.
var tooLargeMessages = []string{"request is too large", "trying to send message larger than max"}

// isTooLarge says whether a write was refused for its size: a 413 from the
// apiserver, etcd's own refusal passed on, or a 422 whose causes are all
// about length or number of items.
func isTooLarge(err error) bool {
	if apierrors.IsRequestEntityTooLargeError(err) {
		return true
	}
	for _, m := range tooLargeMessages {
		if strings.Contains(err.Error(), m) {
			return true
		}
	}
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	causes := status.Status().Details.Causes
	for _, c := range causes {
		if c.Type != metav1.CauseTypeTooLong && c.Type != metav1.CauseTypeTooMany {
			return false
		}
	}
	return len(causes) > 0
}
