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
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch"
)

// validateControllerEnv refuses a template that sets a variable the
// controller sets in every container of the job's pods (batch.JobEnvNames
// and the kind's own): the controller's value would replace the template's
// without a word. On update, a name the stored job's templates already set
// is let be, so that a job stored before this rule can still be paused,
// resumed and edited.
func (k *kindRules) validateControllerEnv(specs, oldSpecs []batch.ReplicaSpec, fldPath *field.Path) field.ErrorList {
	stored := sets.New[string]()
	for i := range oldSpecs {
		pod := &oldSpecs[i].Template.Spec
		for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
			for _, v := range c.Env {
				stored.Insert(v.Name)
			}
		}
	}
	var allErrs field.ErrorList
	check := func(containers []corev1.Container, path *field.Path) {
		for ci := range containers {
			for vi, v := range containers[ci].Env {
				if k.isControllerEnv(v.Name) && !stored.Has(v.Name) {
					allErrs = append(allErrs, field.Invalid(path.Index(ci).Child("env").Index(vi).Child("name"), v.Name,
						fmt.Sprintf("may not be set: the controller sets it in every container of a %s job's pods", k.framework)))
				}
			}
		}
	}
	for i := range specs {
		podPath := fldPath.Index(i).Child("template", "spec")
		check(specs[i].Template.Spec.InitContainers, podPath.Child("initContainers"))
		check(specs[i].Template.Spec.Containers, podPath.Child("containers"))
	}
	return allErrs
}

// isControllerEnv says whether the controller sets the variable in every
// container of the kind's pods.
func (k *kindRules) isControllerEnv(name string) bool {
	return slices.Contains(batch.JobEnvNames(), name) || slices.Contains(k.envNames, name) ||
		(k.envPrefix != "" && strings.HasPrefix(name, k.envPrefix))
}
