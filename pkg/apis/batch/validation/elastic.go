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

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch"
)

// validateElasticSpec checks spec.elastic of a kind that may be elastic
// (PyTorch, and GenericJob, whose replicas rank in list order, so that
// masterFirst is false for it).
func validateElasticSpec(e *batch.ElasticConfig, specs []batch.ReplicaSpec, masterFirst bool, fldPath *field.Path) field.ErrorList {
	if e == nil {
		return nil
	}
	allErrs := validateElastic(e, fldPath.Child("elastic"))
	if e.Enabled {
		allErrs = append(allErrs, validateElasticJob(e, specs, masterFirst, fldPath)...)
	}
	return allErrs
}

// validateElasticJob checks the replica types around an elastic range. The
// range counts every replica of the job; the last type in rank order is the
// one scaled, the others keep their counts, which must fit under
// minReplicas. The rendezvous host, replica 0 of the first type, is never
// scaled away. A PyTorch master ranks first and its count is fixed, so it
// cannot be the scaled type.
func validateElasticJob(e *batch.ElasticConfig, specs []batch.ReplicaSpec, masterFirst bool, fldPath *field.Path) field.ErrorList {
	scaled, fixed := batch.ElasticScaledType(specs, masterFirst)
	if scaled < 0 {
		return nil
	}
	typePath := fldPath.Child("replicaSpecs").Index(scaled).Child("type")
	if masterFirst && specs[scaled].Type == batch.ReplicaTypeMaster {
		return field.ErrorList{field.Invalid(typePath, string(batch.ReplicaTypeMaster),
			"an elastic job scales its last replica type, and a master is always one replica: add a worker type to scale")}
	}
	if m := e.MinReplicas; m != nil && *m >= 1 && int64(*m) < fixed {
		return field.ErrorList{field.Invalid(fldPath.Child("elastic", "minReplicas"), *m, fmt.Sprintf(
			"must be at least %d, the replicas of the types that are not scaled (all but %s)", fixed, specs[scaled].Type))}
	}
	return nil
}

// validateElastic checks the range of replicas an elastic job may run with.
// An enabled range needs both ends; a range given but not enabled must still
// make sense.
func validateElastic(e *batch.ElasticConfig, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	minPath, maxPath := fldPath.Child("minReplicas"), fldPath.Child("maxReplicas")
	if e.Enabled && e.MinReplicas == nil {
		allErrs = append(allErrs, field.Required(minPath, "an elastic job needs the fewest replicas it may run with"))
	}
	if e.Enabled && e.MaxReplicas == nil {
		allErrs = append(allErrs, field.Required(maxPath, "an elastic job needs the most replicas it may run with"))
	}
	minOK := e.MinReplicas != nil && *e.MinReplicas >= 1
	if e.MinReplicas != nil && !minOK {
		allErrs = append(allErrs, field.Invalid(minPath, *e.MinReplicas, "must be at least 1"))
	}
	maxOK := e.MaxReplicas != nil && *e.MaxReplicas >= 1
	switch {
	case e.MaxReplicas == nil:
	case !maxOK:
		allErrs = append(allErrs, field.Invalid(maxPath, *e.MaxReplicas, "must be at least 1"))
	case minOK && *e.MaxReplicas < *e.MinReplicas:
		maxOK = false
		allErrs = append(allErrs, field.Invalid(maxPath, *e.MaxReplicas,
			fmt.Sprintf("must be greater than or equal to minReplicas (%d)", *e.MinReplicas)))
	}
	if x := e.ExpectedReplicas; x != nil {
		switch {
		case minOK && *x < *e.MinReplicas:
			allErrs = append(allErrs, field.Invalid(fldPath.Child("expectedReplicas"), *x,
				fmt.Sprintf("must be greater than or equal to minReplicas (%d)", *e.MinReplicas)))
		case maxOK && *x > *e.MaxReplicas:
			allErrs = append(allErrs, field.Invalid(fldPath.Child("expectedReplicas"), *x,
				fmt.Sprintf("must be less than or equal to maxReplicas (%d)", *e.MaxReplicas)))
		case *x < 1:
			allErrs = append(allErrs, field.Invalid(fldPath.Child("expectedReplicas"), *x, "must be at least 1"))
		}
	}
	// The job may scale up to any of these, so each must fit the cap.
	for _, bound := range []struct {
		name  string
		value *int32
	}{{"minReplicas", e.MinReplicas}, {"maxReplicas", e.MaxReplicas}, {"expectedReplicas", e.ExpectedReplicas}} {
		if bound.value != nil && *bound.value > batch.MaxTotalReplicas {
			allErrs = append(allErrs, field.Invalid(fldPath.Child(bound.name), *bound.value, fmt.Sprintf(
				"must be less than or equal to %d, the most replicas a job may have", batch.MaxTotalReplicas)))
		}
	}
	return allErrs
}

