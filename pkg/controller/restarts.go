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
	"time"

	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// Reasons of restarts: the events of a replica or the whole job restarting,
// and the Failed condition of a job out of restarts.
const (
	ReasonRestarting           = "Restarting"
	ReasonRestartingJob        = "RestartingJob"
	ReasonBackoffLimitExceeded = "BackoffLimitExceeded"
)

// observeReplica notes what a replica's pod is doing, finishes replacements decided
// earlier, and notes an exit that needs a decision (s.exit).
//
// A replica's outcome survives its pod: the status records it, and the pod
// keeps the ReplicaOutcomeFinalizer until it does. So a replica without a
// pod is judged by what the status recorded:
//   - Deleted: it is being replaced; it is created again once its restart
//     backoff has passed;
//   - Succeeded: it is done and is not run again (unless it restarts on
//     success: Always, or debug mode);
//   - Pending, Running, Unknown or Failed, with a pod UID: its pod vanished
//     before its outcome was recorded (deleted with its finalizer stripped,
//     or by a controller that did not yet track outcomes). It counts as a
//     failure with an unknown exit code, under the replica's policies: a pod
//     that vanished cannot be shown to have succeeded, and treating it as
//     failed keeps backoffLimit and Never meaningful. Not while the pod
//     cache is behind the controller's own creates and deletes: the pod may
//     exist and not be cached yet.
func (r *reconciler) observeReplica(s *slot, debug bool) {
	if s.pod == nil {
		r.observePodlessReplica(s, debug)
	} else {
		r.observeReplicaPod(s, debug)
	}
}

// observePodlessReplica judges a replica without a pod by what the status
// recorded of it (observeReplica).
func (r *reconciler) observePodlessReplica(s *slot, debug bool) {
	s.phase = v1beta1.ReplicaCreating
	if s.prev == nil {
		return
	}
	switch s.prev.Phase {
	case v1beta1.ReplicaDeleted:
		restartingJob := s.prev.Reason == ReasonRestartingJob
		if restartingJob && r.jobRestartDraining {
			// Part of a whole-job restart whose old pods are not all
			// gone: wait for them (their deletion requeues the job).
			s.phase, s.restartAt, s.reason = v1beta1.ReplicaDeleted, s.prev.RestartAt, ReasonRestartingJob
			return
		}
		if at := s.prev.RestartAt; at != nil && r.now.Before(at.Time) {
			s.phase, s.restartAt, s.reason = v1beta1.ReplicaDeleted, at, ReasonBackOff
			if restartingJob {
				s.reason = ReasonRestartingJob
			}
			r.decided.requeueAt(at.Time)
		}
	case v1beta1.ReplicaSucceeded:
		s.phase = v1beta1.ReplicaSucceeded
		if rerunsAfterSuccess(debug, s.group.Spec.RestartPolicy) {
			s.exit = &replicaExit{containers: s.prev.Containers, succeeded: true, how: "succeeded"}
		}
	case v1beta1.ReplicaPending, v1beta1.ReplicaRunning, v1beta1.ReplicaUnknown, v1beta1.ReplicaFailed:
		if s.prev.UID != "" && r.cacheBehind {
			// The pod may just not be in the cache yet (the status can
			// record a pod as soon as it is created): judge it once the
			// cache has caught up.
			s.phase = s.prev.Phase
			return
		}
		if s.prev.UID != "" {
			s.phase = v1beta1.ReplicaFailed
			s.exit = &replicaExit{containers: s.prev.Containers, how: "vanished before its outcome was recorded"}
		}
	}
}

// observeReplicaPod judges a replica by its pod (observeReplica).
func (r *reconciler) observeReplicaPod(s *slot, debug bool) {
	p := s.pod
	s.phase = podPhase(p)
	// A replacement recorded in the status (the replica's entry says
	// Deleted, with this pod's UID) is already counted.
	recorded := s.prev != nil && s.prev.Phase == v1beta1.ReplicaDeleted && p.UID != "" && s.prev.UID == p.UID
	if recorded {
		s.replacing, s.phase = true, v1beta1.ReplicaDeleted
		s.restartAt, s.reason = s.prev.RestartAt, s.prev.Reason
		if p.DeletionTimestamp == nil {
			// The delete has not taken effect yet: just delete again.
			r.decided.delete(p, "it is being replaced")
		}
		return
	}
	if p.Status.Phase == corev1.PodRunning && p.Status.StartTime != nil &&
		r.now.Sub(p.Status.StartTime.Time) >= r.c.backoff.Reset {
		// A replica that has run cleanly for a while starts its delays anew.
		s.restartCount = 0
	}
	switch {
	case podOutcome(p) == corev1.PodSucceeded:
		if rerunsAfterSuccess(debug, s.group.Spec.RestartPolicy) {
			s.exit = &replicaExit{pod: p, succeeded: true, how: "succeeded"}
		}
		return
	case p.Status.Phase == corev1.PodFailed:
		s.exit = r.failedExit(p, "failed")
		return
	case podbuilder.InPlace(r.spec) && inPlaceFailed(p, r.status.AttemptCount):
		// Its restart agent keeps the pod, so that the decision can
		// restart it in place.
		s.phase = v1beta1.ReplicaFailed
		s.exit = r.failedExit(p, "failed")
		return
	case p.DeletionTimestamp != nil:
		// Deleted by someone else while it ran: it will not run on, and
		// what it would have done is unknown.
		s.phase = v1beta1.ReplicaFailed
		s.exit = &replicaExit{pod: p, how: "was deleted while it ran"}
		return
	}
	if runModeChanged(p, debug) {
		r.decided.discard(s, fmt.Sprintf("the job's run mode changed to %s", podbuilder.RunMode(debug)))
		return
	}
	if want := r.topo.Shape(); !r.stop.holdResize && madeForOtherShape(p, want) {
		r.decided.discard(s, fmt.Sprintf("the job's replicas changed to %s", want))
	}
}

