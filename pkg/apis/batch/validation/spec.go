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

	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch"
)

var (
	supportedRestartPolicies = []batch.RestartPolicy{
		batch.RestartPolicyNever, batch.RestartPolicyOnFailure, batch.RestartPolicyAlways, batch.RestartPolicyExitCode,
	}
	supportedCleanUpPolicies = []batch.CleanUpPolicy{
		batch.CleanUpPolicyAll, batch.CleanUpPolicyUnfinished, batch.CleanUpPolicyNone,
	}
	supportedStartupPolicies   = []batch.StartupPolicy{batch.StartupPolicyAnyOrder, batch.StartupPolicyInOrder}
	supportedRestartStrategies = []batch.RestartStrategy{batch.RestartStrategyRecreate, batch.RestartStrategyInPlace}
)

// Bounds of the T9k scheduler priority.
const (
	minPriority = 0
	maxPriority = 100
)

// validateSpec checks the part of the spec every kind shares, applying the
// kind's own rules where they differ.
func (k *kindRules) validateSpec(spec *batch.TrainingJobSpec, fldPath *field.Path) field.ErrorList {
	allErrs := k.validateReplicaSpecs(spec.ReplicaSpecs, fldPath.Child("replicaSpecs"))
	allErrs = append(allErrs, validateRunPolicy(&spec.RunPolicy, fldPath.Child("runPolicy"))...)
	allErrs = append(allErrs, validatePolicies(&spec.RunPolicy, spec.ReplicaSpecs, fldPath.Child("runPolicy"))...)
	allErrs = append(allErrs, k.validateCheckpointAndStall(&spec.RunPolicy, spec.ReplicaSpecs, fldPath.Child("runPolicy"), fldPath.Child("replicaSpecs"))...)
	allErrs = append(allErrs, validateNodeChecks(&spec.RunPolicy, spec.ReplicaSpecs, fldPath.Child("runPolicy"), fldPath.Child("replicaSpecs"))...)
	allErrs = append(allErrs, k.validateStartupPolicy(spec.RunPolicy.StartupPolicy, spec.ReplicaSpecs, fldPath.Child("runPolicy", "startupPolicy"))...)
	if spec.RunMode != nil {
		allErrs = append(allErrs, validateRunMode(spec.RunMode, spec.ReplicaSpecs, fldPath.Child("runMode"))...)
	}
	if spec.Scheduler != nil {
		allErrs = append(allErrs, validateScheduler(spec.Scheduler, fldPath.Child("scheduler"))...)
	}
	if spec.TensorboardSpec != nil {
		allErrs = append(allErrs, validateTensorBoardSpec(spec.TensorboardSpec, fldPath.Child("tensorboardSpec"))...)
	}
	return append(allErrs, validateManagedBy(spec.ManagedBy, fldPath.Child("managedBy"))...)
}

// managedByValues are the controllers spec.managedBy may name.
var managedByValues = []string{batch.ManagedByTrainingController, batch.ManagedByMultiKueue}

// validateManagedBy refuses a controller nobody runs: a job naming one
// would never run, and no error would say why.
func validateManagedBy(managedBy *string, fldPath *field.Path) field.ErrorList {
	if managedBy == nil || *managedBy == "" || slices.Contains(managedByValues, *managedBy) {
		return nil
	}
	return field.ErrorList{field.NotSupported(fldPath, *managedBy, managedByValues)}
}

// validateReplicaSpecs checks each replica spec and then the kind's rules
// about the set of them.
func (k *kindRules) validateReplicaSpecs(specs []batch.ReplicaSpec, fldPath *field.Path) field.ErrorList {
	if len(specs) == 0 {
		return field.ErrorList{field.Required(fldPath, "a job needs at least one replica spec")}
	}
	var allErrs field.ErrorList
	seen := make(map[batch.ReplicaType]bool, len(specs))
	typesUsable := true
	for i := range specs {
		spec := &specs[i]
		specPath := fldPath.Index(i)
		typeErrs := k.validateReplicaType(spec.Type, specPath.Child("type"))
		if seen[spec.Type] && spec.Type != "" {
			typeErrs = append(typeErrs, field.Duplicate(specPath.Child("type"), string(spec.Type)))
		}
		seen[spec.Type] = true
		typesUsable = typesUsable && len(typeErrs) == 0
		allErrs = append(allErrs, typeErrs...)

		replicas := batch.ReplicasOf(spec)
		replicasPath := specPath.Child("replicas")
		if replicas < 0 {
			allErrs = append(allErrs, field.Invalid(replicasPath, replicas, "must be greater than or equal to 0"))
		} else if b, ok := k.bounds[spec.Type]; ok && (replicas < b.min || replicas > b.max) {
			allErrs = append(allErrs, field.Invalid(replicasPath, replicas, b.message()))
		} else if len(typeErrs) == 0 {
			allErrs = append(allErrs, validateHostnames(spec.Type, replicas, specPath.Child("type"))...)
		}

		if spec.RestartPolicy != "" && !contains(supportedRestartPolicies, spec.RestartPolicy) {
			allErrs = append(allErrs, field.NotSupported(specPath.Child("restartPolicy"), string(spec.RestartPolicy), supportedRestartPolicies))
		}
		allErrs = append(allErrs, k.validatePodTemplate(&spec.Template, specPath.Child("template"))...)
		allErrs = append(allErrs, validateTemplateBytes(&spec.Template, specPath.Child("template"))...)
	}
	// Rules about the whole set would only repeat what is reported above
	// when a type is missing, unknown or listed twice.
	if typesUsable && k.validateReplicaSet != nil {
		allErrs = append(allErrs, k.validateReplicaSet(specs, fldPath)...)
	}
	return append(allErrs, validateReplicaLimits(specs, fldPath)...)
}

