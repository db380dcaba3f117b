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

// Reasons of a replica failure that fails the job: its restart policy does
// not restart it (also the ReplicaFailure condition's reason), or a
// failurePolicy rule with action FailJob matched (named as Kubernetes' Job
// names it).
const (
	ReasonReplicaFailed    = "ReplicaFailed"
	ReasonPodFailurePolicy = "PodFailurePolicy"
)

// What a replica's exit means for the job, decided over the exit and the
// job's rules alone. In order: a debug pod starts again; a success starts
// again only under Always; a failed preflight check moves the replica to
// another node (suspectnodes_policy.go); a failure goes to the first matching rule
// of spec.runPolicy.failurePolicy, else, for a disruption, to a prompt
// replacement that is not counted, else to the replica's restartPolicy.

// exitAction is what happens to a replica whose pod exited.
type exitAction string

const (
	// exitReplaced: a new pod replaces it without using a restart
	// (debug, success under Always, an Ignore rule, a disruption).
	exitReplaced exitAction = "Replaced"
	// exitMovesNode: its preflight check failed; it runs elsewhere.
	exitMovesNode exitAction = "MovesNode"
	// exitCountedRestart: a new pod replaces it, using one of the job's
	// restarts (a RestartReplica rule, or its restart policy).
	exitCountedRestart exitAction = "CountedRestart"
	// exitRestartsJob: every replica starts again (a RestartJob rule).
	exitRestartsJob exitAction = "RestartsJob"
	// exitFailsJob: the job fails (a FailJob rule, or a restart policy
	// that does not restart it).
	exitFailsJob exitAction = "FailsJob"
)

// exitInput is what an exit is decided on.
type exitInput struct {
	exit *replicaExit
	// host names the replica in messages; typ is its replica type.
	host  string
	typ   v1beta1.ReplicaType
	debug bool
	// rules is spec.runPolicy.failurePolicy, restartPolicy the replica's.
	rules         *v1beta1.FailurePolicy
	restartPolicy v1beta1.RestartPolicy
}

// exitDecision is what an exit means.
type exitDecision struct {
	action exitAction
	// prompt: an uncounted replacement starts without the backoff delay.
	prompt bool
	// eventType and event explain a replacement; why names the rule or
	// policy behind a restart.
	eventType, event, why string
	// reason and message, when the job fails.
	reason, message string
}

// decideExit decides what a replica's exit means.
func decideExit(in exitInput) exitDecision {
	ex, host := in.exit, in.host
	switch {
	case in.debug:
		return exitDecision{action: exitReplaced, eventType: corev1.EventTypeNormal,
			event: fmt.Sprintf("debug replica %s %s; starting it again", host, ex.how)}
	case ex.succeeded:
		return exitDecision{action: exitReplaced, eventType: corev1.EventTypeNormal,
			event: fmt.Sprintf("replica %s succeeded; restarting it (restart policy Always)", host)}
	case ex.preflight != nil:
		return exitDecision{action: exitMovesNode}
	}
	disrupted := ex.pod != nil && isDisrupted(ex.pod)
	if rule, i := matchFailurePolicy(in.rules, in.typ, ex); rule != nil {
		which := fmt.Sprintf("failurePolicy rule %d, action %s", i, rule.Action)
		switch rule.Action {
		case v1beta1.FailurePolicyActionFailJob:
			return exitDecision{action: exitFailsJob, reason: ReasonPodFailurePolicy,
				message: fmt.Sprintf("replica %s %s (%s)", host, ex.how, which)}
		case v1beta1.FailurePolicyActionIgnore:
			return exitDecision{action: exitReplaced, prompt: disrupted, eventType: corev1.EventTypeNormal,
				event: fmt.Sprintf("replica %s %s; replacing it without counting it (%s)", host, ex.how, which)}
		case v1beta1.FailurePolicyActionRestartJob:
			return exitDecision{action: exitRestartsJob, why: which}
		default: // RestartReplica
			return exitDecision{action: exitCountedRestart, why: which}
		}
	}
	policy := in.restartPolicy
	switch {
	case disrupted:
		return exitDecision{action: exitReplaced, prompt: true, eventType: corev1.EventTypeWarning,
			event: fmt.Sprintf("replica %s was disrupted (%s); replacing it without using the backoff", host, disruptionReason(ex.pod))}
	case !restartsOnFailure(policy, ex.code, ex.known):
		return exitDecision{action: exitFailsJob, reason: ReasonReplicaFailed,
			message: fmt.Sprintf("replica %s %s (restart policy %s)", host, ex.how, restartPolicyName(policy))}
	}
	return exitDecision{action: exitCountedRestart, why: fmt.Sprintf("restart policy %s", restartPolicyName(policy))}
}

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