// failedExit describes a failed pod by how its container ended, as
// people read it in conditions and events: "OOMKilled (exit 137): <the end
// of its termination message>".
func (r *reconciler) failedExit(p *corev1.Pod, verb string) *replicaExit {
	code, known := exitCode(r.kind, p)
	how := verb
	if t := failedTermination(r.kind, p); t != nil {
		how = terminationOf(t).Summary()
	} else if known {
		how = fmt.Sprintf("%s with exit code %d", verb, code)
	}
	return &replicaExit{pod: p, code: code, known: known, how: how, preflight: preflightFailure(p)}
}

// handleExit carries out what a replica's exit means for the job
// (decideExit). It returns the reason and message of a job failure, if the
// exit fails the job.
func (r *reconciler) handleExit(s *slot, debug bool) (reason, message string) {
	if s.exit == nil || s.replacing {
		return "", ""
	}
	d := decideExit(exitInput{
		exit:          s.exit,
		host:          s.id.Hostname(),
		typ:           s.id.Type,
		debug:         debug,
		rules:         r.spec.RunPolicy.FailurePolicy,
		restartPolicy: s.group.Spec.RestartPolicy,
	})
	switch d.action {
	case exitReplaced:
		r.restartReplica(s, d.prompt, d.eventType, "%s", d.event)
	case exitMovesNode:
		return r.retryElsewhere(s)
	case exitCountedRestart:
		if podbuilder.InPlace(r.spec) && !r.recreatesOnRestart() {
			// A pod of a job that restarts in place is never replaced
			// alone: the replicas meet again in a new attempt.
			return r.restartJob(s, d.why)
		}
		return r.countedRestart(s, d.why)
	case exitRestartsJob:
		return r.restartJob(s, d.why)
	case exitFailsJob:
		if d.reason == ReasonReplicaFailed {
			return r.failForGood(s, d.reason, d.message)
		}
		return d.reason, d.message
	}
	return "", ""
}

// failForGood records a replica failure that its restart policy does not
// restart, and returns the reason and message that fail the job, or none
// while the kind's failure rules let it run on (failureFailsJob).
func (r *reconciler) failForGood(s *slot, reason, message string) (string, string) {
	s.failedForGood = true
	failed := failedSlots{job: r.job.GetName(), byName: r.byName}
	if fails, why := failureFailsJob(r.kind.Adapter, r.topo, r.spec.RunPolicy.SuccessPolicy, failed); fails {
		return reason, message + why
	}
	s.phase = v1beta1.ReplicaFailed
	r.failure = message
	if s.prev == nil || s.prev.Phase != v1beta1.ReplicaFailed {
		r.decided.event(corev1.EventTypeWarning, ReasonFailureTolerated,
			"%s; the job runs on: no failure rule holds, and a success rule still can", message)
	}
	return "", ""
}

// retryElsewhere replaces a replica whose preflight check failed; its node
// is suspect now, so the new pod goes elsewhere. It uses up one of the
// job's restarts only when the node is new to the list: a check that keeps
// failing costs a restart once per node.
func (r *reconciler) retryElsewhere(s *slot) (reason, message string) {
	if s.newSuspect {
		return r.countedRestart(s, "its node's preflight check failed")
	}
	r.restartReplica(s, true, corev1.EventTypeWarning, "replica %s %s on a suspect node; creating it on another node without counting it",
		s.id.Hostname(), s.exit.how)
	return "", ""
}

// countedRestart replaces a failed replica, using up one of the job's
// restarts, or fails the job when none is left.
func (r *reconciler) countedRestart(s *slot, why string) (reason, message string) {
	host, how := s.id.Hostname(), s.exit.how
	limit := backoffLimit(r.spec)
	if r.status.BackoffCount >= limit {
		return ReasonBackoffLimitExceeded, fmt.Sprintf("the job has used all %d of its restarts, and replica %s %s", limit, host, how)
	}
	r.status.BackoffCount++
	r.failure = fmt.Sprintf("replica %s %s", host, how)
	r.restartReplica(s, false, corev1.EventTypeWarning, "replica %s %s; restarting it (%s; restart %d of %d)",
		host, how, why, r.status.BackoffCount, limit)
	return "", ""
}