// validateReplicaType checks that a type is given and that the kind accepts it.
func (k *kindRules) validateReplicaType(replicaType batch.ReplicaType, fldPath *field.Path) field.ErrorList {
	if replicaType == "" {
		return field.ErrorList{field.Required(fldPath, "the replica type")}
	}
	if len(k.replicaTypes) > 0 {
		if !contains(k.replicaTypes, replicaType) {
			return field.ErrorList{field.NotSupported(fldPath, string(replicaType), k.replicaTypes)}
		}
		return nil
	}
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Label(string(replicaType)) {
		allErrs = append(allErrs, field.Invalid(fldPath, string(replicaType), msg))
	}
	return allErrs
}

// validateRunPolicy checks the limits on running time and retries and the
// clean-up policy.
func validateRunPolicy(policy *batch.RunPolicy, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if d := policy.ActiveDeadlineSeconds; d != nil && *d <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), *d, "must be greater than 0"))
	} else if d != nil {
		allErrs = append(allErrs, validateAtMost(*d, batch.MaxActiveDeadlineSeconds, fldPath.Child("activeDeadlineSeconds"))...)
	}
	if b := policy.BackoffLimit; b != nil && *b < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("backoffLimit"), *b, "must be greater than or equal to 0"))
	} else if b != nil {
		allErrs = append(allErrs, validateAtMost(*b, batch.MaxBackoffLimit, fldPath.Child("backoffLimit"))...)
	}
	if r := policy.RestartStrategy; r != "" && !contains(supportedRestartStrategies, r) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("restartStrategy"), string(r), supportedRestartStrategies))
	}
	if c := policy.CleanUpPolicy; c != "" && !contains(supportedCleanUpPolicies, c) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("cleanUpPolicy"), string(c), supportedCleanUpPolicies))
	}
	if d := policy.StartTimeoutSeconds; d != nil && *d <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("startTimeoutSeconds"), *d, "must be greater than 0"))
	} else if d != nil {
		allErrs = append(allErrs, validateAtMost(*d, batch.MaxStartTimeoutSeconds, fldPath.Child("startTimeoutSeconds"))...)
	}
	if ttl := policy.TTLSecondsAfterFinished; ttl != nil && *ttl < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("ttlSecondsAfterFinished"), *ttl, "must be greater than or equal to 0"))
	} else if ttl != nil {
		allErrs = append(allErrs, validateAtMost(*ttl, batch.MaxTTLSecondsAfterFinished, fldPath.Child("ttlSecondsAfterFinished"))...)
	}
	return allErrs
}

// validateStartupPolicy checks the startup policy. InOrder needs a leader
// to wait for: a PyTorch job always has its master, a TensorFlow job needs a
// chief or a parameter server with replicas.
func (k *kindRules) validateStartupPolicy(policy batch.StartupPolicy, specs []batch.ReplicaSpec, fldPath *field.Path) field.ErrorList {
	switch policy {
	case "", batch.StartupPolicyAnyOrder:
		return nil
	case batch.StartupPolicyInOrder:
	default:
		return field.ErrorList{field.NotSupported(fldPath, string(policy), supportedStartupPolicies)}
	}
	if len(k.leaderTypes) == 0 {
		return nil
	}
	for i := range specs {
		if contains(k.leaderTypes, specs[i].Type) && batch.ReplicasOf(&specs[i]) > 0 {
			return nil
		}
	}
	return field.ErrorList{field.Invalid(fldPath, string(policy), fmt.Sprintf(
		"%s makes the other replicas wait for the job's leaders, replicas of the types %s, and this job has none: use %s, or give one of those types a replica",
		policy, quotedList(k.leaderTypes), batch.StartupPolicyAnyOrder))}
}

