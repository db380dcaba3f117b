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

package validation

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// withRules sets the failure policy's rules.
func withRules(rules ...batch.FailurePolicyRule) specMod {
	return func(s *batch.TrainingJobSpec) { s.RunPolicy.FailurePolicy = &batch.FailurePolicy{Rules: rules} }
}

// withRule sets a failure policy of one rule, built from the job's spec.
func withRule(build func(s *batch.TrainingJobSpec) batch.FailurePolicyRule) specMod {
	return func(s *batch.TrainingJobSpec) { withRules(build(s))(s) }
}

// exitCodes is a rule of the given action matching the exit codes.
func exitCodes(op batch.FailurePolicyOnExitCodesOperator, values ...int32) batch.FailurePolicyRule {
	return batch.FailurePolicyRule{Action: batch.FailurePolicyActionFailJob,
		OnExitCodes: &batch.FailurePolicyOnExitCodes{Operator: op, Values: values}}
}

// inContainer limits a rule's exit codes to a container.
func inContainer(rule batch.FailurePolicyRule, name string, types ...batch.ReplicaType) batch.FailurePolicyRule {
	rule.OnExitCodes.ContainerName = ptr.To(name)
	rule.ReplicaTypes = types
	return rule
}

// withSidecar adds a container named sidecar to the worker template, and an
// init container named setup.
func withSidecar(s *batch.TrainingJobSpec) {
	pod := workerPod(s)
	pod.Containers = append(pod.Containers, container("sidecar"))
	pod.InitContainers = append(pod.InitContainers, container("setup"))
}

// firstType is the type of the first replica spec: chief or master.
func firstType(s *batch.TrainingJobSpec) batch.ReplicaType { return s.ReplicaSpecs[0].Type }

