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
