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
	"slices"

	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// replicaExit is what the controller knows about how a replica's pod ended.
type replicaExit struct {
	// pod is the pod that ended; nil when it vanished and only the status
	// recorded it.
	pod *corev1.Pod
	// containers are the containers as last recorded, for a vanished pod.
	containers []v1beta1.ContainerStatus
	succeeded  bool
	// code is the training container's exit code, when known.
	code  int32
	known bool
	// how says how it ended, for events and conditions.
	how string
	// preflight is how the pod's preflight check failed, when it did: the
	// training container never ran.
	preflight *corev1.ContainerStateTerminated
}

// matchFailurePolicy returns the first rule of the job's failure policy that
// matches a failed pod of a replica type, and its index; -1 when none does.
func matchFailurePolicy(policy *v1beta1.FailurePolicy, typ v1beta1.ReplicaType, ex *replicaExit) (*v1beta1.FailurePolicyRule, int) {
	if policy == nil {
		return nil, -1
	}
	for i := range policy.Rules {
		if ruleMatches(&policy.Rules[i], typ, ex) {
			return &policy.Rules[i], i
		}
	}
	return nil, -1
}

// ruleMatches says whether every part the rule sets matches.
func ruleMatches(rule *v1beta1.FailurePolicyRule, typ v1beta1.ReplicaType, ex *replicaExit) bool {
	if len(rule.ReplicaTypes) > 0 && !slices.ContainsFunc(rule.ReplicaTypes, func(t v1beta1.ReplicaType) bool {
		return t == typ
	}) {
		return false
	}
	if rule.OnExitCodes != nil && !exitCodesMatch(rule.OnExitCodes, ex) {
		return false
	}
	if len(rule.OnPodConditions) > 0 && !podConditionsMatch(rule.OnPodConditions, ex.pod) {
		return false
	}
	if len(rule.OnReasons) > 0 && !reasonsMatch(rule.OnReasons, ex) {
		return false
	}
	return true
}

// exitCodesMatch compares the non-zero exit codes of the terminated
// containers (all, or the one named) with the rule's values.
func exitCodesMatch(req *v1beta1.FailurePolicyOnExitCodes, ex *replicaExit) bool {
	check := func(name string, code int32) bool {
		if code == 0 || (req.ContainerName != nil && *req.ContainerName != name) {
			return false
		}
		in := slices.Contains(req.Values, code)
		if req.Operator == v1beta1.FailurePolicyOnExitCodesOpNotIn {
			return !in
		}
		return in
	}
	if ex.pod == nil {
		for _, c := range ex.containers {
			if c.State == v1beta1.ContainerStateTerminated && check(c.Name, c.ExitCode) {
				return true
			}
		}
		return false
	}
	for _, statuses := range [][]corev1.ContainerStatus{ex.pod.Status.InitContainerStatuses, ex.pod.Status.ContainerStatuses} {
		for _, cs := range statuses {
			if t := cs.State.Terminated; t != nil && check(cs.Name, t.ExitCode) {
				return true
			}
		}
	}
	return false
}

// podConditionsMatch says whether the pod has one of the conditions; a
// pattern without a status asks for True.
func podConditionsMatch(patterns []v1beta1.FailurePolicyOnPodCondition, pod *corev1.Pod) bool {
	if pod == nil {
		return false
	}
	for _, want := range patterns {
		status := want.Status
		if status == "" {
			status = corev1.ConditionTrue
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == want.Type && c.Status == status {
				return true
			}
		}
	}
	return false
}

// reasonsMatch says whether a container terminated, or the pod failed, with
// one of the reasons; for a vanished pod, as the status recorded the ends of
// its containers.
func reasonsMatch(reasons []string, ex *replicaExit) bool {
	pod := ex.pod
	if pod == nil {
		for _, c := range ex.containers {
			// Only an end of the vanished pod's own containers: a running
			// container's record is of an earlier pod.
			if t := c.LastTermination; c.State == v1beta1.ContainerStateTerminated && t != nil && t.Reason != "" && slices.Contains(reasons, t.Reason) {
				return true
			}
		}
		return false
	}
	if pod.Status.Reason != "" && slices.Contains(reasons, pod.Status.Reason) {
		return true
	}
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range statuses {
			if t := cs.State.Terminated; t != nil && t.Reason != "" && slices.Contains(reasons, t.Reason) {
				return true
			}
		}
	}
	return false
}

// applyRule carries out the action of the failure policy rule that matched.
func (r *reconciler) applyRule(s *slot, rule *v1beta1.FailurePolicyRule, index int, disrupted bool) (reason, message string) {
	host, how := s.id.Hostname(), s.exit.how
	which := fmt.Sprintf("failurePolicy rule %d, action %s", index, rule.Action)
	switch rule.Action {
	case v1beta1.FailurePolicyActionFailJob:
		return ReasonPodFailurePolicy, fmt.Sprintf("replica %s %s (%s)", host, how, which)
	case v1beta1.FailurePolicyActionIgnore:
		r.restartReplica(s, disrupted, corev1.EventTypeNormal, "replica %s %s; replacing it without counting it (%s)", host, how, which)
		return "", ""
	case v1beta1.FailurePolicyActionRestartJob:
		return r.restartJob(s, which)
	default: // RestartReplica
		return r.countedRestart(s, which)
	}
}

// restartJob deletes every pod of the job and creates them all again once
// the failed replica's backoff has passed; it uses up one restart, however
// many replicas failed at once.
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
		r.event(corev1.EventTypeWarning, ReasonRestartingJob, "replica %s %s; restarting every replica of the job (%s; restart %d of %d)",
			host, how, why, r.status.BackoffCount, limit)
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
			r.delete(s.pod, why)
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