func policyCases() []commonCase {
	const (
		rules = "spec.runPolicy.failurePolicy.rules"
		rule  = rules + "[0]"
		codes = rule + ".onExitCodes"
	)
	both := func(mods ...specMod) specMod {
		return func(s *batch.TrainingJobSpec) {
			for _, m := range mods {
				m(s)
			}
		}
	}
	nRules := func(n int) specMod {
		rs := make([]batch.FailurePolicyRule, n)
		for i := range rs {
			rs[i] = batch.FailurePolicyRule{Action: batch.FailurePolicyActionIgnore, OnReasons: []string{"R" + strconv.Itoa(i)}}
		}
		return withRules(rs...)
	}
	codesUpTo := func(n int) []int32 {
		v := make([]int32, n)
		for i := range v {
			v[i] = int32(i + 1)
		}
		return v
	}
	conditions := func(n int) []batch.FailurePolicyOnPodCondition {
		c := make([]batch.FailurePolicyOnPodCondition, n)
		for i := range c {
			c[i] = batch.FailurePolicyOnPodCondition{Type: corev1.PodConditionType("Condition" + strconv.Itoa(i)), Status: corev1.ConditionTrue}
		}
		return c
	}
	reasons := func(n int) []string {
		r := make([]string, n)
		for i := range r {
			r[i] = "Reason" + strconv.Itoa(i)
		}
		return r
	}
	return []commonCase{
		{"every part of a rule", withRule(func(s *batch.TrainingJobSpec) batch.FailurePolicyRule {
			return batch.FailurePolicyRule{
				Action:          batch.FailurePolicyActionRestartJob,
				ReplicaTypes:    []batch.ReplicaType{batch.ReplicaTypeWorker, firstType(s)},
				OnExitCodes:     &batch.FailurePolicyOnExitCodes{ContainerName: ptr.To(worker(s).Template.Spec.Containers[0].Name), Operator: batch.FailurePolicyOnExitCodesOpIn, Values: []int32{137, 1, 255}},
				OnPodConditions: []batch.FailurePolicyOnPodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}, {Type: "example.com/Preempted", Status: corev1.ConditionFalse}},
				OnReasons:       []string{"OOMKilled", "Evicted"},
			}
		}), nil},
		{"each action", withRules(
			batch.FailurePolicyRule{Action: batch.FailurePolicyActionRestartReplica},
			batch.FailurePolicyRule{Action: batch.FailurePolicyActionRestartJob},
			batch.FailurePolicyRule{Action: batch.FailurePolicyActionFailJob},
			batch.FailurePolicyRule{Action: batch.FailurePolicyActionIgnore},
		), nil},
		{"no rules", withRules(), nil},
		{"rules at the limit", nRules(batch.MaxFailurePolicyRules), nil},
		{"too many rules", nRules(batch.MaxFailurePolicyRules + 1), []wantErr{tooMany(rules)}},
		{"action missing", withRules(batch.FailurePolicyRule{OnReasons: []string{"OOMKilled"}}), []wantErr{required(rule + ".action")}},
		{"action unknown", withRules(batch.FailurePolicyRule{Action: "Restart"}), []wantErr{notSupported(rule + ".action")}},
		{"action in another case", withRules(batch.FailurePolicyRule{Action: "failJob"}), []wantErr{notSupported(rule + ".action")}},
		{"error in a later rule", withRules(batch.FailurePolicyRule{Action: batch.FailurePolicyActionIgnore}, batch.FailurePolicyRule{}),
			[]wantErr{required(rules + "[1].action")}},

		{"replica type not in the job", withRules(batch.FailurePolicyRule{Action: batch.FailurePolicyActionIgnore,
			ReplicaTypes: []batch.ReplicaType{batch.ReplicaTypeWorker, "launcher"}}), []wantErr{notSupported(rule + ".replicaTypes[1]")}},
		{"replica type empty", withRules(batch.FailurePolicyRule{Action: batch.FailurePolicyActionIgnore,
			ReplicaTypes: []batch.ReplicaType{""}}), []wantErr{required(rule + ".replicaTypes[0]")}},
		{"replica type twice", withRules(batch.FailurePolicyRule{Action: batch.FailurePolicyActionIgnore,
			ReplicaTypes: []batch.ReplicaType{batch.ReplicaTypeWorker, batch.ReplicaTypeWorker}}), []wantErr{duplicate(rule + ".replicaTypes[1]")}},

		{"operator NotIn", withRules(exitCodes(batch.FailurePolicyOnExitCodesOpNotIn, 0, 1)), nil},
		{"operator missing", withRules(exitCodes("", 1)), []wantErr{required(codes + ".operator")}},
		{"operator unknown", withRules(exitCodes("Between", 1)), []wantErr{notSupported(codes + ".operator")}},
		{"no values", withRules(exitCodes(batch.FailurePolicyOnExitCodesOpIn)), []wantErr{required(codes + ".values")}},
		{"values at the limit", withRules(exitCodes(batch.FailurePolicyOnExitCodesOpIn, codesUpTo(batch.MaxFailurePolicyExitCodes)...)), nil},
		{"too many values", withRules(exitCodes(batch.FailurePolicyOnExitCodesOpNotIn, codesUpTo(batch.MaxFailurePolicyExitCodes+1)...)),
			[]wantErr{tooMany(codes + ".values")}},
		{"value twice", withRules(exitCodes(batch.FailurePolicyOnExitCodesOpIn, 137, 1, 137)), []wantErr{duplicate(codes + ".values[2]")}},
		{"0 with In", withRules(exitCodes(batch.FailurePolicyOnExitCodesOpIn, 1, 0)), []wantErr{invalid(codes + ".values[1]")}},

		{"container of the rule's type", both(withSidecar, withRule(func(s *batch.TrainingJobSpec) batch.FailurePolicyRule {
			return inContainer(exitCodes(batch.FailurePolicyOnExitCodesOpIn, 1), "sidecar", batch.ReplicaTypeWorker)
		})), nil},
		{"container of one of the rule's types", both(withSidecar, withRule(func(s *batch.TrainingJobSpec) batch.FailurePolicyRule {
			return inContainer(exitCodes(batch.FailurePolicyOnExitCodesOpIn, 1), "sidecar", firstType(s), batch.ReplicaTypeWorker)
		})), nil},
		{"container of any type when the rule names none", both(withSidecar, withRule(func(s *batch.TrainingJobSpec) batch.FailurePolicyRule {
			return inContainer(exitCodes(batch.FailurePolicyOnExitCodesOpIn, 1), "sidecar")
		})), nil},
		{"init container", both(withSidecar, withRule(func(s *batch.TrainingJobSpec) batch.FailurePolicyRule {
			return inContainer(exitCodes(batch.FailurePolicyOnExitCodesOpIn, 1), "setup", batch.ReplicaTypeWorker)
		})), nil},
		{"container only of another type", both(withSidecar, withRule(func(s *batch.TrainingJobSpec) batch.FailurePolicyRule {
			return inContainer(exitCodes(batch.FailurePolicyOnExitCodesOpIn, 1), "sidecar", firstType(s))
		})), []wantErr{invalid(codes + ".containerName")}},
		{"container of no type", withRule(func(s *batch.TrainingJobSpec) batch.FailurePolicyRule {
			return inContainer(exitCodes(batch.FailurePolicyOnExitCodesOpIn, 1), "sidecar")
		}), []wantErr{invalid(codes + ".containerName")}},
		{"container name not a DNS label", withRule(func(s *batch.TrainingJobSpec) batch.FailurePolicyRule {
			return inContainer(exitCodes(batch.FailurePolicyOnExitCodesOpIn, 1), "Side_Car")
		}), []wantErr{invalid(codes + ".containerName")}},
		{"container name empty", withRule(func(s *batch.TrainingJobSpec) batch.FailurePolicyRule {
			return inContainer(exitCodes(batch.FailurePolicyOnExitCodesOpIn, 1), "")
		}), []wantErr{required(codes + ".containerName")}},
		{"container of a type the job lacks is reported on the type only", withRule(func(s *batch.TrainingJobSpec) batch.FailurePolicyRule {
			return inContainer(exitCodes(batch.FailurePolicyOnExitCodesOpIn, 1), "sidecar", "launcher")
		}), []wantErr{notSupported(rule + ".replicaTypes[0]")}},

		{"pod condition without status", withRules(batch.FailurePolicyRule{Action: batch.FailurePolicyActionIgnore,
			OnPodConditions: []batch.FailurePolicyOnPodCondition{{Type: corev1.DisruptionTarget}}}), nil},
		{"pod condition statuses", withRules(batch.FailurePolicyRule{Action: batch.FailurePolicyActionIgnore,
			OnPodConditions: []batch.FailurePolicyOnPodCondition{{Type: "A", Status: corev1.ConditionTrue}, {Type: "B", Status: corev1.ConditionFalse}, {Type: "C", Status: corev1.ConditionUnknown}}}), nil},
		{"pod condition type missing", withRules(batch.FailurePolicyRule{Action: batch.FailurePolicyActionIgnore,
			OnPodConditions: []batch.FailurePolicyOnPodCondition{{Type: corev1.DisruptionTarget}, {Status: corev1.ConditionTrue}}}),
			[]wantErr{required(rule + ".onPodConditions[1].type")}},
		{"pod condition type invalid", withRules(batch.FailurePolicyRule{Action: batch.FailurePolicyActionIgnore,
			OnPodConditions: []batch.FailurePolicyOnPodCondition{{Type: "Disruption Target!"}}}),
			[]wantErr{invalid(rule + ".onPodConditions[0].type")}},
		{"pod condition status unknown", withRules(batch.FailurePolicyRule{Action: batch.FailurePolicyActionIgnore,
			OnPodConditions: []batch.FailurePolicyOnPodCondition{{Type: corev1.DisruptionTarget, Status: "true"}}}),
			[]wantErr{notSupported(rule + ".onPodConditions[0].status")}},
		{"pod conditions at the limit", withRules(batch.FailurePolicyRule{Action: batch.FailurePolicyActionIgnore,
			OnPodConditions: conditions(batch.MaxFailurePolicyPodConditions)}), nil},
		{"too many pod conditions", withRules(batch.FailurePolicyRule{Action: batch.FailurePolicyActionIgnore,
			OnPodConditions: conditions(batch.MaxFailurePolicyPodConditions + 1)}), []wantErr{tooMany(rule + ".onPodConditions")}},

		{"reason at the length limit", withRules(batch.FailurePolicyRule{Action: batch.FailurePolicyActionIgnore,
			OnReasons: []string{strings.Repeat("R", batch.MaxFailurePolicyReasonLength)}}), nil},
		{"reason too long", withRules(batch.FailurePolicyRule{Action: batch.FailurePolicyActionIgnore,
			OnReasons: []string{"OOMKilled", strings.Repeat("R", batch.MaxFailurePolicyReasonLength+1)}}), []wantErr{tooLong(rule + ".onReasons[1]")}},
		{"reason empty", withRules(batch.FailurePolicyRule{Action: batch.FailurePolicyActionIgnore, OnReasons: []string{""}}),
			[]wantErr{required(rule + ".onReasons[0]")}},
		{"reason twice", withRules(batch.FailurePolicyRule{Action: batch.FailurePolicyActionIgnore, OnReasons: []string{"OOMKilled", "Error", "OOMKilled"}}),
			[]wantErr{duplicate(rule + ".onReasons[2]")}},
		{"reasons at the limit", withRules(batch.FailurePolicyRule{Action: batch.FailurePolicyActionIgnore,
			OnReasons: reasons(batch.MaxFailurePolicyReasons)}), nil},
		{"too many reasons", withRules(batch.FailurePolicyRule{Action: batch.FailurePolicyActionIgnore,
			OnReasons: reasons(batch.MaxFailurePolicyReasons + 1)}), []wantErr{tooMany(rule + ".onReasons")}},

		{"errors in every part", withRules(batch.FailurePolicyRule{
			Action:          "Retry",
			ReplicaTypes:    []batch.ReplicaType{"launcher"},
			OnExitCodes:     &batch.FailurePolicyOnExitCodes{Operator: batch.FailurePolicyOnExitCodesOpIn, Values: []int32{0}},
			OnPodConditions: []batch.FailurePolicyOnPodCondition{{}},
			OnReasons:       []string{""},
		}), []wantErr{notSupported(rule + ".action"), notSupported(rule + ".replicaTypes[0]"), invalid(codes + ".values[0]"),
			required(rule + ".onPodConditions[0].type"), required(rule + ".onReasons[0]")}},
	}
}

