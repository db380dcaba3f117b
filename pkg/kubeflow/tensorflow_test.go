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

// replicasOverlay replaces the replica map of a manifest.
const tfReplicasOverlay = `
spec:
  tfReplicaSpecs:
    Evaluator: {template: {spec: {containers: [{name: tensorflow, image: "tf:eval"}]}}}
    Worker: {replicas: 4, template: {spec: {containers: [{name: tensorflow, image: "tf:worker"}]}}}
    PS: {replicas: 2, restartPolicy: ExitCode, template: {spec: {containers: [{name: tensorflow, image: "tf:ps"}]}}}
    Chief: {replicas: 1, restartPolicy: OnFailure, template: {spec: {containers: [{name: tensorflow, image: "tf:chief"}]}}}
`

func TestTensorFlowReplicas(t *testing.T) {
	tf := func(overlay string) string { return manifest(t, tfJobManifest, overlay) }
	runFieldCases(t, []fieldCase{
		{
			name:  "chief, ps, worker, evaluator",
			input: tf(tfReplicasOverlay),
			path:  "spec.replicaSpecs[*].type",
			want:  `[chief, ps, worker, evaluator]`,
		},
		{
			name:  "replicas as given",
			input: tf(tfReplicasOverlay),
			path:  "spec.replicaSpecs[*].replicas",
			want:  `[1, 2, 4, null]`,
		},
		{
			name:  "restart policies, with Kubeflow's default Never",
			input: tf(tfReplicasOverlay),
			path:  "spec.replicaSpecs[*].restartPolicy",
			want:  `[OnFailure, ExitCode, Never, Never]`,
		},
		{
			name:  "templates stay with their replicas",
			input: tf(tfReplicasOverlay),
			path:  "spec.replicaSpecs[*].template.spec.containers[0].image",
			want:  `["tf:chief", "tf:ps", "tf:worker", "tf:eval"]`,
		},
		{
			name: "Master is the chief",
			input: tf(`spec: {tfReplicaSpecs: {Master: {template: {spec: {containers: [{name: tensorflow, image: tf}]}}},
				Worker: {template: {spec: {containers: [{name: tensorflow, image: tf}]}}}}}`),
			path: "spec.replicaSpecs[*].type",
			want: `[chief, worker]`,
		},
		{
			name: "types in any case, as Kubeflow accepts them",
			input: manifest(t, `{apiVersion: kubeflow.org/v1, kind: TFJob, metadata: {name: lower}, spec: {tfReplicaSpecs: {
				worker: {template: {spec: {containers: [{name: tensorflow, image: tf}]}}},
				ps: {template: {spec: {containers: [{name: tensorflow, image: tf}]}}},
				CHIEF: {template: {spec: {containers: [{name: tensorflow, image: tf}]}}}}}}`),
			path: "spec.replicaSpecs[*].type",
			want: `[chief, ps, worker]`,
		},
		{
			name:  "successPolicy by default",
			input: tf(`spec: {successPolicy: ""}`),
			path:  "spec.replicaSpecs[*].type",
			want:  `[worker]`,
		},
		{
			name:     "successPolicy AllWorkers",
			input:    tf(`spec: {successPolicy: AllWorkers}`),
			path:     "spec.replicaSpecs[*].type",
			want:     `[worker]`,
			warnings: []string{"spec.successPolicy: not carried over: ours has no success policy: the job succeeds when its chief succeeds, or, without a chief, when worker 0 does"},
		},
		{
			name:     "an unknown successPolicy",
			input:    tf(`spec: {successPolicy: AnyWorker}`),
			path:     "spec.replicaSpecs[*].type",
			want:     `[worker]`,
			warnings: []string{`spec.successPolicy: not carried over: not a Kubeflow success policy ("" or "AllWorkers"); the job succeeds when its chief succeeds, or, without a chief, when worker 0 does`},
		},
		{
			name:     "enableDynamicWorker",
			input:    tf(`spec: {enableDynamicWorker: true}`),
			path:     "spec.replicaSpecs[*].type",
			want:     `[worker]`,
			warnings: []string{"spec.enableDynamicWorker: not carried over: ours does not add or remove workers of a running job; TF_CONFIG lists every replica"},
		},
		{
			name:  "enableDynamicWorker false",
			input: tf(`spec: {enableDynamicWorker: false}`),
			path:  "spec.replicaSpecs[*].type",
			want:  `[worker]`,
		},
	})
}

