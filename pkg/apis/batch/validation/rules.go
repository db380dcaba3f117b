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

	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch"
)

// validateGenericRules checks a generic job's success and failure rules.
// An elastic job's scaled type may be named only whole: its indexes come
// and go.
func validateGenericRules(spec *batch.GenericJobSpec) field.ErrorList {
	scaledType := batch.ReplicaType("")
	if batch.ElasticEnabled(spec.Elastic) {
		if scaled, _ := batch.ElasticScaledType(spec.ReplicaSpecs, false); scaled >= 0 {
			scaledType = spec.ReplicaSpecs[scaled].Type
		}
	}
	allErrs := validateReplicaRules(spec.SuccessRules, spec.ReplicaSpecs, scaledType, specPath.Child("successRules"))
	return append(allErrs, validateReplicaRules(spec.FailureRules, spec.ReplicaSpecs, scaledType, specPath.Child("failureRules"))...)
}

// validateReplicaRules checks a generic job's success or failure rules:
// each names replicas the job has, each at most once, and there are not
// too many of them.
func validateReplicaRules(rules []batch.ReplicaRule, specs []batch.ReplicaSpec, scaledType batch.ReplicaType, fldPath *field.Path) field.ErrorList {
	if len(rules) > batch.MaxReplicaRules {
		return field.ErrorList{field.TooMany(fldPath, len(rules), batch.MaxReplicaRules)}
	}
	replicas := make(map[batch.ReplicaType]int32, len(specs))
	var types []string
	for i := range specs {
		replicas[specs[i].Type] = batch.ReplicasOf(&specs[i])
		types = append(types, string(specs[i].Type))
	}
	var allErrs field.ErrorList
	for i, rule := range rules {
		rulePath := fldPath.Index(i).Child("replicas")
		if len(rule.Replicas) == 0 {
			allErrs = append(allErrs, field.Required(rulePath, "a rule names at least one replica type"))
			continue
		}
		if len(rule.Replicas) > batch.MaxReplicaTypes {
			allErrs = append(allErrs, field.TooMany(rulePath, len(rule.Replicas), batch.MaxReplicaTypes))
			continue
		}
		seenTypes := map[batch.ReplicaType]bool{}
		for j, selector := range rule.Replicas {
			selectorPath := rulePath.Index(j)
			count, exists := replicas[selector.Type]
			switch {
			case selector.Type == "":
				allErrs = append(allErrs, field.Required(selectorPath.Child("type"), "a replica type of the job"))
				continue
			case !exists:
				allErrs = append(allErrs, field.NotSupported(selectorPath.Child("type"), string(selector.Type), types))
				continue
			case seenTypes[selector.Type]:
				allErrs = append(allErrs, field.Duplicate(selectorPath.Child("type"), string(selector.Type)))
				continue
			}
			seenTypes[selector.Type] = true
			if count == 0 {
				allErrs = append(allErrs, field.Invalid(selectorPath.Child("type"), string(selector.Type),
					"the type has no replicas, so the rule could never hold"))
				continue
			}
			if len(selector.Indexes) > 0 && selector.Type == scaledType {
				allErrs = append(allErrs, field.Forbidden(selectorPath.Child("indexes"),
					"the type scales with spec.elastic, so its indexes come and go: a rule names it whole"))
				continue
			}
			if len(selector.Indexes) > int(count) {
				allErrs = append(allErrs, field.TooMany(selectorPath.Child("indexes"), len(selector.Indexes), int(count)))
				continue
			}
			seenIndexes := map[int32]bool{}
			for k, index := range selector.Indexes {
				indexPath := selectorPath.Child("indexes").Index(k)
				switch {
				case index < 0 || index >= count:
					allErrs = append(allErrs, field.Invalid(indexPath, index,
						fmt.Sprintf("must be between 0 and %d: the type has %d replicas", count-1, count)))
				case seenIndexes[index]:
					allErrs = append(allErrs, field.Duplicate(indexPath, index))
				}
				seenIndexes[index] = true
			}
		}
	}
	return allErrs
}
