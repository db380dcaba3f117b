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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Clean-up and TTL carried out: a finished job's pods deleted, and the job
// once its TTL has passed (the rules: cleanup_policy.go).

// planTTL deletes the finished job once its TTL has passed, and otherwise
// looks at it again then.
func (r *reconciler) planTTL() {
	done := r.now
	if r.status.CompletionTime != nil {
		done = r.status.CompletionTime.Time
	}
	expiry, ok := ttlExpiry(r.spec.RunPolicy.TTLSecondsAfterFinished, done)
	switch {
	case !ok:
	case r.now.Before(expiry):
		r.requeueAt(expiry)
	default:
		r.deleteJob = true
	}
}

// deleteExpiredJob deletes a job whose TTL after finishing has passed;
// what it owns goes with it (background propagation).
func (r *reconciler) deleteExpiredJob(ctx context.Context) error {
	uid := r.job.GetUID()
	policy := metav1.DeletePropagationBackground
	err := r.kind.delete(ctx, r.key.Namespace, r.key.Name, metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &uid},
		PropagationPolicy: &policy,
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting job after its TTL: %w", err)
	}
	if err == nil {
		r.logger.V(2).Info("Deleted job after its TTL")
		r.c.recorder.Event(r.job, corev1.EventTypeNormal, ReasonTTLExpired, "Deleted the job: ttlSecondsAfterFinished passed")
	}
	return nil
}
