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
	"strings"
	"unicode"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch"
)

var supportedStallPolicies = []batch.StallPolicy{batch.StallPolicyNone, batch.StallPolicyRestart, batch.StallPolicyFail}

// validateCheckpointAndStall checks the checkpoint policy against the
// replicas' templates, and the progress deadline with its stall policy.
func (k *kindRules) validateCheckpointAndStall(policy *batch.RunPolicy, specs []batch.ReplicaSpec, fldPath, specsPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if c := policy.Checkpoint; c != nil {
		allErrs = append(allErrs, k.validateCheckpointPolicy(c, specs, fldPath.Child("checkpoint"), specsPath)...)
	}
	deadlinePath := fldPath.Child("progressDeadlineSeconds")
	if d := policy.ProgressDeadlineSeconds; d != nil && *d <= 0 {
		allErrs = append(allErrs, field.Invalid(deadlinePath, *d, "must be greater than 0"))
	} else if d != nil {
		allErrs = append(allErrs, validateAtMost(*d, batch.MaxActiveDeadlineSeconds, deadlinePath)...)
	}
	stallPath := fldPath.Child("stallPolicy")
	switch s := policy.StallPolicy; {
	case s == "":
	case !contains(supportedStallPolicies, s):
		allErrs = append(allErrs, field.NotSupported(stallPath, string(s), supportedStallPolicies))
	case s != batch.StallPolicyNone && policy.ProgressDeadlineSeconds == nil:
		allErrs = append(allErrs, field.Required(deadlinePath, fmt.Sprintf("%s needs a progress deadline to act on", stallPath)))
	}
	return allErrs
}

// validateCheckpointPolicy checks that every replica type's training
// container mounts the checkpoint volume, writable and at one path, and
// that a stop's wait fits in every pod's termination grace period.
func (k *kindRules) validateCheckpointPolicy(c *batch.CheckpointPolicy, specs []batch.ReplicaSpec, fldPath, specsPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	volumePath := fldPath.Child("volumeName")
	if c.VolumeName == "" {
		allErrs = append(allErrs, field.Required(volumePath, "the pod volume that holds the checkpoints"))
	}
	if v := c.IntervalSeconds; v != nil && *v <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("intervalSeconds"), *v, "must be greater than 0"))
	} else if v != nil {
		allErrs = append(allErrs, validateAtMost(*v, batch.MaxCheckpointIntervalSeconds, fldPath.Child("intervalSeconds"))...)
	}
	gracePath := fldPath.Child("stopGraceSeconds")
	if g := c.StopGraceSeconds; g != nil && *g <= 0 {
		allErrs = append(allErrs, field.Invalid(gracePath, *g, "must be greater than 0"))
	} else if g != nil {
		allErrs = append(allErrs, validateAtMost(*g, batch.MaxStopGraceSeconds, gracePath)...)
	}
	firstPath, firstAt := "", ""
	for i := range specs {
		spec := &specs[i].Template.Spec
		templatePath := specsPath.Index(i).Child("template", "spec")
		if g := c.StopGraceSeconds; g != nil && int64(*g) > batch.TerminationGraceOf(spec) {
			allErrs = append(allErrs, field.Invalid(gracePath, *g, fmt.Sprintf(
				"must be at most %s (%d): a stop may not wait longer for a checkpoint than the pod may take to end",
				templatePath.Child("terminationGracePeriodSeconds"), batch.TerminationGraceOf(spec))))
		}
		if c.VolumeName == "" {
			continue
		}
		if !hasVolume(spec, c.VolumeName) {
			allErrs = append(allErrs, field.Invalid(volumePath, c.VolumeName,
				fmt.Sprintf("is not a volume of %s", templatePath.Child("volumes"))))
			continue
		}
		ci := batch.TrainingContainer(spec.Containers, k.trainingContainer)
		if ci < 0 {
			continue
		}
		containerPath := templatePath.Child("containers").Index(ci).Child("volumeMounts")
		m := batch.CheckpointMount(&spec.Containers[ci], c.VolumeName)
		switch {
		case m == nil:
			allErrs = append(allErrs, field.Invalid(volumePath, c.VolumeName,
				fmt.Sprintf("the training container does not mount it (%s)", containerPath)))
		case m.ReadOnly:
			allErrs = append(allErrs, field.Invalid(volumePath, c.VolumeName,
				fmt.Sprintf("the training container mounts it read-only (%s)", containerPath)))
		case firstPath == "":
			firstPath, firstAt = m.MountPath, containerPath.String()
		case m.MountPath != firstPath:
			allErrs = append(allErrs, field.Invalid(volumePath, c.VolumeName, fmt.Sprintf(
				"must be mounted at one path in every replica type: %s mounts it at %q, %s at %q",
				firstAt, firstPath, containerPath, m.MountPath)))
		}
	}
	return allErrs
}

