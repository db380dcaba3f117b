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
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch"
)

var (
	supportedFailurePolicyActions = []batch.FailurePolicyAction{
		batch.FailurePolicyActionRestartReplica, batch.FailurePolicyActionRestartJob,
		batch.FailurePolicyActionFailJob, batch.FailurePolicyActionIgnore,
	}
	supportedExitCodeOperators = []batch.FailurePolicyOnExitCodesOperator{
		batch.FailurePolicyOnExitCodesOpIn, batch.FailurePolicyOnExitCodesOpNotIn,
	}
	supportedConditionStatuses = []corev1.ConditionStatus{
		corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown,
	}
	supportedSuccessPolicies = []batch.SuccessPolicy{
		batch.SuccessPolicyDefault, batch.SuccessPolicyAllWorkers, batch.SuccessPolicyAnyWorker,
	}
)

// validatePolicies checks the failure and success policies of a run policy
// against the job's replica specs, whose types they refer to. The types are
// compared in their stored form: canonicalization has already rewritten
// accepted spellings (TensorFlow's Worker, Chief, PS, Master) in both places.
func validatePolicies(policy *batch.RunPolicy, specs []batch.ReplicaSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if policy.FailurePolicy != nil {
		allErrs = append(allErrs, validateFailurePolicy(policy.FailurePolicy, specs, fldPath.Child("failurePolicy"))...)
	}
	return append(allErrs, validateSuccessPolicy(policy.SuccessPolicy, specs, fldPath.Child("successPolicy"))...)
}

// validateFailurePolicy checks each rule and the number of rules.
func validateFailurePolicy(policy *batch.FailurePolicy, specs []batch.ReplicaSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	rulesPath := fldPath.Child("rules")
	if len(policy.Rules) > batch.MaxFailurePolicyRules {
		allErrs = append(allErrs, field.TooMany(rulesPath, len(policy.Rules), batch.MaxFailurePolicyRules))
	}
	for i := range policy.Rules {
		allErrs = append(allErrs, validateFailurePolicyRule(&policy.Rules[i], specs, rulesPath.Index(i))...)
	}
	return allErrs
}

// validateFailurePolicyRule checks one rule: its action, the replica types it
// is limited to, and each part it matches on.
func validateFailurePolicyRule(rule *batch.FailurePolicyRule, specs []batch.ReplicaSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	actionPath := fldPath.Child("action")
	switch {
	case rule.Action == "":
		allErrs = append(allErrs, field.Required(actionPath, fmt.Sprintf("what the job does when the rule matches: one of %s",
			quotedList(supportedFailurePolicyActions))))
	case !contains(supportedFailurePolicyActions, rule.Action):
		allErrs = append(allErrs, field.NotSupported(actionPath, string(rule.Action), supportedFailurePolicyActions))
	}

	allErrs = append(allErrs, validateRuleReplicaTypes(rule.ReplicaTypes, specs, fldPath.Child("replicaTypes"))...)
	if ec := rule.OnExitCodes; ec != nil {
		allErrs = append(allErrs, validateOnExitCodes(ec, rule.ReplicaTypes, specs, fldPath.Child("onExitCodes"))...)
	}
	allErrs = append(allErrs, validateOnPodConditions(rule.OnPodConditions, fldPath.Child("onPodConditions"))...)
	return append(allErrs, validateOnReasons(rule.OnReasons, fldPath.Child("onReasons"))...)
}

// validateRuleReplicaTypes checks that every type a rule is limited to is a
// type of the job, and that none is listed twice.
func validateRuleReplicaTypes(types []batch.ReplicaType, specs []batch.ReplicaSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	jobTypes := replicaTypesOf(specs)
	seen := make(map[batch.ReplicaType]bool, len(types))
	for i, t := range types {
		switch {
		case t == "":
			allErrs = append(allErrs, field.Required(fldPath.Index(i), "a replica type of the job"))
		case !contains(jobTypes, t):
			allErrs = append(allErrs, field.NotSupported(fldPath.Index(i), string(t), jobTypes))
		case seen[t]:
			allErrs = append(allErrs, field.Duplicate(fldPath.Index(i), string(t)))
		}
		seen[t] = true
	}
	return allErrs
}

// validateOnExitCodes checks the operator, the exit codes and the container
// the codes are read from.
func validateOnExitCodes(ec *batch.FailurePolicyOnExitCodes, ruleTypes []batch.ReplicaType, specs []batch.ReplicaSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	opPath := fldPath.Child("operator")
	switch {
	case ec.Operator == "":
		allErrs = append(allErrs, field.Required(opPath, fmt.Sprintf("how exit codes are compared with values: one of %s",
			quotedList(supportedExitCodeOperators))))
	case !contains(supportedExitCodeOperators, ec.Operator):
		allErrs = append(allErrs, field.NotSupported(opPath, string(ec.Operator), supportedExitCodeOperators))
	}

	valuesPath := fldPath.Child("values")
	switch n := len(ec.Values); {
	case n == 0:
		allErrs = append(allErrs, field.Required(valuesPath, "at least one exit code"))
	case n > batch.MaxFailurePolicyExitCodes:
		allErrs = append(allErrs, field.TooMany(valuesPath, n, batch.MaxFailurePolicyExitCodes))
	}
	seen := make(map[int32]bool, len(ec.Values))
	for i, v := range ec.Values {
		switch {
		case v == 0 && ec.Operator == batch.FailurePolicyOnExitCodesOpIn:
			allErrs = append(allErrs, field.Invalid(valuesPath.Index(i), v,
				"must not be 0 with operator In: a container that exited 0 succeeded, and only failures are compared"))
		case seen[v]:
			allErrs = append(allErrs, field.Duplicate(valuesPath.Index(i), v))
		}
		seen[v] = true
	}

	if ec.ContainerName != nil {
		allErrs = append(allErrs, validateRuleContainerName(*ec.ContainerName, ruleTypes, specs, fldPath.Child("containerName"))...)
	}
	return allErrs
}