// validateRunMode checks that debug and resume settings name replica types
// of the job, each once, and that the job is not paused and debugged at once.
func validateRunMode(mode *batch.RunMode, replicas []batch.ReplicaSpec, fldPath *field.Path) field.ErrorList {
	jobTypes := make([]batch.ReplicaType, 0, len(replicas))
	for _, r := range replicas {
		jobTypes = append(jobTypes, r.Type)
	}
	var allErrs field.ErrorList
	if debug := mode.Debug; debug != nil {
		types := make([]batch.ReplicaType, len(debug.ReplicaSpecs))
		for i, s := range debug.ReplicaSpecs {
			types[i] = s.Type
			allErrs = append(allErrs, validateCommandBytes(s.Command, fldPath.Child("debug", "replicaSpecs").Index(i).Child("command"))...)
		}
		allErrs = append(allErrs, validateTypeReferences(types, jobTypes, fldPath.Child("debug", "replicaSpecs"))...)
	}
	if pause := mode.Pause; pause != nil {
		types := make([]batch.ReplicaType, len(pause.ResumeSpecs))
		for i, s := range pause.ResumeSpecs {
			types[i] = s.Type
			specPath := fldPath.Child("pause", "resumeSpecs").Index(i)
			allErrs = append(allErrs, validateCommandBytes(s.Command, specPath.Child("command"))...)
			allErrs = append(allErrs, validateCommandBytes(s.Args, specPath.Child("args"))...)
		}
		allErrs = append(allErrs, validateTypeReferences(types, jobTypes, fldPath.Child("pause", "resumeSpecs"))...)
	}
	if mode.Debug != nil && mode.Debug.Enabled && mode.Pause != nil && mode.Pause.Enabled {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("pause", "enabled"),
			"cannot be true while spec.runMode.debug.enabled is true: a paused job has no pods to debug; switch one of the modes off"))
	}
	return allErrs
}

// validateTypeReferences checks a list of per-type settings: every entry
// names a type the job has, and no type is listed twice.
func validateTypeReferences(types, jobTypes []batch.ReplicaType, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := make(map[batch.ReplicaType]bool, len(types))
	for i, t := range types {
		typePath := fldPath.Index(i).Child("type")
		switch {
		case t == "":
			allErrs = append(allErrs, field.Required(typePath, "the replica type this entry applies to"))
		case !contains(jobTypes, t):
			allErrs = append(allErrs, field.NotSupported(typePath, string(t), jobTypes))
		case seen[t]:
			allErrs = append(allErrs, field.Duplicate(typePath, string(t)))
		}
		seen[t] = true
	}
	return allErrs
}

// validateScheduler checks the T9k scheduler placement.
func validateScheduler(policy *batch.SchedulePolicy, fldPath *field.Path) field.ErrorList {
	t9k := policy.T9kScheduler
	if t9k == nil {
		return nil
	}
	var allErrs field.ErrorList
	fldPath = fldPath.Child("t9kScheduler")
	if t9k.Queue == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("queue"), "the T9k scheduler queue the job is placed in"))
	} else {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(t9k.Queue) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("queue"), t9k.Queue, msg))
		}
	}
	if t9k.Priority < minPriority || t9k.Priority > maxPriority {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("priority"), t9k.Priority, utilvalidation.InclusiveRangeError(minPriority, maxPriority)))
	}
	return allErrs
}

// validateTensorBoardSpec checks the TensorBoard requested for the job.
func validateTensorBoardSpec(spec *batch.TensorBoardSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateImage(spec.Image, fldPath.Child("image"))
	filesetsPath := fldPath.Child("trainingLogFilesets")
	if len(spec.TrainingLogFilesets) == 0 {
		allErrs = append(allErrs, field.Required(filesetsPath, "at least one log directory, written t9k://pvc/<pvc-name>/<path>"))
	}
	seen := make(map[string]bool, len(spec.TrainingLogFilesets))
	for i, fileset := range spec.TrainingLogFilesets {
		errs := batch.FilesetErrors(fileset)
		for _, msg := range errs {
			allErrs = append(allErrs, field.Invalid(filesetsPath.Index(i), fileset, msg))
		}
		if len(errs) == 0 && seen[fileset] {
			allErrs = append(allErrs, field.Duplicate(filesetsPath.Index(i), fileset))
		}
		seen[fileset] = true
	}
	if spec.Resources != nil {
		allErrs = append(allErrs, validateResources(spec.Resources, fldPath.Child("resources"))...)
	}
	return allErrs
}

// contains reports whether list holds v.
func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
