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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch"
)

// tensorFlowRules are the rules the shared validation applies to a TensorFlowTrainingJob.
var tensorFlowRules = kindRules{
	framework: "TensorFlow",
	replicaTypes: []batch.ReplicaType{
		batch.ReplicaTypeChief, batch.ReplicaTypeWorker, batch.ReplicaTypePS, batch.ReplicaTypeEvaluator,
	},
	bounds: map[batch.ReplicaType]replicaBounds{
		batch.ReplicaTypeChief:     {0, 1, "a TensorFlow job has at most one chief"},
		batch.ReplicaTypeEvaluator: {0, 1, "a TensorFlow job has at most one evaluator"},
	},
	trainingContainer:  batch.TensorFlowContainerName,
	rendezvousPorts:    batch.TensorFlowPortNames(),
	envNames:           batch.TensorFlowEnvNames(),
	leaderTypes:        asReplicaTypes(batch.TensorFlowLeaderTypes()),
	validateReplicaSet: validateTensorFlowReplicaSet,
}

// validateTensorFlowReplicaSet asks for a replica that can decide the job's
// outcome: the chief, or without one worker 0. Parameter servers and the
// evaluator alone never finish successfully.
func validateTensorFlowReplicaSet(specs []batch.ReplicaSpec, fldPath *field.Path) field.ErrorList {
	for _, spec := range specs {
		if (spec.Type == batch.ReplicaTypeChief || spec.Type == batch.ReplicaTypeWorker) && batch.ReplicasOf(&spec) > 0 {
			return nil
		}
	}
	return field.ErrorList{field.Required(fldPath,
		"a TensorFlow job needs at least one chief or worker replica: the chief, or without one worker 0, decides whether the job succeeds")}
}

// ValidateTensorFlowTrainingJob checks a TensorFlowTrainingJob being created.
func ValidateTensorFlowTrainingJob(job *batch.TensorFlowTrainingJob) field.ErrorList {
	return validateJobCreate(&job.ObjectMeta, &job.Spec.TrainingJobSpec, &tensorFlowRules)
}

// ValidateTensorFlowTrainingJobUpdate checks a change of a TensorFlowTrainingJob's spec and metadata.
// old is the stored job, status included: whether its replica counts and pod
// templates may change depends on whether it has pods.
func ValidateTensorFlowTrainingJobUpdate(job, old *batch.TensorFlowTrainingJob) field.ErrorList {
	return validateJobUpdate(&job.ObjectMeta, &old.ObjectMeta, &job.Spec.TrainingJobSpec, &old.Spec.TrainingJobSpec, &old.Status, &tensorFlowRules)
}

func init() {
	rulesByKind[batch.TensorFlowTrainingJobKind] = &tensorFlowRules
	templateValidators[batch.TensorFlowTrainingJobKind] = func(m metav1.ObjectMeta, t *batch.TrainingJobTemplate) field.ErrorList {
		return ValidateTensorFlowTrainingJob(&batch.TensorFlowTrainingJob{ObjectMeta: m, Spec: *t.Tensorflow})
	}
}
