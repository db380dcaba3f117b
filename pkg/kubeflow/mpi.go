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
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// mpiReplicas: the launcher first, then the workers, with Kubeflow's
// default restart policy of both, Never.
var mpiReplicas = replicaKind{
	kind:       mpiJobKind,
	specsField: "mpiReplicaSpecs",
	types: []replicaTypeMapping{
		{"Launcher", v1beta1.ReplicaTypeLauncher},
		{"Worker", v1beta1.ReplicaTypeWorker},
	},
	defaultRestartPolicy: v1beta1.RestartPolicyNever,
}

// convertMPIJob converts a kubeflow.org/v1 MPIJob's spec into an MPIJob:
// slotsPerWorker as it is. Kubeflow's mainContainer names the container
// mpirun runs in; ours runs the first of each replica, so a mainContainer
// that is not the first is reported.
func convertMPIJob(meta metav1.ObjectMeta, spec *object, w *warnings) (*v1beta1.MPIJob, error) {
	job := &v1beta1.MPIJob{TypeMeta: typeMeta("MPIJob"), ObjectMeta: meta}
	if _, err := mpiReplicas.convertSharedSpec(spec, &job.Spec.TrainingJobSpec, w); err != nil {
		return nil, err
	}
	slots, present, err := spec.takeInt32("slotsPerWorker")
	if err != nil {
		return nil, err
	}
	if present {
		job.Spec.SlotsPerWorker = &slots
	}
	main, _, err := spec.takeString("mainContainer")
	if err != nil {
		return nil, err
	}
	if main != "" {
		for _, r := range job.Spec.ReplicaSpecs {
			if containers := r.Template.Spec.Containers; len(containers) > 0 && containers[0].Name != main {
				w.notCarriedOver(spec.path.Child("mainContainer"), fmt.Sprintf(
					"ours runs the first container of each replica as its training container, and the %s's first is %q: put %q first",
					r.Type, containers[0].Name, main))
				break
			}
		}
	}
	spec.reportLeftovers(w)
	return job, nil
}