func successPolicyCases() []commonCase {
	const path = "spec.runPolicy.successPolicy"
	policy := func(p batch.SuccessPolicy) specMod {
		return func(s *batch.TrainingJobSpec) { s.RunPolicy.SuccessPolicy = p }
	}
	withoutWorkers := func(p batch.SuccessPolicy) specMod {
		return func(s *batch.TrainingJobSpec) {
			s.RunPolicy.SuccessPolicy = p
			s.ReplicaSpecs = s.ReplicaSpecs[:len(s.ReplicaSpecs)-1] // the worker is last in both test jobs
		}
	}
	noWorkerReplicas := func(p batch.SuccessPolicy) specMod {
		return func(s *batch.TrainingJobSpec) {
			s.RunPolicy.SuccessPolicy = p
			worker(s).Replicas = ptr.To[int32](0)
		}
	}
	return []commonCase{
		{"unset", policy(""), nil},
		{"Default", policy(batch.SuccessPolicyDefault), nil},
		{"AllWorkers", policy(batch.SuccessPolicyAllWorkers), nil},
		{"AnyWorker", policy(batch.SuccessPolicyAnyWorker), nil},
		{"unknown", policy("AllReplicas"), []wantErr{notSupported(path)}},
		{"lower case", policy("allWorkers"), []wantErr{notSupported(path)}},
		{"AllWorkers without a worker type", withoutWorkers(batch.SuccessPolicyAllWorkers), []wantErr{invalid(path)}},
		{"AnyWorker without a worker type", withoutWorkers(batch.SuccessPolicyAnyWorker), []wantErr{invalid(path)}},
		{"Default without a worker type", withoutWorkers(batch.SuccessPolicyDefault), nil},
		{"AnyWorker with no worker replicas", noWorkerReplicas(batch.SuccessPolicyAnyWorker), []wantErr{invalid(path)}},
		{"AllWorkers with no worker replicas", noWorkerReplicas(batch.SuccessPolicyAllWorkers), []wantErr{invalid(path)}},
	}
}

