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
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// mpiReplicas: the launcher first, then the workers, with Kubeflow's
// default restart policy of both, Never.
var mpiReplicas = replicaKind{
	kind:       mpiJobKind,
	specsField: "mpiReplicaSpecs",
	types: []replicaTypeMapping{
		{kubeflow: "Launcher", ours: v1beta1.ReplicaTypeLauncher},
		{kubeflow: "Worker", ours: v1beta1.ReplicaTypeWorker},
	},
	defaultRestartPolicy: v1beta1.RestartPolicyNever,
}

// mpiOperatorReplicas: as mpiReplicas, with mpi-operator's defaults: the
// launcher restarts OnFailure, the workers Never.
var mpiOperatorReplicas = replicaKind{
	kind:       mpiOperatorAPIVersion + " " + mpiJobKind,
	specsField: "mpiReplicaSpecs",
	types: []replicaTypeMapping{
		{kubeflow: "Launcher", ours: v1beta1.ReplicaTypeLauncher, restartPolicy: v1beta1.RestartPolicyOnFailure},
		{kubeflow: "Worker", ours: v1beta1.ReplicaTypeWorker},
	},
	defaultRestartPolicy: v1beta1.RestartPolicyNever,
}

// mpiOperatorImplementations maps mpi-operator's mpiImplementation to ours.
var mpiOperatorImplementations = map[string]v1beta1.MPIImplementation{
	"OpenMPI": v1beta1.MPIImplementationOpenMPI,
	"Intel":   v1beta1.MPIImplementationIntelMPI,
	"MPICH":   v1beta1.MPIImplementationMPICH,
}

// mpiOperatorLauncherPolicies are mpi-operator's launcherCreationPolicy
// values. Both are carried by ours waiting for the workers (this kind's
// startup policy InOrder): AtStartup starts the launcher at once, and its
// mpirun then retries until the workers answer.
var mpiOperatorLauncherPolicies = []string{"AtStartup", "WaitForWorkersReady"}

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

// convertMPIOperatorJob converts an mpi-operator kubeflow.org/v2beta1
// MPIJob's spec: slotsPerWorker, sshAuthMountPath and mpiImplementation
// (Intel is our IntelMPI) as they are. launcherCreationPolicy and the older
// waitForWorkers need nothing: our launcher always waits for the workers.
// runLauncherAsWorker has no counterpart (our launcher runs no rank), so
// it is reported.
func convertMPIOperatorJob(meta metav1.ObjectMeta, spec *object, w *warnings) (*v1beta1.MPIJob, error) {
	job := &v1beta1.MPIJob{TypeMeta: typeMeta("MPIJob"), ObjectMeta: meta}
	if _, err := mpiOperatorReplicas.convertSharedSpec(spec, &job.Spec.TrainingJobSpec, w); err != nil {
		return nil, err
	}
	slots, present, err := spec.takeInt32("slotsPerWorker")
	if err != nil {
		return nil, err
	}
	if present {
		job.Spec.SlotsPerWorker = &slots
	}
	if job.Spec.SSHAuthMountPath, _, err = spec.takeString("sshAuthMountPath"); err != nil {
		return nil, err
	}
	implementation, present, err := spec.takeString("mpiImplementation")
	if err != nil {
		return nil, err
	}
	if present {
		ours, known := mpiOperatorImplementations[implementation]
		if !known {
			return nil, fmt.Errorf("%s: unsupported value %q; mpi-operator accepts %s", spec.path.Child("mpiImplementation"),
				implementation, joinQuoted(slices.Sorted(maps.Keys(mpiOperatorImplementations))))
		}
		job.Spec.MPIImplementation = ours
	}
	policy, present, err := spec.takeString("launcherCreationPolicy")
	if err != nil {
		return nil, err
	}
	if present && !slices.Contains(mpiOperatorLauncherPolicies, policy) {
		return nil, fmt.Errorf("%s: unsupported value %q; mpi-operator accepts %s", spec.path.Child("launcherCreationPolicy"),
			policy, joinQuoted(mpiOperatorLauncherPolicies))
	}
	if _, _, err := spec.takeBool("waitForWorkers"); err != nil {
		return nil, err
	}
	asWorker, _, err := spec.takeBool("runLauncherAsWorker")
	if err != nil {
		return nil, err
	}
	if asWorker {
		w.notCarriedOver(spec.path.Child("runLauncherAsWorker"),
			"our launcher runs mpirun and no rank: give the job one more worker instead")
	}
	spec.reportLeftovers(w)
	return job, nil
}
