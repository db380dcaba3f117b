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

// xgboostRules are the rules the shared validation applies to an XGBoostTrainingJob.
var xgboostRules = kindRules{
	framework:    "XGBoost",
	replicaTypes: []batch.ReplicaType{batch.ReplicaTypeMaster, batch.ReplicaTypeWorker},
	bounds: map[batch.ReplicaType]replicaBounds{
		batch.ReplicaTypeMaster: {1, 1, "an XGBoost job has exactly one master, which hosts the tracker"},
	},
	trainingContainer:  batch.XGBoostContainerName,
	rendezvousPorts:    batch.XGBoostPortNames(),
	envNames:           batch.XGBoostEnvNames(),
	validateReplicaSet: validateXGBoostReplicaSet,
}

// validateXGBoostReplicaSet asks for the master: it hosts the tracker every
// worker connects to, and its exit decides the job.
func validateXGBoostReplicaSet(specs []batch.ReplicaSpec, fldPath *field.Path) field.ErrorList {
	for _, spec := range specs {
		if spec.Type == batch.ReplicaTypeMaster {
			return nil
		}
	}
	return field.ErrorList{field.Required(fldPath,
		"an XGBoost job needs a master replica type: the master hosts the tracker and decides whether the job succeeds")}
}

// ValidateXGBoostTrainingJob checks an XGBoostTrainingJob being created.
func ValidateXGBoostTrainingJob(job *batch.XGBoostTrainingJob) field.ErrorList {
	return validateJobCreate(&job.ObjectMeta, &job.Spec.TrainingJobSpec, &xgboostRules)
}

// ValidateXGBoostTrainingJobUpdate checks a change of an XGBoostTrainingJob's spec and metadata.
// old is the stored job, status included, as for ValidateTensorFlowTrainingJobUpdate.
func ValidateXGBoostTrainingJobUpdate(job, old *batch.XGBoostTrainingJob) field.ErrorList {
	return validateJobUpdate(&job.ObjectMeta, &old.ObjectMeta, &job.Spec.TrainingJobSpec, &old.Spec.TrainingJobSpec, &old.Status, &xgboostRules)
}

func init() {
	rulesByKind[batch.XGBoostTrainingJobKind] = &xgboostRules
	templateValidators[batch.XGBoostTrainingJobKind] = func(m metav1.ObjectMeta, t *batch.TrainingJobTemplate) field.ErrorList {
		return ValidateXGBoostTrainingJob(&batch.XGBoostTrainingJob{ObjectMeta: m, Spec: *t.Xgboost})
	}
}
