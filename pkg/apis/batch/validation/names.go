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

	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch"
)

// derivedName is the name of an object the controller creates for a job, and
// the kind of name it must be.
type derivedName struct {
	// what says what carries the name, for messages.
	what string
	// value is the name itself.
	value string
	// maxLength is the longest name the object accepts.
	maxLength int
	// check tells what is wrong with the name's form, beyond its length.
	check func(string) []string
}

// derivedNames lists the names the controller builds from the job name. For
// the pods only the longest name of each type matters: the one of the replica
// with the highest index. (With today's limits a pod name cannot exceed the
// 253 characters allowed once the job name and the type are valid labels;
// it is listed anyway so the check follows if a limit or a format changes.)
//
// The job name itself is the headless Service's name, the pods' subdomain and
// the value of the job-name label, all of which a DNS-1035 label satisfies.
// Pod hostnames do not contain the job name and are checked per replica type.
func derivedNames(jobName string, spec *batch.TrainingJobSpec) []derivedName {
	var names []derivedName
	if spec.TensorboardSpec != nil {
		names = append(names, derivedName{
			what:      "the TensorBoard Deployment and Service",
			value:     batch.TensorBoardName(jobName),
			maxLength: utilvalidation.DNS1035LabelMaxLength,
			check:     utilvalidation.IsDNS1035Label,
		})
	}
	for i := range spec.ReplicaSpecs {
		r := &spec.ReplicaSpecs[i]
		// A type that is not a label is reported on its own field; judging
		// the pod names built from it would only repeat that.
		if n := batch.ReplicasOf(r); n > 0 && len(utilvalidation.IsDNS1123Label(string(r.Type))) == 0 {
			names = append(names, derivedName{
				what:      fmt.Sprintf("the pod of %s replica %d", r.Type, n-1),
				value:     batch.PodName(jobName, string(r.Type), n-1),
				maxLength: utilvalidation.DNS1123SubdomainMaxLength,
				check:     utilvalidation.IsDNS1123Subdomain,
			})
		}
	}
	return names
}

// validateDerivedNames reports a job name that is valid on its own but too
// long for one of the names built from it. A job name that is invalid in
// itself has already been reported by the metadata validation.
func validateDerivedNames(jobName string, spec *batch.TrainingJobSpec, fldPath *field.Path) field.ErrorList {
	if jobName == "" || len(utilvalidation.IsDNS1035Label(jobName)) > 0 {
		return nil
	}
	var allErrs field.ErrorList
	for _, d := range derivedNames(jobName, spec) {
		if len(d.value) > d.maxLength {
			allowed := len(jobName) - (len(d.value) - d.maxLength)
			allErrs = append(allErrs, field.Invalid(fldPath, jobName, fmt.Sprintf(
				"must be no more than %d characters: %s would be named %q, which is %d characters, over the limit of %d",
				allowed, d.what, d.value, len(d.value), d.maxLength)))
			continue
		}
		for _, msg := range d.check(d.value) {
			allErrs = append(allErrs, field.Invalid(fldPath, jobName, fmt.Sprintf("%s would be named %q: %s", d.what, d.value, msg)))
		}
	}
	return allErrs
}

// validateHostnames checks that the hostname of every replica of a type,
// <type>-<index>, is a DNS-1123 label; the longest is that of the last
// replica. The type is assumed to be a valid label itself.
func validateHostnames(replicaType batch.ReplicaType, replicas int32, fldPath *field.Path) field.ErrorList {
	if replicas == 0 {
		return nil
	}
	longest := batch.Hostname(string(replicaType), replicas-1)
	if len(longest) <= utilvalidation.DNS1123LabelMaxLength {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, string(replicaType), fmt.Sprintf(
		"is too long for %d replicas: the hostname of replica %d would be %q, which is %d characters, over the %d a DNS-1123 label allows",
		replicas, replicas-1, longest, len(longest), utilvalidation.DNS1123LabelMaxLength))}
}