// validateRuleContainerName checks that a rule's containerName names a
// container or init container of the pod template of at least one of the
// rule's replica types, or of any type when the rule names none. A name no
// pod of the rule has would make the rule never match, silently.
func validateRuleContainerName(name string, ruleTypes []batch.ReplicaType, specs []batch.ReplicaSpec, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "a container name, or leave containerName out to compare every container")}
	}
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Label(name) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	if len(allErrs) > 0 {
		return allErrs
	}
	var names, types []string
	for i := range specs {
		spec := &specs[i]
		if len(ruleTypes) > 0 && !contains(ruleTypes, spec.Type) {
			continue
		}
		types = append(types, string(spec.Type))
		pod := &spec.Template.Spec
		for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
			if c.Name == name {
				return nil
			}
			if !slices.Contains(names, c.Name) {
				names = append(names, c.Name)
			}
		}
	}
	if len(types) == 0 {
		// The rule names no type of the job; that is reported on replicaTypes.
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, name, fmt.Sprintf(
		"must name a container or init container of the rule's pods (replica types %s), whose templates have %s",
		strings.Join(types, ", "), quotedList(names)))}
}

// validateOnPodConditions checks the pod conditions a rule matches on.
func validateOnPodConditions(conditions []batch.FailurePolicyOnPodCondition, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(conditions) > batch.MaxFailurePolicyPodConditions {
		allErrs = append(allErrs, field.TooMany(fldPath, len(conditions), batch.MaxFailurePolicyPodConditions))
	}
	for i, c := range conditions {
		condPath := fldPath.Index(i)
		if c.Type == "" {
			allErrs = append(allErrs, field.Required(condPath.Child("type"), "a pod condition type, for example DisruptionTarget"))
		} else {
			for _, msg := range utilvalidation.IsQualifiedName(string(c.Type)) {
				allErrs = append(allErrs, field.Invalid(condPath.Child("type"), string(c.Type), msg))
			}
		}
		// An unset status is the default, True.
		if c.Status != "" && !contains(supportedConditionStatuses, c.Status) {
			allErrs = append(allErrs, field.NotSupported(condPath.Child("status"), string(c.Status), supportedConditionStatuses))
		}
	}
	return allErrs
}

// validateOnReasons checks the termination reasons a rule matches on.
func validateOnReasons(reasons []string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(reasons) > batch.MaxFailurePolicyReasons {
		allErrs = append(allErrs, field.TooMany(fldPath, len(reasons), batch.MaxFailurePolicyReasons))
	}
	seen := make(map[string]bool, len(reasons))
	for i, r := range reasons {
		switch {
		case r == "":
			allErrs = append(allErrs, field.Required(fldPath.Index(i), "a termination reason, for example OOMKilled"))
		case len(r) > batch.MaxFailurePolicyReasonLength:
			allErrs = append(allErrs, field.TooLong(fldPath.Index(i), "", batch.MaxFailurePolicyReasonLength))
		case seen[r]:
			allErrs = append(allErrs, field.Duplicate(fldPath.Index(i), r))
		}
		seen[r] = true
	}
	return allErrs
}

// validateSuccessPolicy checks the success policy. Unset means Default.
// AllWorkers and AnyWorker decide by the replicas of the type worker, for
// both kinds, so the job must have that type with at least one replica:
// without one, AnyWorker could never succeed and AllWorkers would succeed
// with nothing done.
func validateSuccessPolicy(policy batch.SuccessPolicy, specs []batch.ReplicaSpec, fldPath *field.Path) field.ErrorList {
	switch policy {
	case "", batch.SuccessPolicyDefault:
		return nil
	case batch.SuccessPolicyAllWorkers, batch.SuccessPolicyAnyWorker:
	default:
		return field.ErrorList{field.NotSupported(fldPath, string(policy), supportedSuccessPolicies)}
	}
	for i := range specs {
		if specs[i].Type != batch.ReplicaTypeWorker {
			continue
		}
		if batch.ReplicasOf(&specs[i]) < 1 {
			return field.ErrorList{field.Invalid(fldPath, string(policy), fmt.Sprintf(
				"%s decides by the %q replicas, and spec.replicaSpecs[%d] has none: give it at least one replica, or use %s",
				policy, batch.ReplicaTypeWorker, i, batch.SuccessPolicyDefault))}
		}
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, string(policy), fmt.Sprintf(
		"%s decides by the replicas of the type %q, which this job does not have (its types are %s): use %s, or add a %q replica type",
		policy, batch.ReplicaTypeWorker, typeList(specs), batch.SuccessPolicyDefault, batch.ReplicaTypeWorker))}
}

// replicaTypesOf lists the types of the replica specs, in order.
func replicaTypesOf(specs []batch.ReplicaSpec) []batch.ReplicaType {
	types := make([]batch.ReplicaType, len(specs))
	for i := range specs {
		types[i] = specs[i].Type
	}
	return types
}

// quotedList writes values as "a", "b", "c" for a message.
func quotedList[T ~string](values []T) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(quoted, ", ")
}