func TestTensorFlowReplicaErrors(t *testing.T) {
	tf := func(overlay string) string { return manifest(t, tfJobManifest, overlay) }
	container := `{template: {spec: {containers: [{name: tensorflow, image: tf}]}}}`
	runErrorCases(t, []errorCase{
		{
			name:  "no replicas",
			input: tf(`spec: {tfReplicaSpecs: null}`),
			err:   "document 0: spec.tfReplicaSpecs: required: a TFJob lists its replicas here",
		},
		{
			name:  "a list of replicas",
			input: tf(`spec: {tfReplicaSpecs: [` + container + `]}`),
			err:   "document 0: spec.tfReplicaSpecs: must be an object keyed by replica type, not a list",
		},
		{
			name:  "an unknown replica type",
			input: tf(`spec: {tfReplicaSpecs: {Launcher: ` + container + `}}`),
			err:   `document 0: spec.tfReplicaSpecs.Launcher: unknown TFJob replica type "Launcher"; Kubeflow accepts Chief, Master, PS, Worker, Evaluator`,
		},
		{
			name:  "Chief and Master",
			input: tf(`spec: {tfReplicaSpecs: {Chief: ` + container + `, Master: ` + container + `}}`),
			err:   `document 0: spec.tfReplicaSpecs.Master: "Chief" and "Master" are the same replica type "chief"`,
		},
		{
			name:  "a type twice in different case",
			input: tf(`spec: {tfReplicaSpecs: {worker: ` + container + `}}`),
			err:   `document 0: spec.tfReplicaSpecs.worker: "Worker" and "worker" are the same replica type "worker"`,
		},
		{
			name:  "an unknown restart policy",
			input: tf(`spec: {tfReplicaSpecs: {Worker: {restartPolicy: Sometimes}}}`),
			err:   `document 0: spec.tfReplicaSpecs.Worker.restartPolicy: unsupported value "Sometimes"; Kubeflow accepts "Always", "OnFailure", "Never", "ExitCode"`,
		},
		{
			name:  "replicas not a number",
			input: tf(`spec: {tfReplicaSpecs: {Worker: {replicas: two}}}`),
			err:   `document 0: spec.tfReplicaSpecs.Worker.replicas: must be a whole number, not the string "two"`,
		},
		{
			name:  "no template",
			input: tf(`spec: {tfReplicaSpecs: {Worker: {template: null}}}`),
			err:   "document 0: spec.tfReplicaSpecs.Worker.template: required: the pod each replica runs",
		},
		{
			name:  "a template field that is not a pod template's",
			input: tf(`spec: {tfReplicaSpecs: {Worker: {template: {spec: {containers: [{name: tensorflow, image: tf, imagePullPolicyy: Always}]}}}}}`),
			err:   `document 0: spec.tfReplicaSpecs.Worker.template: strict decoding error: unknown field "spec.containers[0].imagePullPolicyy"`,
		},
		{
			name:  "a template field of the wrong type",
			input: tf(`spec: {tfReplicaSpecs: {Worker: {template: {spec: {containers: {name: tensorflow}}}}}}`),
			err:   `document 0: spec.tfReplicaSpecs.Worker.template: json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type []v1.Container`,
		},
		{
			name:  "a template field in the wrong case",
			input: tf(`spec: {tfReplicaSpecs: {Worker: {template: {spec: {containers: [{name: tensorflow, Image: tf}]}}}}}`),
			err:   `document 0: spec.tfReplicaSpecs.Worker.template: strict decoding error: unknown field "spec.containers[0].Image"`,
		},
		{
			name:  "a template that is not an object",
			input: tf(`spec: {tfReplicaSpecs: {Worker: {template: pod}}}`),
			err:   `document 0: spec.tfReplicaSpecs.Worker.template: must be a pod template, not the string "pod"`,
		},
	})
}