// validateElasticChange checks a change of an elastic job's spec.elastic:
// the ends of its range stay, and elasticity is switched only while no pod
// could be told the difference.
func validateElasticChange(job, old batch.ElasticJob) field.ErrorList {
	allErrs := validateElasticUpdate(job.ElasticSpec(), old.ElasticSpec(), specPath.Child("elastic"))
	if batch.ElasticEnabled(job.ElasticSpec()) != batch.ElasticEnabled(old.ElasticSpec()) {
		// Switching elasticity changes what every pod was told about the
		// job (torchrun's --nnodes, WORLD_SIZE), as a replica count does.
		if refusal := topologyChangeRefusal(job.CommonSpec(), old.CommonSpec(), old.JobStatus()); refusal != "" {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("elastic", "enabled"), "cannot change: "+refusal))
		}
	}
	return allErrs
}

// validateElasticUpdate keeps the ends of the elastic range as they were when
// the job was created.
func validateElasticUpdate(e, old *batch.ElasticConfig, fldPath *field.Path) field.ErrorList {
	var newMin, newMax, oldMin, oldMax *int32
	if e != nil {
		newMin, newMax = e.MinReplicas, e.MaxReplicas
	}
	if old != nil {
		oldMin, oldMax = old.MinReplicas, old.MaxReplicas
	}
	allErrs := apivalidation.ValidateImmutableField(newMin, oldMin, fldPath.Child("minReplicas"))
	return append(allErrs, apivalidation.ValidateImmutableField(newMax, oldMax, fldPath.Child("maxReplicas"))...)
}

// validateAdmittedScaleOut refuses to scale out a job that re-forms at each
// size (a GenericJob) while its Kueue queue admits it. An admitted Workload
// cannot grow, so the replicas past its admission would not start, while
// every pod is told the new size and waits for them. Scaling in needs no
// admission; a paused job (or one this update pauses) gave its quota back
// and is queued again at its new size when resumed.
func validateAdmittedScaleOut(job, old batch.ElasticJob) field.ErrorList {
	e, oldE := job.ElasticSpec(), old.ElasticSpec()
	if !batch.ElasticEnabled(e) || !batch.ElasticEnabled(oldE) || !batch.QueueAdmitted(old.JobStatus().Conditions) ||
		batch.PauseEnabled(job.CommonSpec()) || batch.PauseEnabled(old.CommonSpec()) || old.JobStatus().Phase == batch.JobPaused {
		return nil
	}
	now := batch.ElasticTotal(batch.TotalReplicas(job.CommonSpec().ReplicaSpecs), e.MinReplicas, e.MaxReplicas, e.ExpectedReplicas)
	was := batch.ElasticTotal(batch.TotalReplicas(old.CommonSpec().ReplicaSpecs), oldE.MinReplicas, oldE.MaxReplicas, oldE.ExpectedReplicas)
	if now <= was {
		return nil
	}
	return field.ErrorList{field.Forbidden(specPath.Child("elastic", "expectedReplicas"), fmt.Sprintf(
		"cannot grow from %d to %d replicas while the job's Kueue queue admits it: an admitted Workload cannot grow, so the "+
			"replicas past %d would not start while every pod is told there are %d. Pause the job (it gives its quota "+
			"back), scale it, and resume it: it is queued again at the new size", was, now, was, now))}
}
