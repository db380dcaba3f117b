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
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch"
)

// validateNodeChecks checks what blames a node: the exit codes that do, and
// the preflight check, whose init container name no template may take.
func validateNodeChecks(policy *batch.RunPolicy, specs []batch.ReplicaSpec, fldPath, specsPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	codesPath := fldPath.Child("nodeFailureExitCodes")
	seen := make(map[int32]bool, len(policy.NodeFailureExitCodes))
	for i, code := range policy.NodeFailureExitCodes {
		switch {
		case code < 1 || code > 255:
			allErrs = append(allErrs, field.Invalid(codesPath.Index(i), code, "must be an exit code from 1 to 255"))
		case seen[code]:
			allErrs = append(allErrs, field.Duplicate(codesPath.Index(i), code))
		}
		seen[code] = true
	}
	check := policy.Preflight
	if check == nil {
		return allErrs
	}
	checkPath := fldPath.Child("preflight")
	if len(check.Command) == 0 {
		allErrs = append(allErrs, field.Required(checkPath.Child("command"), "the check to run"))
	}
	allErrs = append(allErrs, validateCommandBytes(check.Command, checkPath.Child("command"))...)
	if check.Image != "" && strings.TrimSpace(check.Image) != check.Image {
		allErrs = append(allErrs, field.Invalid(checkPath.Child("image"), check.Image, "must not have leading or trailing whitespace"))
	}
	for i := range specs {
		for j, c := range specs[i].Template.Spec.InitContainers {
			if c.Name == batch.PreflightContainerName {
				allErrs = append(allErrs, field.Invalid(specsPath.Index(i).Child("template", "spec", "initContainers").Index(j).Child("name"),
					c.Name, "is the name of the preflight check's init container"))
			}
		}
	}
	return allErrs
}

// validateSuspectNodes keeps status.suspectNodes bounded and named, whoever
// writes it.
func validateSuspectNodes(nodes []batch.SuspectNode, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(nodes) > batch.MaxSuspectNodes {
		return append(allErrs, field.TooMany(fldPath, len(nodes), batch.MaxSuspectNodes))
	}
	seen := make(map[string]bool, len(nodes))
	for i, n := range nodes {
		p := fldPath.Index(i)
		switch {
		case n.Name == "":
			allErrs = append(allErrs, field.Required(p.Child("name"), "the node's name"))
		case seen[n.Name]:
			allErrs = append(allErrs, field.Duplicate(p.Child("name"), n.Name))
		}
		seen[n.Name] = true
		if len(n.Reason) > batch.MaxContainerReasonLength {
			allErrs = append(allErrs, field.TooLong(p.Child("reason"), "", batch.MaxContainerReasonLength))
		}
		if len(n.Message) > batch.MaxSuspectNodeMessageBytes {
			allErrs = append(allErrs, field.TooLong(p.Child("message"), "", batch.MaxSuspectNodeMessageBytes))
		}
	}
	return allErrs
}
