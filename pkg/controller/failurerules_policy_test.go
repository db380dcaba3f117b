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
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// Table tests of the pure rules the reconcile applies, one per rule, as
// Kubernetes tests its Job controller's matchPodFailurePolicy.

// failedPod is a failed pod whose containers ended as given: name → exit
// code and reason.
func failedPod(init, containers map[string]corev1.ContainerStateTerminated, conditions ...corev1.PodCondition) *corev1.Pod {
	p := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Conditions: conditions}}
	for name, t := range init {
		p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses,
			corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &t}})
	}
	for name, t := range containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses,
			corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &t}})
	}
	return p
}

func TestRuleMatches(t *testing.T) {
	exited := func(code int32, reason string) corev1.ContainerStateTerminated {
		return corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}
	}
	oom := &replicaExit{pod: failedPod(nil, map[string]corev1.ContainerStateTerminated{"pytorch": exited(137, "OOMKilled")})}
	twoContainers := &replicaExit{pod: failedPod(nil, map[string]corev1.ContainerStateTerminated{
		"pytorch": exited(0, "Completed"), "sidecar": exited(42, "Error")})}
	initFailed := &replicaExit{pod: failedPod(map[string]corev1.ContainerStateTerminated{"fetch": exited(3, "Error")}, nil)}
	disrupted := &replicaExit{pod: failedPod(nil, map[string]corev1.ContainerStateTerminated{"pytorch": exited(143, "Error")},
		corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue})}
	evicted := &replicaExit{pod: &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}}}
	vanished := &replicaExit{containers: []v1beta1.ContainerStatus{{Name: "pytorch", State: "Terminated", ExitCode: 137,
		LastTermination: &v1beta1.ContainerTermination{ExitCode: 137, Reason: "OOMKilled"}}}}
	vanishedRunning := &replicaExit{containers: []v1beta1.ContainerStatus{{Name: "pytorch", State: "Running",
		LastTermination: &v1beta1.ContainerTermination{ExitCode: 137, Reason: "OOMKilled"}}}}

	codes := func(op v1beta1.FailurePolicyOnExitCodesOperator, container string, values ...int32) v1beta1.FailurePolicyRule {
		r := v1beta1.FailurePolicyRule{OnExitCodes: &v1beta1.FailurePolicyOnExitCodes{Operator: op, Values: values}}
		if container != "" {
			r.OnExitCodes.ContainerName = ptr.To(container)
		}
		return r
	}
	in, notIn := v1beta1.FailurePolicyOnExitCodesOpIn, v1beta1.FailurePolicyOnExitCodesOpNotIn
	condition := func(typ corev1.PodConditionType, status corev1.ConditionStatus) v1beta1.FailurePolicyRule {
		return v1beta1.FailurePolicyRule{OnPodConditions: []v1beta1.FailurePolicyOnPodCondition{{Type: typ, Status: status}}}
	}
	reasons := func(r ...string) v1beta1.FailurePolicyRule { return v1beta1.FailurePolicyRule{OnReasons: r} }

	cases := []struct {
		name string
		rule v1beta1.FailurePolicyRule
		typ  v1beta1.ReplicaType
		exit *replicaExit
		want bool
	}{
		{"exit code In", codes(in, "", 137), "worker", oom, true},
		{"exit code not In", codes(in, "", 1, 2), "worker", oom, false},
		{"exit code NotIn", codes(notIn, "", 1, 2), "worker", oom, true},
		{"exit code NotIn of it", codes(notIn, "", 137), "worker", oom, false},
		{"exit 0 is never compared, NotIn", codes(notIn, "pytorch", 42), "worker", twoContainers, false},
		{"the named container", codes(in, "sidecar", 42), "worker", twoContainers, true},
		{"another container", codes(in, "pytorch", 42), "worker", twoContainers, false},
		{"any container", codes(in, "", 42), "worker", twoContainers, true},
		{"an init container", codes(in, "fetch", 3), "worker", initFailed, true},
		{"a vanished pod, as recorded", codes(in, "", 137), "worker", vanished, true},
		{"a vanished running pod has no exit code", codes(in, "", 137), "worker", vanishedRunning, false},
		{"condition True by default", condition(corev1.DisruptionTarget, ""), "worker", disrupted, true},
		{"condition of another status", condition(corev1.DisruptionTarget, corev1.ConditionFalse), "worker", disrupted, false},
		{"condition absent", condition(corev1.DisruptionTarget, ""), "worker", oom, false},
		{"condition of a vanished pod", condition(corev1.DisruptionTarget, ""), "worker", vanished, false},
		{"a container's reason", reasons("OOMKilled"), "worker", oom, true},
		{"the pod's reason", reasons("Evicted"), "worker", evicted, true},
		{"another reason", reasons("Error"), "worker", oom, false},
		{"a vanished pod's recorded reason", reasons("OOMKilled"), "worker", vanished, true},
		{"an earlier pod's reason is not the vanished pod's", reasons("OOMKilled"), "worker", vanishedRunning, false},
		{"replica type", v1beta1.FailurePolicyRule{ReplicaTypes: []v1beta1.ReplicaType{"worker"}}, "worker", oom, true},
		{"another replica type", v1beta1.FailurePolicyRule{ReplicaTypes: []v1beta1.ReplicaType{"ps"}}, "worker", oom, false},
		{"every part must match", v1beta1.FailurePolicyRule{ReplicaTypes: []v1beta1.ReplicaType{"worker"},
			OnExitCodes: &v1beta1.FailurePolicyOnExitCodes{Operator: in, Values: []int32{137}}, OnReasons: []string{"Error"}}, "worker", oom, false},
		{"a rule of no parts matches everything", v1beta1.FailurePolicyRule{}, "worker", oom, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ruleMatches(&tc.rule, tc.typ, tc.exit); got != tc.want {
				t.Errorf("ruleMatches = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRestartsOnFailure(t *testing.T) {
	cases := []struct {
		policy v1beta1.RestartPolicy
		code   int32
		known  bool
		want   bool
	}{
		{v1beta1.RestartPolicyNever, 1, true, false},
		{"", 1, true, false},
		{v1beta1.RestartPolicyOnFailure, 1, true, true},
		{v1beta1.RestartPolicyAlways, 1, true, true},
		{v1beta1.RestartPolicyExitCode, 137, true, true},
		{v1beta1.RestartPolicyExitCode, 143, true, true},
		{v1beta1.RestartPolicyExitCode, 130, true, true},
		{v1beta1.RestartPolicyExitCode, 138, true, true},
		{v1beta1.RestartPolicyExitCode, 1, true, false},
		{v1beta1.RestartPolicyExitCode, 0, false, true},
	}
	for _, tc := range cases {
		if got := restartsOnFailure(tc.policy, tc.code, tc.known); got != tc.want {
			t.Errorf("restartsOnFailure(%q, %d, %v) = %v, want %v", tc.policy, tc.code, tc.known, got, tc.want)
		}
	}
}

// TestExitPolicy: what each kind of exit means for the job, in the order
// the rules are asked.
func TestExitPolicy(t *testing.T) {
	failed := &replicaExit{pod: failedPod(nil, map[string]corev1.ContainerStateTerminated{"pytorch": {ExitCode: 3, Reason: "Error"}}),
		code: 3, known: true, how: "failed with exit code 3"}
	disrupted := &replicaExit{pod: failedPod(nil, map[string]corev1.ContainerStateTerminated{"pytorch": {ExitCode: 143, Reason: "Error"}},
		corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "PreemptionByScheduler"}),
		code: 143, known: true, how: "failed with exit code 143"}
	preflight := &replicaExit{pod: failedPod(nil, nil), how: "failed its preflight check",
		preflight: &corev1.ContainerStateTerminated{ExitCode: 1}}
	rules := func(action v1beta1.FailurePolicyAction, codes ...int32) *v1beta1.FailurePolicy {
		return &v1beta1.FailurePolicy{Rules: []v1beta1.FailurePolicyRule{{Action: action,
			OnExitCodes: &v1beta1.FailurePolicyOnExitCodes{Operator: v1beta1.FailurePolicyOnExitCodesOpIn, Values: codes}}}}
	}
	cases := map[string]struct {
		in   exitInput
		want exitDecision
	}{
		"debug: started again, whatever the exit": {
			in:   exitInput{exit: failed, debug: true, restartPolicy: v1beta1.RestartPolicyNever},
			want: exitDecision{action: exitReplaced, eventType: corev1.EventTypeNormal},
		},
		"a success under Always: started again": {
			in:   exitInput{exit: &replicaExit{succeeded: true, how: "succeeded"}, restartPolicy: v1beta1.RestartPolicyAlways},
			want: exitDecision{action: exitReplaced, eventType: corev1.EventTypeNormal},
		},
		"a failed preflight: another node, before any rule": {
			in:   exitInput{exit: preflight, rules: rules(v1beta1.FailurePolicyActionFailJob, 1)},
			want: exitDecision{action: exitMovesNode},
		},
		"a FailJob rule: the job fails": {
			in: exitInput{exit: failed, rules: rules(v1beta1.FailurePolicyActionFailJob, 3), restartPolicy: v1beta1.RestartPolicyOnFailure},
			want: exitDecision{action: exitFailsJob, reason: ReasonPodFailurePolicy,
				message: "replica w-0 failed with exit code 3 (failurePolicy rule 0, action FailJob)"},
		},
		"an Ignore rule: replaced uncounted, after the backoff": {
			in:   exitInput{exit: failed, rules: rules(v1beta1.FailurePolicyActionIgnore, 3)},
			want: exitDecision{action: exitReplaced, eventType: corev1.EventTypeNormal},
		},
		"an Ignore rule on a disruption: replaced at once": {
			in:   exitInput{exit: disrupted, rules: rules(v1beta1.FailurePolicyActionIgnore, 143)},
			want: exitDecision{action: exitReplaced, prompt: true, eventType: corev1.EventTypeNormal},
		},
		"a RestartJob rule: every replica": {
			in:   exitInput{exit: failed, rules: rules(v1beta1.FailurePolicyActionRestartJob, 3)},
			want: exitDecision{action: exitRestartsJob, why: "failurePolicy rule 0, action RestartJob"},
		},
		"a RestartReplica rule: a counted restart, whatever the restart policy": {
			in:   exitInput{exit: failed, rules: rules(v1beta1.FailurePolicyActionRestartReplica, 3), restartPolicy: v1beta1.RestartPolicyNever},
			want: exitDecision{action: exitCountedRestart, why: "failurePolicy rule 0, action RestartReplica"},
		},
		"no rule matches a disruption: replaced at once, uncounted": {
			in:   exitInput{exit: disrupted, rules: rules(v1beta1.FailurePolicyActionFailJob, 3), restartPolicy: v1beta1.RestartPolicyNever},
			want: exitDecision{action: exitReplaced, prompt: true, eventType: corev1.EventTypeWarning},
		},
		"no rule, OnFailure: a counted restart": {
			in:   exitInput{exit: failed, restartPolicy: v1beta1.RestartPolicyOnFailure},
			want: exitDecision{action: exitCountedRestart, why: "restart policy OnFailure"},
		},
		"no rule, Never: the job fails": {
			in: exitInput{exit: failed},
			want: exitDecision{action: exitFailsJob, reason: ReasonReplicaFailed,
				message: "replica w-0 failed with exit code 3 (restart policy Never)"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.in.host, tc.in.typ = "w-0", v1beta1.ReplicaTypeWorker
			got := decideExit(tc.in)
			if got.action != tc.want.action || got.prompt != tc.want.prompt || got.eventType != tc.want.eventType ||
				got.why != tc.want.why || got.reason != tc.want.reason || got.message != tc.want.message {
				t.Errorf("decideExit = %+v, want %+v", got, tc.want)
			}
			if (got.action == exitReplaced) != (got.event != "") {
				t.Errorf("event %q for action %s", got.event, got.action)
			}
		})
	}
}
