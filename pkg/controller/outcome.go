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

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// planActive plans a job that has not finished.
func (r *reconciler) planActive() {
	st := r.status
	if !pauseEnabled(r.spec) && r.mayRun() && r.resizing() {
		r.holdResize = !r.stopRunning(StopResize, fmt.Sprintf("the job's replicas change to %s", r.topo.Shape()))
	}
	for _, p := range r.extra {
		if p.DeletionTimestamp == nil && !r.holdResize {
			r.delete(p, "it belongs to no replica of the job")
		}
	}
	if pauseEnabled(r.spec) {
		r.planPause()
		return
	}
	if !r.mayRun() {
		r.planQueued()
		return
	}
	if r.queue != nil {
		r.markAdmitted()
	}

	r.resume()

	debug := podbuilder.DebugEnabled(r.spec)
	r.planJobRestartDrain()
	for _, s := range r.slots {
		r.observeReplica(s, debug)
	}

	// Outcome rules, in order: success, deadline, failures, start timeout, stall.
	if !debug && r.topo.Total > 0 && jobSucceeded(r.kind.Adapter, r.topo, r.spec.RunPolicy.SuccessPolicy, r) {
		r.finish(v1beta1.JobSucceeded, ReasonSucceeded, "the job succeeded")
		return
	}
	if r.planDeadline() {
		return
	}
	for _, s := range r.slots {
		if !debug {
			r.noteFailedReplica(s)
			s.newSuspect = r.noteSuspectNode(s)
		}
		if reason, message := r.handleExit(s, debug); reason != "" {
			r.failure = message
			r.finish(v1beta1.JobFailed, reason, message)
			return
		}
	}
	if reason, message := r.startTimedOut(); reason != "" {
		r.failure = message
		r.finish(v1beta1.JobFailed, reason, message)
		return
	}
	if reason, message := r.planStall(debug); reason != "" {
		r.finish(v1beta1.JobFailed, reason, message)
		return
	}

	started := r.topo.Total > 0
	for _, s := range r.slots {
		if s.pod == nil && s.phase == v1beta1.ReplicaCreating && !r.holdResize {
			r.creates = append(r.creates, s)
		}
		if s.phase != v1beta1.ReplicaRunning && s.phase != v1beta1.ReplicaSucceeded {
			started = false
		}
	}
	r.beginAttempt()
	st.Phase = activePhase(st.Phase, started)
	r.markInitialized()
	if r.failure != "" {
		r.setCondition(v1beta1.ConditionReplicaFailure, metav1.ConditionTrue, ReasonReplicaFailed, r.failure)
	} else if c := meta.FindStatusCondition(st.Conditions, v1beta1.ConditionReplicaFailure); c != nil &&
		c.Status == metav1.ConditionTrue && started {
		r.setCondition(v1beta1.ConditionReplicaFailure, metav1.ConditionFalse, ReasonReplicasHealthy, "every replica is running")
	}
}

// markInitialized sets the Initialized condition, until it is True: whether
// every replica has its pod (or succeeded without one).
func (r *reconciler) markInitialized() {
	if c := meta.FindStatusCondition(r.status.Conditions, v1beta1.ConditionInitialized); c != nil && c.Status == metav1.ConditionTrue {
		return
	}
	for _, s := range r.slots {
		if s.pod == nil && !s.succeeded() {
			r.setCondition(v1beta1.ConditionInitialized, metav1.ConditionFalse, ReasonCreatingReplicas, "creating the replicas' pods")
			return
		}
	}
	r.setCondition(v1beta1.ConditionInitialized, metav1.ConditionTrue, ReasonReplicasCreated, "every replica has its pod")
}

// activePhase is the phase of an active job: Pending until every replica
// has started (started), then Running, which later restarts do not undo;
// Resuming likewise after a pause.
func activePhase(phase v1beta1.JobPhase, started bool) v1beta1.JobPhase {
	switch {
	case phase == v1beta1.JobRunning:
		return phase
	case started:
		return v1beta1.JobRunning
	case phase == v1beta1.JobResuming:
		return phase
	default:
		return v1beta1.JobPending
	}
}
