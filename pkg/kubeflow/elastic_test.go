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

func TestPyTorchElasticPolicy(t *testing.T) {
	rendezvous := `spec: {elasticPolicy: {minReplicas: 2, maxReplicas: 4, rdzvBackend: etcd-v2, maxRestarts: 3, nProcPerNode: 2,
		rdzvId: run-7, rdzvConf: [{key: timeout, value: "900"}, {key: read_timeout, value: "60"}], standalone: true,
		rdzvHost: etcd-client, rdzvPort: 2379}}`
	runFieldCases(t, []fieldCase{
		{
			name:  "the range of replicas",
			input: manifest(t, pyTorchJobManifest, `spec: {elasticPolicy: {minReplicas: 1, maxReplicas: 3}}`),
			path:  "spec.elastic",
			want:  `{enabled: true, minReplicas: 1, maxReplicas: 3}`,
		},
		{
			name:  "only the most replicas",
			input: manifest(t, pyTorchJobManifest, `spec: {elasticPolicy: {maxReplicas: 3}}`),
			path:  "spec.elastic",
			want:  `{enabled: true, minReplicas: 3, maxReplicas: 3}`,
		},
		{
			name:  "only the fewest replicas",
			input: manifest(t, pyTorchJobManifest, `spec: {elasticPolicy: {minReplicas: 2}}`),
			path:  "spec.elastic",
			want:  `{enabled: true, minReplicas: 2, maxReplicas: 2}`,
		},
		{
			name:  "neither: the workers",
			input: manifest(t, pyTorchJobManifest, `spec: {elasticPolicy: {}}`),
			path:  "spec.elastic",
			want:  `{enabled: true, minReplicas: 2, maxReplicas: 2}`,
		},
		{
			name:  "neither, and workers without a count",
			input: manifest(t, pyTorchJobManifest, `spec: {elasticPolicy: {}, pytorchReplicaSpecs: {Worker: {replicas: null}}}`),
			path:  "spec.elastic",
			want:  `{enabled: true, minReplicas: 1, maxReplicas: 1}`,
		},
		{
			name:  "rendezvous settings become torchrun's, before the options on the command line",
			input: pyTorchJobAlike(t, `command: [torchrun, --monitor-interval=5, train.py]`, rendezvous),
			path:  "spec",
			want: `
elastic: {enabled: true, minReplicas: 2, maxReplicas: 4}
torchrunConfig:
  enabled: true
  rdzvBackend: etcd-v2
  maxRestarts: 3
  procPerNode: "2"
  extraOptions: [--rdzv-id=run-7, "--rdzv-conf=timeout=900,read_timeout=60", --standalone, "--rdzv-endpoint=etcd-client:2379", --monitor-interval=5]
runPolicy: {cleanUpPolicy: None}
replicaSpecs:
- {type: master, replicas: 1, restartPolicy: OnFailure, template: {metadata: {}, spec: {containers: [
    {name: pytorch, image: "torch:2.4", command: [python, train.py], resources: {}}]}}}
- {type: worker, replicas: 2, restartPolicy: OnFailure, template: {metadata: {}, spec: {containers: [
    {name: pytorch, image: "torch:2.4", command: [python, train.py], resources: {}}]}}}
`,
		},
		{
			name:  "rendezvous settings without torchrun",
			input: pyTorchJobAlike(t, pythonCommand, rendezvous),
			path:  "spec.elastic",
			want:  `{enabled: true, minReplicas: 2, maxReplicas: 4}`,
			warnings: []string{
				"spec.elasticPolicy.rdzvBackend: not carried over: only torchrun reads it, and the containers do not start torchrun, so spec.torchrunConfig is not enabled",
				"spec.elasticPolicy.maxRestarts: not carried over: only torchrun reads it, and the containers do not start torchrun, so spec.torchrunConfig is not enabled",
				"spec.elasticPolicy.rdzvId: not carried over: only torchrun reads it, and the containers do not start torchrun, so spec.torchrunConfig is not enabled",
				"spec.elasticPolicy.rdzvConf: not carried over: only torchrun reads it, and the containers do not start torchrun, so spec.torchrunConfig is not enabled",
				"spec.elasticPolicy.standalone: not carried over: only torchrun reads it, and the containers do not start torchrun, so spec.torchrunConfig is not enabled",
				"spec.elasticPolicy.rdzvHost: not carried over: only torchrun reads it, and the containers do not start torchrun, so spec.torchrunConfig is not enabled",
				"spec.elasticPolicy.rdzvPort: not carried over: only torchrun reads it, and the containers do not start torchrun, so spec.torchrunConfig is not enabled",
				"spec.elasticPolicy.nProcPerNode: not carried over: only torchrun reads it, and the containers do not start torchrun, so spec.torchrunConfig is not enabled",
			},
		},
		{
			name:  "a rendezvous host without a port",
			input: pyTorchJobAlike(t, torchrunCommand, twoProcesses, `spec: {elasticPolicy: {rdzvHost: etcd-client}}`),
			path:  "spec.torchrunConfig",
			want:  `{enabled: true, procPerNode: "2"}`,
			warnings: []string{
				"spec.elasticPolicy.rdzvHost: not carried over: a rendezvous endpoint needs both rdzvHost and rdzvPort; ours holds the rendezvous on the master replica (MASTER_ADDR), on its port named pytorch or pytorchjob-port, else 23456",
			},
		},
		{
			name:  "a rendezvous port without a host",
			input: pyTorchJobAlike(t, torchrunCommand, twoProcesses, `spec: {elasticPolicy: {rdzvPort: 29400}}`),
			path:  "spec.torchrunConfig",
			want:  `{enabled: true, procPerNode: "2"}`,
			warnings: []string{
				"spec.elasticPolicy.rdzvPort: not carried over: a rendezvous endpoint needs both rdzvHost and rdzvPort; ours holds the rendezvous on the master replica (MASTER_ADDR), on its port named pytorch or pytorchjob-port, else 23456",
			},
		},
		{
			name:  "a rendezvous host Kubeflow names after the job",
			input: pyTorchJobAlike(t, torchrunCommand, twoProcesses, `spec: {elasticPolicy: {rdzvHost: resnet-worker-0, rdzvPort: 29400}}`),
			path:  "spec.torchrunConfig",
			want:  `{enabled: true, procPerNode: "2"}`,
			warnings: []string{
				"spec.elasticPolicy.rdzvHost: not carried over: it names a Service Kubeflow creates for the job, which ours does not; ours holds the rendezvous on the master replica (MASTER_ADDR)",
				"spec.elasticPolicy.rdzvPort: not carried over: it names a Service Kubeflow creates for the job, which ours does not; ours holds the rendezvous on the master replica (MASTER_ADDR)",
			},
		},
		{
			name:  "standalone false",
			input: pyTorchJobAlike(t, torchrunCommand, twoProcesses, `spec: {elasticPolicy: {standalone: false}}`),
			path:  "spec.torchrunConfig",
			want:  `{enabled: true, procPerNode: "2"}`,
		},
		{
			name:     "metrics",
			input:    manifest(t, pyTorchJobManifest, `spec: {elasticPolicy: {maxReplicas: 3, metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}]}}`),
			path:     "spec.elastic",
			want:     `{enabled: true, minReplicas: 3, maxReplicas: 3}`,
			warnings: []string{"spec.elasticPolicy.metrics: not carried over: ours does not scale a job by metrics (Kubeflow creates a HorizontalPodAutoscaler for them)"},
		},
		{
			name:     "an unknown field of a rendezvous setting",
			input:    pyTorchJobAlike(t, torchrunCommand, twoProcesses, `spec: {elasticPolicy: {rdzvConf: [{key: timeout, value: "900", scope: all}]}}`),
			path:     "spec.torchrunConfig.extraOptions",
			want:     `["--rdzv-conf=timeout=900"]`,
			warnings: []string{"spec.elasticPolicy.rdzvConf[0].scope: unknown field, not converted"},
		},
	})
}
