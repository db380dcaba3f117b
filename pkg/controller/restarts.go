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

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

func (r *reconciler) observe(s *slot, debug bool) {
	p := s.pod
	if p == nil {
		s.phase = v1beta1.ReplicaCreating
		return
	}
	s.phase = podPhase(p)
	// A replacement recorded in the status (the replica's entry says
	// Deleted, with this pod's UID) is already counted.
	recorded := s.prev != nil && s.prev.Phase == v1beta1.ReplicaDeleted && p.UID != "" && s.prev.UID == p.UID
	if recorded {
		s.replacing, s.phase = true, v1beta1.ReplicaDeleted
	}
	if p.DeletionTimestamp != nil {
		// On its way out; its name is free once it is gone.
		return
	}
	if recorded {
		// The delete has not taken effect yet: just delete again.
		r.delete(p, "it is being replaced")
		return
	}
	if want := runMode(debug); p.Annotations[AnnotationRunMode] != "" && p.Annotations[AnnotationRunMode] != want {
		s.replacing, s.phase = true, v1beta1.ReplicaDeleted
		r.delete(p, fmt.Sprintf("the job's run mode changed to %s", want))
	}
}

// handleTerminated applies the restart policy to a replica whose pod has
// terminated. It returns the reason and message of a job failure, if the
// replica fails the job.
func (r *reconciler) handleTerminated(s *slot, debug bool) (reason, message string) {
	p := s.pod
	if p == nil || s.replacing || p.DeletionTimestamp != nil {
		return "", ""
	}
	policy := s.group.Spec.RestartPolicy
	host := s.id.Hostname()
	switch p.Status.Phase {
	case corev1.PodSucceeded:
		switch {
		case debug:
			r.replace(s, corev1.EventTypeNormal, "debug replica %s exited; starting it again", host)
		case restartsOnSuccess(policy):
			r.replace(s, corev1.EventTypeNormal, "replica %s succeeded; restarting it (restart policy Always)", host)
		}
	case corev1.PodFailed:
		code, known := exitCode(r.kind, p)
		what := "failed"
		if known {
			what = fmt.Sprintf("failed with exit code %d", code)
		}
		switch {
		case debug:
			r.replace(s, corev1.EventTypeNormal, "debug replica %s %s; starting it again", host, what)
		case isDisrupted(p):
			r.replace(s, corev1.EventTypeWarning, "replica %s was disrupted (%s); replacing it without using the backoff",
				host, disruptionReason(p))
		case !restartsOnFailure(policy, code, known):
			return ReasonReplicaFailed, fmt.Sprintf("replica %s %s (restart policy %s)", host, what, restartPolicyName(policy))
		case r.status.BackoffCount >= backoffLimit(r.spec):
			return ReasonBackoffLimitExceeded, fmt.Sprintf("replica %s %s and the job has used all %d of its restarts",
				host, what, backoffLimit(r.spec))
		default:
			r.status.BackoffCount++
			r.failure = fmt.Sprintf("replica %s %s", host, what)
			r.replace(s, corev1.EventTypeWarning, "replica %s %s; restarting it (restart %d of %d)",
				host, what, r.status.BackoffCount, backoffLimit(r.spec))
		}
	}
	return "", ""
}

func restartPolicyName(p v1beta1.RestartPolicy) string {
	if p == "" {
		return string(v1beta1.RestartPolicyNever)
	}
	return string(p)
}

func disruptionReason(p *corev1.Pod) string {
	if p.Status.Reason != "" {
		return p.Status.Reason
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Reason != "" {
			return c.Reason
		}
	}
	return string(corev1.DisruptionTarget)
}

// replace deletes a replica's pod so that a new one is created under the
// same name once the old one is gone.
func (r *reconciler) replace(s *slot, eventType, format string, args ...any) {
	s.replacing, s.phase = true, v1beta1.ReplicaDeleted
	r.restarts[s.id.Type]++
	r.event(eventType, ReasonRestarting, format, args...)
	r.delete(s.pod, "it is being replaced")
}

// planPause deletes every pod; the job is Paused once none is left.
func runMode(debug bool) string {
	if debug {
		return RunModeDebug
	}
	return RunModeImmediate
}

// deleteExpiredJob deletes a job whose TTL after finishing ran out.
