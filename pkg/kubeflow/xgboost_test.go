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

const xgboostJobManifest = `
apiVersion: kubeflow.org/v1
kind: XGBoostJob
metadata: {name: iris, namespace: team-a}
spec:
  runPolicy: {cleanPodPolicy: Running, backoffLimit: 3}
  xgbReplicaSpecs:
    worker: {replicas: 2, restartPolicy: OnFailure, template: {spec: {containers: [{name: xgboost, image: "xgb:worker"}]}}}
    Master:
      replicas: 1
      template:
        apiVersion: v1
        kind: Pod
        spec: {containers: [{name: xgboost, image: "xgb:master", ports: [{name: xgboostjob-port, containerPort: 9991}]}]}
`

func TestXGBoostJob(t *testing.T) {
	typeMetaDropped := "dropped: a pod template has no apiVersion or kind (Kubernetes prunes them from a Kubeflow job)"
	warnings := []string{
		"spec.xgbReplicaSpecs.Master.template.apiVersion: " + typeMetaDropped,
		"spec.xgbReplicaSpecs.Master.template.kind: " + typeMetaDropped,
	}
	runFieldCases(t, []fieldCase{
		{name: "the kind", input: xgboostJobManifest, path: "kind", want: "XGBoostTrainingJob", warnings: warnings},
		{
			name: "the master first, whatever the case of the keys", input: xgboostJobManifest,
			path: "spec.replicaSpecs[*].type", want: "[master, worker]", warnings: warnings,
		},
		{
			name: "restart policies, with Kubeflow's default Never", input: xgboostJobManifest,
			path: "spec.replicaSpecs[*].restartPolicy", want: "[Never, OnFailure]", warnings: warnings,
		},
		{
			name: "the template whole, its port name too", input: xgboostJobManifest,
			path: "spec.replicaSpecs[0].template.spec.containers[0].ports[0]", want: "{name: xgboostjob-port, containerPort: 9991}",
			warnings: warnings,
		},
		{
			name: "the run policy", input: xgboostJobManifest,
			path: "spec.runPolicy", want: "{cleanUpPolicy: Unfinished, backoffLimit: 3}", warnings: warnings,
		},
	})
}
