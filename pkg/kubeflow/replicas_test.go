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
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// podTemplate uses much of what a pod template can say.
const podTemplate = `
metadata:
  labels: {app: mnist}
  annotations: {sidecar.istio.io/inject: "false"}
spec:
  restartPolicy: Never
  nodeSelector: {gpu: a100}
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: mnist}}, {name: shm, emptyDir: {medium: Memory, sizeLimit: 1Gi}}]
  initContainers: [{name: fetch, image: "busybox:1.36", command: [sh, -c, "cp -r /src /data"]}]
  containers:
  - name: CONTAINER
    image: "train:2"
    command: [python, train.py]
    args: [--epochs, "3"]
    ports: [{name: PORT, containerPort: 2222}]
    env: [{name: LOGLEVEL, value: DEBUG}, {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
    resources: {limits: {nvidia.com/gpu: 1, memory: 8Gi}, requests: {cpu: 4}}
    volumeMounts: [{name: data, mountPath: /data}, {name: shm, mountPath: /dev/shm}]
  - {name: logger, image: "busybox:1.36"}
`

// TestPodTemplateCarriedOverWhole: the template of every replica is the
// input's, decoded as a PodTemplateSpec on its own.
func TestPodTemplateCarriedOverWhole(t *testing.T) {
	cases := []struct {
		base, specsField, container, port string
	}{
		{tfJobManifest, "tfReplicaSpecs", "tensorflow", "tfjob-port"},
		{pyTorchJobManifest, "pytorchReplicaSpecs", "pytorch", "pytorchjob-port"},
	}
	for _, tc := range cases {
		t.Run(tc.specsField, func(t *testing.T) {
			templateYAML := strings.NewReplacer("CONTAINER", tc.container, "PORT", tc.port).Replace(podTemplate)
			var want corev1.PodTemplateSpec
			if err := yaml.UnmarshalStrict([]byte(templateYAML), &want); err != nil {
				t.Fatal(err)
			}
			templateJSON, err := yaml.YAMLToJSON([]byte(templateYAML))
			if err != nil {
				t.Fatal(err)
			}
			converted := convertOne(t, manifest(t, tc.base, `{"spec": {"`+tc.specsField+`": {"Worker": {"template": `+string(templateJSON)+`}}}}`))
			expectWarnings(t, converted.Warnings, nil)
			expectAccepted(t, converted.Object)

			for _, replica := range converted.Object.(v1beta1.TrainingJob).CommonSpec().ReplicaSpecs {
				if replica.Type != v1beta1.ReplicaTypeWorker {
					continue
				}
				if !apiequality.Semantic.DeepEqual(want, replica.Template) {
					got, _ := json.Marshal(replica.Template)
					wantJSON, _ := json.Marshal(want)
					t.Errorf("template differs:\n%s", cmp.Diff(string(wantJSON), string(got)))
				}
				return
			}
			t.Error("no worker replica")
		})
	}
}
