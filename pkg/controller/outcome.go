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

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// planActive plans a job that has not finished.
func (r *reconciler) planActive() {
	st := r.status
	for _, p := range r.extra {
		if p.DeletionTimestamp == nil {
			r.delete(p, "it belongs to no replica of the job")
		}
	}
	if pauseEnabled(r.spec) {
		r.planPause()
		return
	}
	if r.queue != nil {
		if !r.queue.admitted {
			r.planQueued()
			return
		}
		r.markAdmitted()
	}

	r.resume()

	debug := podbuilder.DebugEnabled(r.spec)
	for _, s := range r.slots {
		r.observeReplica(s, debug)
	}

	// Outcome rules, in order: success, deadline, failures, start timeout.
	if !debug && r.topo.Total > 0 && r.succeeded() {
		r.finish(v1beta1.JobSucceeded, ReasonSucceeded, "the job succeeded")
		return
	}
	if ads := r.spec.RunPolicy.ActiveDeadlineSeconds; ads != nil && *ads > 0 {
		// A deadline stored before the bound existed could overflow the
		// duration; no later deadline than the bound makes a difference.
		seconds := min(*ads, batch.MaxActiveDeadlineSeconds)
		deadline := st.StartTime.Add(time.Duration(seconds) * time.Second)
		if !r.now.Before(deadline) {
			r.finish(v1beta1.JobFailed, ReasonDeadlineExceeded,
				fmt.Sprintf("the job was active longer than activeDeadlineSeconds (%ds)", *ads))
			return
		}
		r.requeueAt(deadline)
	}
	for _, s := range r.slots {
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

	started := r.topo.Total > 0
	for _, s := range r.slots {
		if s.pod == nil && s.phase == v1beta1.ReplicaCreating {
			r.creates = append(r.creates, s)
		}
		if s.phase != v1beta1.ReplicaRunning && s.phase != v1beta1.ReplicaSucceeded {
			started = false
		}
	}
	switch st.Phase {
	case v1beta1.JobRunning:
	case v1beta1.JobResuming:
		if started {
			st.Phase = v1beta1.JobRunning
		}
	default:
		if started {
			st.Phase = v1beta1.JobRunning
		} else {
			st.Phase = v1beta1.JobPending
		}
	}

	r.markInitialized()
	if r.failure != "" {
		r.setCondition(v1beta1.ConditionReplicaFailure, metav1.ConditionTrue, ReasonReplicaFailed, r.failure)
	} else if c := meta.FindStatusCondition(st.Conditions, v1beta1.ConditionReplicaFailure); c != nil &&
		c.Status == metav1.ConditionTrue && started {
		r.setCondition(v1beta1.ConditionReplicaFailure, metav1.ConditionFalse, ReasonReplicasHealthy, "every replica is running")
	}
}

// succeeded applies the job's success policy to its replicas.
func (r *reconciler) succeeded() bool {
	switch r.spec.RunPolicy.SuccessPolicy {
	case v1beta1.SuccessPolicyAllWorkers, v1beta1.SuccessPolicyAnyWorker:
		workers := r.topo.Group(v1beta1.ReplicaType("worker"))
		if workers == nil || workers.Replicas == 0 {
			// Validation asks for workers; without any, nothing decides.
			return false
		}
		any := r.spec.RunPolicy.SuccessPolicy == v1beta1.SuccessPolicyAnyWorker
		for i := int32(0); i < workers.Replicas; i++ {
			if r.Succeeded(podbuilder.ReplicaID{Type: workers.Type, Index: i}) == any {
				return any
			}
		}
		return !any
	default:
		return r.kind.Succeeded(r.topo, r)
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