// TestPolicies runs the failure and success policy rules against both
// kinds, on create and on an update of a job that has no pods yet.
func TestPolicies(t *testing.T) {
	for _, tc := range append(policyCases(), successPolicyCases()...) {
		for _, kind := range []string{"TensorFlow", "PyTorch"} {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				if kind == "TensorFlow" {
					job := tfJob(onTF(tc.mod))
					expectErrors(t, ValidateTensorFlowTrainingJob(job), tc.want...)
					if len(job.Spec.ReplicaSpecs) == len(tfJob().Spec.ReplicaSpecs) {
						expectErrors(t, ValidateTensorFlowTrainingJobUpdate(job, tfJob()), tc.want...)
					}
				} else {
					job := ptJob(onPT(tc.mod))
					expectErrors(t, ValidatePyTorchTrainingJob(job), tc.want...)
					if len(job.Spec.ReplicaSpecs) == len(ptJob().Spec.ReplicaSpecs) {
						expectErrors(t, ValidatePyTorchTrainingJobUpdate(job, ptJob()), tc.want...)
					}
				}
			})
		}
	}
}

// TestPolicySpellings decodes jobs as the server does (defaults, conversion,
// canonicalization) and validates them: the failure policy's replica types
// accept the spellings replicaSpecs accept, and are compared in their stored
// form.
func TestPolicySpellings(t *testing.T) {
	const tf = `{"apiVersion":"batch.tensorstack.dev/v1beta1","kind":"TensorFlowTrainingJob","metadata":{"name":"a","namespace":"n"},
	  "spec":{"replicaSpecs":[
	    {"type":"Master","template":{"spec":{"containers":[{"name":"tensorflow","image":"i"}]}}},
	    {"type":"Worker","replicas":2,"template":{"spec":{"containers":[{"name":"tensorflow","image":"i"}]}}}],
	  "runPolicy":{"successPolicy":"AllWorkers","failurePolicy":{"rules":[%s]}}}}`
	const pt = `{"apiVersion":"batch.tensorstack.dev/v1beta1","kind":"PyTorchTrainingJob","metadata":{"name":"b","namespace":"n"},
	  "spec":{"replicaSpecs":[
	    {"type":"Master","template":{"spec":{"containers":[{"name":"pytorch","image":"i"}]}}},
	    {"type":"worker","replicas":2,"template":{"spec":{"containers":[{"name":"pytorch","image":"i"}]}}}],
	  "runPolicy":{"successPolicy":"AnyWorker","failurePolicy":{"rules":[%s]}}}}`
	const rule = "spec.runPolicy.failurePolicy.rules[0]"
	cases := []struct {
		name, manifest, rules string
		want                  []wantErr
	}{
		{"TensorFlow Kubeflow spellings", tf, `{"action":"FailJob","replicaTypes":["Worker","Chief"]}`, nil},
		{"TensorFlow master is the chief", tf, `{"action":"FailJob","replicaTypes":["Master","worker"]}`, nil},
		{"TensorFlow chief written twice", tf, `{"action":"FailJob","replicaTypes":["Master","chief"]}`,
			[]wantErr{duplicate(rule + ".replicaTypes[1]")}},
		{"TensorFlow type the job lacks", tf, `{"action":"FailJob","replicaTypes":["PS"]}`,
			[]wantErr{notSupported(rule + ".replicaTypes[0]")}},
		{"TensorFlow unknown spelling", tf, `{"action":"FailJob","replicaTypes":["WORKER"]}`,
			[]wantErr{notSupported(rule + ".replicaTypes[0]")}},
		{"PyTorch capitalised spellings", pt, `{"action":"RestartJob","replicaTypes":["Master","Worker"]}`, nil},
		{"PyTorch pod condition status defaults to True", pt,
			`{"action":"Ignore","onPodConditions":[{"type":"DisruptionTarget"}],"onExitCodes":{"operator":"NotIn","values":[0,1]}}`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj, _, err := testCodecs.UniversalDeserializer().Decode([]byte(strings.Replace(tc.manifest, "%s", tc.rules, 1)), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			internal, err := toInternal(obj)
			if err != nil {
				t.Fatal(err)
			}
			errs, err := validateCreate(internal)
			if err != nil {
				t.Fatal(err)
			}
			expectErrors(t, errs, tc.want...)
			for _, r := range failurePolicyOf(t, internal).Rules {
				for _, c := range r.OnPodConditions {
					if c.Status != corev1.ConditionTrue {
						t.Errorf("onPodConditions status = %q, want the default True", c.Status)
					}
				}
			}
		})
	}
}

