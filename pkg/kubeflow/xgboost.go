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

package kubeflow

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// xgboostReplicas: the master comes first, so that it has rank 0 and hosts
// the tracker, as in Kubeflow.
var xgboostReplicas = replicaKind{
	kind:       xgboostJobKind,
	specsField: "xgbReplicaSpecs",
	types: []replicaTypeMapping{
		{kubeflow: "Master", ours: v1beta1.ReplicaTypeMaster},
		{kubeflow: "Worker", ours: v1beta1.ReplicaTypeWorker},
	},
	defaultRestartPolicy: v1beta1.RestartPolicyNever,
}

// convertXGBoostJob converts an XGBoostJob's spec into an
// XGBoostTrainingJob. The kind adds nothing to the shared spec: the
// environment Kubeflow gives the replicas, ours gives under the same names.
func convertXGBoostJob(meta metav1.ObjectMeta, spec *object, w *warnings) (*v1beta1.XGBoostTrainingJob, error) {
	job := &v1beta1.XGBoostTrainingJob{TypeMeta: typeMeta("XGBoostTrainingJob"), ObjectMeta: meta}
	if _, err := xgboostReplicas.convertSharedSpec(spec, &job.Spec.TrainingJobSpec, w); err != nil {
		return nil, err
	}
	spec.reportLeftovers(w)
	return job, nil
}
