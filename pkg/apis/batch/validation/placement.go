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
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

// topologyKeys are the annotations of a topology request.
var topologyKeys = []string{batch.AnnotationRequiredTopology, batch.AnnotationPreferredTopology}

// validateTopologyRequests checks the topology requests a job makes of
// Kueue (batch.TopologyOf): each names a node label, at most one of
// required and preferred per place, the job's or its replica types' but
// not both, and a request for the whole job only where Kueue can place the
// pod sets together.
func validateTopologyRequests(jobAnnotations map[string]string, specs []batch.ReplicaSpec, annotationsPath, specsPath *field.Path) field.ErrorList {
	allErrs := validateTopologyAnnotations(jobAnnotations, annotationsPath)
	wholeJob := batch.TopologyOf(jobAnnotations, nil)
	var withReplicas []batch.ReplicaSpec
	for i := range specs {
		path := specsPath.Index(i).Child("template", "metadata", "annotations")
		allErrs = append(allErrs, validateTopologyAnnotations(specs[i].Template.Annotations, path)...)
		if wholeJob != nil {
			for _, key := range topologyKeys {
				if _, ok := specs[i].Template.Annotations[key]; ok {
					allErrs = append(allErrs, field.Forbidden(path.Key(key), fmt.Sprintf(
						"the job asks for one topology domain for all its pods (%s); a replica type may not ask for its own",
						annotationsPath.Key(topologyKey(wholeJob)))))
				}
			}
		}
		if ptr.Deref(specs[i].Replicas, 1) > 0 {
			withReplicas = append(withReplicas, specs[i])
		}
	}
	if wholeJob == nil || len(withReplicas) <= 1 {
		return allErrs
	}
	key := annotationsPath.Key(topologyKey(wholeJob))
	if len(withReplicas) > batch.MaxWholeJobTopologyTypes ||
		(ptr.Deref(withReplicas[0].Replicas, 1) != 1 && ptr.Deref(withReplicas[1].Replicas, 1) != 1) {
		allErrs = append(allErrs, field.Invalid(key, wholeJob.Level, fmt.Sprintf(
			"one topology domain for the whole job needs at most %d replica types, one of them a single replica "+
				"(Kueue places pod sets together only so); ask for it on each replica type's template instead",
			batch.MaxWholeJobTopologyTypes)))
	}
	return allErrs
}

// validateTopologyAnnotations checks one place's topology annotations.
func validateTopologyAnnotations(annotations map[string]string, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	_, required := annotations[batch.AnnotationRequiredTopology]
	for _, key := range topologyKeys {
		level, ok := annotations[key]
		if !ok {
			continue
		}
		if key == batch.AnnotationPreferredTopology && required {
			allErrs = append(allErrs, field.Forbidden(path.Key(key),
				fmt.Sprintf("may not be set together with %s: the pods' domain is either required or preferred", batch.AnnotationRequiredTopology)))
		}
		if msgs := utilvalidation.IsQualifiedName(level); len(msgs) > 0 {
			allErrs = append(allErrs, field.Invalid(path.Key(key), level, "must name the node label of a topology level: "+msgs[0]))
		}
	}
	return allErrs
}

func topologyKey(r *batch.TopologyRequest) string {
	if r.Required {
		return batch.AnnotationRequiredTopology
	}
	return batch.AnnotationPreferredTopology
}