func hasVolume(spec *corev1.PodSpec, name string) bool {
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == name {
			return true
		}
	}
	return false
}

// ValidateCheckpointReport checks the body of a POST to a job's checkpoint
// subresource on its own; whether the path lies in the job's checkpoint
// directory and the step may follow the latest is the subresource's to say.
func ValidateCheckpointReport(report *batch.CheckpointReport) field.ErrorList {
	var allErrs field.ErrorList
	v := &report.CheckpointValues
	switch p := field.NewPath("path"); {
	case v.Path == "":
		allErrs = append(allErrs, field.Required(p, "where the checkpoint lies"))
	case len(v.Path) > batch.MaxCheckpointPathBytes:
		allErrs = append(allErrs, field.TooLong(p, "", batch.MaxCheckpointPathBytes))
	default:
		// The path flows into the pods' environment, annotations, events and
		// terminals, where a newline or an escape would forge or garble lines.
		if i := strings.IndexFunc(v.Path, unicode.IsControl); i >= 0 {
			r, _ := utf8.DecodeRuneInString(v.Path[i:])
			allErrs = append(allErrs, field.Invalid(p, v.Path, fmt.Sprintf("must not contain a control character (%U at byte %d)", r, i)))
		}
	}
	if v.Step != nil && *v.Step < 0 {
		allErrs = append(allErrs, field.Invalid(field.NewPath("step"), *v.Step, "must be greater than or equal to 0"))
	}
	if v.Epoch != nil && *v.Epoch < 0 {
		allErrs = append(allErrs, field.Invalid(field.NewPath("epoch"), *v.Epoch, "must be greater than or equal to 0"))
	}
	if v.SizeBytes != nil && *v.SizeBytes < 0 {
		allErrs = append(allErrs, field.Invalid(field.NewPath("sizeBytes"), *v.SizeBytes, "must be greater than or equal to 0"))
	}
	return allErrs
}

// validateCheckpointStatusBounds keeps the checkpoint history, the recent
// interruptions and a stall's log tails within their bounds, whoever
// writes them.
func validateCheckpointStatusBounds(status *batch.TrainingJobStatus, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if c := status.Checkpoint; c != nil && len(c.History) > batch.MaxCheckpointHistory {
		allErrs = append(allErrs, field.TooMany(fldPath.Child("checkpoint", "history"), len(c.History), batch.MaxCheckpointHistory))
	}
	if a := status.Accounting; a != nil && len(a.Recent) > batch.MaxRecentInterruptions {
		allErrs = append(allErrs, field.TooMany(fldPath.Child("accounting", "recent"), len(a.Recent), batch.MaxRecentInterruptions))
	}
	if st := status.Stall; st != nil {
		logsPath := fldPath.Child("stall", "logs")
		if len(st.Logs) > batch.MaxStallLogReplicas {
			allErrs = append(allErrs, field.TooMany(logsPath, len(st.Logs), batch.MaxStallLogReplicas))
		}
		for i := range st.Logs {
			if n := len(st.Logs[i].Lines) + len(st.Logs[i].Error); n > batch.MaxStallLogBytes {
				allErrs = append(allErrs, field.TooLong(logsPath.Index(i), "", batch.MaxStallLogBytes))
			}
		}
	}
	return allErrs
}
