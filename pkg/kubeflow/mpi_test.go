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

import "testing"

const mpiJobManifest = `
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: horovod, namespace: team-a}
spec:
  slotsPerWorker: 4
  cleanPodPolicy: Running
  mainContainer: mpi
  mpiReplicaSpecs:
    Worker: {replicas: 2, template: {spec: {containers: [{name: mpi, image: "horovod:1"}]}}}
    Launcher:
      template: {spec: {containers: [{name: sidecar, image: "proxy:1"}, {name: mpi, image: "horovod:1", command: [mpirun, python, train.py]}]}}
`

func TestMPIJob(t *testing.T) {
	warnings := []string{`spec.mainContainer: not carried over: ours runs the first container of each replica as its ` +
		`training container, and the launcher's first is "sidecar": put "mpi" first`}
	runFieldCases(t, []fieldCase{
		{name: "the kind", input: mpiJobManifest, path: "kind", want: "MPIJob", warnings: warnings},
		{
			name: "the launcher first", input: mpiJobManifest,
			path: "spec.replicaSpecs[*].type", want: "[launcher, worker]", warnings: warnings,
		},
		{
			name: "restart policies, with Kubeflow's default Never", input: mpiJobManifest,
			path: "spec.replicaSpecs[*].restartPolicy", want: "[Never, Never]", warnings: warnings,
		},
		{name: "slots per worker", input: mpiJobManifest, path: "spec.slotsPerWorker", want: "4", warnings: warnings},
		{
			name: "the clean-up policy from the top level", input: mpiJobManifest,
			path: "spec.runPolicy.cleanUpPolicy", want: "Unfinished", warnings: warnings,
		},
	})
}

const mpiOperatorManifest = `
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: pi}
spec:
  slotsPerWorker: 2
  runPolicy: {cleanPodPolicy: Running, backoffLimit: 3}
  sshAuthMountPath: /home/mpiuser/.ssh
  mpiImplementation: Intel
  launcherCreationPolicy: WaitForWorkersReady
  mpiReplicaSpecs:
    Launcher:
      template: {spec: {containers: [{name: launcher, image: "pi:1", args: [mpirun, -n, "4", /home/mpiuser/pi]}]}}
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: worker, image: "pi:1", args: [/usr/sbin/sshd, -De]}]}}
`

// TestMPIOperatorJob: mpi-operator's kubeflow.org/v2beta1 MPIJob converts
// with its own defaults (the launcher restarts OnFailure) and names (Intel
// is our IntelMPI).
func TestMPIOperatorJob(t *testing.T) {
	runFieldCases(t, []fieldCase{
		{name: "the kind", input: mpiOperatorManifest, path: "kind", want: "MPIJob"},
		{name: "the launcher first", input: mpiOperatorManifest, path: "spec.replicaSpecs[*].type", want: "[launcher, worker]"},
		{
			name: "restart policies, with mpi-operator's defaults", input: mpiOperatorManifest,
			path: "spec.replicaSpecs[*].restartPolicy", want: "[OnFailure, Never]",
		},
		{name: "slots per worker", input: mpiOperatorManifest, path: "spec.slotsPerWorker", want: "2"},
		{name: "the key path", input: mpiOperatorManifest, path: "spec.sshAuthMountPath", want: "/home/mpiuser/.ssh"},
		{name: "the MPI", input: mpiOperatorManifest, path: "spec.mpiImplementation", want: "IntelMPI"},
		{name: "the run policy", input: mpiOperatorManifest, path: "spec.runPolicy.backoffLimit", want: "3"},
		{
			name: "the launcher as a worker", input: manifest(t, mpiOperatorManifest, `spec: {runLauncherAsWorker: true}`),
			path: "spec.mpiImplementation", want: "IntelMPI",
			warnings: []string{"spec.runLauncherAsWorker: not carried over: our launcher runs mpirun and no rank: give the job one more worker instead"},
		},
		{
			name: "a field mpi-operator does not have", input: manifest(t, mpiOperatorManifest, `spec: {mainContainer: launcher}`),
			path: "spec.slotsPerWorker", want: "2", warnings: []string{"spec.mainContainer: unknown field, not converted"},
		},
	})
	runErrorCases(t, []errorCase{
		{
			name:  "an unknown MPI",
			input: manifest(t, mpiOperatorManifest, `spec: {mpiImplementation: IntelMPI}`),
			err:   `document 0: spec.mpiImplementation: unsupported value "IntelMPI"; mpi-operator accepts "Intel", "MPICH", "OpenMPI"`,
		},
		{
			name:  "an unknown launcher policy",
			input: manifest(t, mpiOperatorManifest, `spec: {launcherCreationPolicy: Later}`),
			err:   `document 0: spec.launcherCreationPolicy: unsupported value "Later"; mpi-operator accepts "AtStartup", "WaitForWorkersReady"`,
		},
		{
			name:  "a type mpi-operator does not have",
			input: manifest(t, mpiOperatorManifest, `spec: {mpiReplicaSpecs: {Master: {template: {}}}}`),
			err:   `document 0: spec.mpiReplicaSpecs.Master: unknown kubeflow.org/v2beta1 MPIJob replica type "Master"; Kubeflow accepts Launcher, Worker`,
		},
	})
}