// restartReplica deletes a replica's pod so that a new one is created under
// the same name once the old one is gone and, unless prompt, the restart
// backoff has passed, counted from the exit. An empty eventType records no
// event (the caller did).
func (r *reconciler) restartReplica(s *slot, prompt bool, eventType, format string, args ...any) {
	s.replacing, s.phase = true, v1beta1.ReplicaDeleted
	s.restartAt, s.reason = nil, ""
	r.restarts[s.id.Type]++
	when := "now"
	if !prompt {
		d := decideRestart(s.exit.pod, s.restartCount, r.c.backoff, r.now)
		s.restartCount = d.count
		if d.at != nil {
			s.restartAt, s.reason = d.at, ReasonBackOff
			r.decided.requeueAt(d.at.Time)
			when = "at " + d.at.UTC().Format(time.RFC3339)
		}
	}
	if eventType != "" {
		r.decided.event(eventType, ReasonRestarting, "%s; the new pod starts %s", fmt.Sprintf(format, args...), when)
	}
	if p := s.pod; p != nil && p.DeletionTimestamp == nil {
		r.decided.delete(p, "it is being replaced")
	}
}

// restartJob deletes every pod of the job and creates them all again once
// the failed replica's backoff has passed, or, under restartStrategy
// InPlace, restarts them where they are (inplace.go); it uses up one
// restart, however many replicas failed at once.
func (r *reconciler) restartJob(s *slot, why string) (reason, message string) {
	host, how := s.id.Hostname(), s.exit.how
	if !r.restartingJob {
		limit := backoffLimit(r.spec)
		if r.status.BackoffCount >= limit {
			return ReasonBackoffLimitExceeded, fmt.Sprintf("the job has used all %d of its restarts, and replica %s %s", limit, host, how)
		}
		if !r.stopRunning(StopRestartJob, fmt.Sprintf("replica %s %s; every replica restarts (%s)", host, how, why)) {
			// The other replicas are asked for a checkpoint first; the
			// failed one waits with them, counted once the stop goes ahead.
			return "", ""
		}
		r.status.BackoffCount++
		r.restartingJob = true
		r.failure = fmt.Sprintf("replica %s %s", host, how)
		restart := "restarting every replica of the job"
		if r.restartsInPlace() {
			restart = fmt.Sprintf("restarting every replica of the job in place, as attempt %d", r.status.AttemptCount)
		}
		r.decided.event(corev1.EventTypeWarning, ReasonRestartingJob, "replica %s %s; %s (%s; restart %d of %d)",
			host, how, restart, why, r.status.BackoffCount, limit)
	}
	if r.restartsInPlace() {
		return "", ""
	}
	r.restartReplica(s, false, "", "")
	r.replaceEveryReplica("the whole job is being restarted")
	if at := s.restartAt; at != nil {
		for _, other := range r.slots {
			if other.restartAt == nil || other.restartAt.Before(at) {
				other.restartAt = at
			}
		}
	}
	return "", ""
}

// replaceEveryReplica deletes the pod of every replica not already being
// replaced, and tags every replica as part of a whole-job restart, so that
// no new pod starts before every old one is gone (observeReplica): a new
// rank must never meet an old one at the rendezvous.
func (r *reconciler) replaceEveryReplica(why string) {
	for _, s := range r.slots {
		s.reason = ReasonRestartingJob
		if s.replacing {
			continue
		}
		s.replacing, s.phase = true, v1beta1.ReplicaDeleted
		r.restarts[s.id.Type]++
		if s.pod != nil && s.pod.DeletionTimestamp == nil {
			r.decided.delete(s.pod, why)
		}
	}
}

// planJobRestartDrain notes, before the replicas are observed, whether a
// whole-job restart still waits for old pods to go.
func (r *reconciler) planJobRestartDrain() {
	for _, s := range r.slots {
		if p := s.pod; p != nil && s.prev != nil && s.prev.Phase == v1beta1.ReplicaDeleted &&
			s.prev.UID == p.UID && s.prev.Reason == ReasonRestartingJob {
			r.jobRestartDraining = true
			return
		}
	}
}

// noteSuspectNode adds the node of a replica that failed because of it
// (nodeBlame) to status.suspectNodes, and says whether the node is new to
// the list.
func (r *reconciler) noteSuspectNode(s *slot) bool {
	ex := s.exit
	if ex == nil || ex.succeeded || ex.pod == nil || s.replacing {
		return false
	}
	reason, message := nodeBlame(r.kind.Adapter, r.spec, ex.pod)
	if reason == "" {
		return false
	}
	node := ex.pod.Spec.NodeName
	nodes, added := addSuspectNode(r.status.SuspectNodes, v1beta1.SuspectNode{
		Name: node, Reason: reason, Message: batch.CutBytes(message, batch.MaxSuspectNodeMessageBytes), Time: *r.metaNow(),
	})
	if !added {
		return false
	}
	r.status.SuspectNodes = nodes
	r.decided.event(corev1.EventTypeWarning, ReasonNodeSuspect, "Node %s is left out of the job's next pods: %s (%s)", node, message, reason)
	return true
}
