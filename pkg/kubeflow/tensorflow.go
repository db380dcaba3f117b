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

// tensorFlowReplicas: Kubeflow's Master is an older name of Chief. The chief
// comes first, then the parameter servers the workers connect to.
var tensorFlowReplicas = replicaKind{
	kind:       tfJobKind,
	specsField: "tfReplicaSpecs",
	types: []replicaTypeMapping{
		{kubeflow: "Chief", ours: v1beta1.ReplicaTypeChief},
		{kubeflow: "Master", ours: v1beta1.ReplicaTypeChief},
		{kubeflow: "PS", ours: v1beta1.ReplicaTypePS},
		{kubeflow: "Worker", ours: v1beta1.ReplicaTypeWorker},
		{kubeflow: "Evaluator", ours: v1beta1.ReplicaTypeEvaluator},
	},
	defaultRestartPolicy: v1beta1.RestartPolicyNever,
}

// Kubeflow's TFJob success policies.
const (
	successPolicyDefault    = ""
	successPolicyAllWorkers = "AllWorkers"
)

// convertTFJob converts a TFJob's spec into a TensorFlowTrainingJob.
func convertTFJob(meta metav1.ObjectMeta, spec *object, w *warnings) (*v1beta1.TensorFlowTrainingJob, error) {
	job := &v1beta1.TensorFlowTrainingJob{TypeMeta: typeMeta("TensorFlowTrainingJob"), ObjectMeta: meta}
	if _, err := tensorFlowReplicas.convertSharedSpec(spec, &job.Spec.TrainingJobSpec, w); err != nil {
		return nil, err
	}

	successPolicy, _, err := spec.takeString("successPolicy")
	if err != nil {
		return nil, err
	}
	switch path := spec.path.Child("successPolicy"); successPolicy {
	case successPolicyDefault:
	case successPolicyAllWorkers:
		w.notCarriedOver(path, "ours has no success policy: the job succeeds when its chief succeeds, or, without a chief, when worker 0 does")
	default:
		w.notCarriedOver(path, "not a Kubeflow success policy (\"\" or \"AllWorkers\"); the job succeeds when its chief succeeds, or, without a chief, when worker 0 does")
	}

	dynamic, _, err := spec.takeBool("enableDynamicWorker")
	if err != nil {
		return nil, err
	}
	if dynamic {
		w.notCarriedOver(spec.path.Child("enableDynamicWorker"), "ours does not add or remove workers of a running job; TF_CONFIG lists every replica")
	}
	spec.reportLeftovers(w)
	return job, nil
}