func failurePolicyOf(t *testing.T, obj runtime.Object) *batch.FailurePolicy {
	t.Helper()
	job, ok := obj.(batch.TrainingJob)
	if !ok || job.CommonSpec().RunPolicy.FailurePolicy == nil {
		t.Fatalf("%T has no failure policy", obj)
	}
	return job.CommonSpec().RunPolicy.FailurePolicy
}

// TestPolicyRoundTrip checks that a failure and success policy come back
// from the internal version as they were sent.
func TestPolicyRoundTrip(t *testing.T) {
	in := &v1beta1.PyTorchTrainingJob{Spec: v1beta1.PyTorchTrainingJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{
		RunPolicy: v1beta1.RunPolicy{
			SuccessPolicy: v1beta1.SuccessPolicyAnyWorker,
			FailurePolicy: &v1beta1.FailurePolicy{Rules: []v1beta1.FailurePolicyRule{{
				Action:          v1beta1.FailurePolicyActionRestartJob,
				ReplicaTypes:    []v1beta1.ReplicaType{v1beta1.ReplicaTypeWorker},
				OnExitCodes:     &v1beta1.FailurePolicyOnExitCodes{ContainerName: ptr.To("pytorch"), Operator: v1beta1.FailurePolicyOnExitCodesOpIn, Values: []int32{137}},
				OnPodConditions: []v1beta1.FailurePolicyOnPodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionFalse}},
				OnReasons:       []string{"OOMKilled"},
			}}},
		},
	}}}
	internal := &batch.PyTorchTrainingJob{}
	if err := testScheme.Convert(in, internal, nil); err != nil {
		t.Fatal(err)
	}
	out := &v1beta1.PyTorchTrainingJob{}
	if err := testScheme.Convert(internal, out, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in.Spec.RunPolicy, out.Spec.RunPolicy); diff != "" {
		t.Errorf("run policy changed on the way through the internal version (-sent +returned):\n%s", diff)
	}
}
