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
	"strings"
	"testing"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

func TestConvertStream(t *testing.T) {
	cases := []struct {
		name  string
		input string
		want  []string // kind and name of each converted job
	}{
		{
			name:  "YAML documents, empty ones skipped",
			input: "# a comment only\n---\n" + tfJobManifest + "---\n---\n\n---\n" + pyTorchJobManifest + "---\n",
			want:  []string{"TensorFlowTrainingJob mnist", "PyTorchTrainingJob resnet"},
		},
		{
			name: "JSON objects one after another",
			// As indented by a JSON tool that uses tabs.
			input: "{\n\t\"apiVersion\": \"kubeflow.org/v1\",\n\t\"kind\": \"TFJob\",\n\t\"metadata\": {\"name\": \"a\"},\n" +
				`	"spec": {"tfReplicaSpecs": {"Worker": {"template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}}}}` + "\n}\n" +
				`{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "b"}, "spec": {"pytorchReplicaSpecs": {"Master": {"template": {"spec": {"containers": [{"name": "pytorch", "image": "torch"}]}}}}}}`,
			want: []string{"TensorFlowTrainingJob a", "PyTorchTrainingJob b"},
		},
		{
			name:  "a JSON object, then YAML",
			input: `{"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "a"}, "spec": {"tfReplicaSpecs": {"Worker": {"template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}}}}}` + "\n---\n" + pyTorchJobManifest,
			want:  []string{"TensorFlowTrainingJob a", "PyTorchTrainingJob resnet"},
		},
		{name: "nothing", input: "", want: nil},
		{name: "only comments", input: "# nothing here\n---\n# nor here\n", want: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Convert(strings.NewReader(tc.input))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range out {
				got = append(got, jobOf(c))
				if gvk := c.Object.GetObjectKind().GroupVersionKind(); gvk.GroupVersion() != v1beta1.SchemeGroupVersion {
					t.Errorf("%s: apiVersion %q, want %q", jobOf(c), gvk.GroupVersion(), v1beta1.SchemeGroupVersion)
				}
				expectAccepted(t, c.Object)
			}
			if strings.Join(got, "; ") != strings.Join(tc.want, "; ") {
				t.Errorf("converted %q, want %q", got, tc.want)
			}
		})
	}
}

func TestConvertObjectTypes(t *testing.T) {
	for input, want := range map[string]string{
		tfJobManifest:      "*v1beta1.TensorFlowTrainingJob",
		pyTorchJobManifest: "*v1beta1.PyTorchTrainingJob",
	} {
		c := convertOne(t, input)
		switch c.Object.(type) {
		case *v1beta1.TensorFlowTrainingJob, *v1beta1.PyTorchTrainingJob:
		default:
			t.Errorf("converted into %T, want %s", c.Object, want)
		}
	}
}

func TestConvertErrors(t *testing.T) {
	service := "apiVersion: v1\nkind: Service\nmetadata: {name: etcd}\nspec: {ports: [{port: 2379}]}\n"
	runErrorCases(t, []errorCase{
		{
			name:  "another kind after a job",
			input: tfJobManifest + "---\n" + service,
			err:   `document 1: kind "Service" (apiVersion "v1") named "etcd" is not a kubeflow.org/v1 TFJob, PyTorchJob, XGBoostJob or MPIJob, nor a kubeflow.org/v2beta1 MPIJob`,
		},
		{
			name:  "documents with only comments are not counted",
			input: "# jobs\n---\n" + tfJobManifest + "---\n# the store\n---\n" + service,
			err:   `document 1: kind "Service" (apiVersion "v1") named "etcd" is not a kubeflow.org/v1 TFJob, PyTorchJob, XGBoostJob or MPIJob, nor a kubeflow.org/v2beta1 MPIJob`,
		},
		{
			name:  "an error in a job before a malformed document",
			input: manifest(t, tfJobManifest, `spec: {runPolicy: {backoffLimit: many}}`) + "---\n" + tfJobManifest + "--- !!map\n",
			err:   `document 0: spec.runPolicy.backoffLimit: must be a whole number, not the string "many"`,
		},
		{
			name:  "a JSON stream broken after two objects",
			input: `{"kind": "TFJob"} {"kind": "PyTorchJob"} {"kind": `,
			err:   `document 0: kind "TFJob" (apiVersion "") is not a kubeflow.org/v1 TFJob, PyTorchJob, XGBoostJob or MPIJob, nor a kubeflow.org/v2beta1 MPIJob`,
		},
		{
			name:  "another Kubeflow kind",
			input: "apiVersion: kubeflow.org/v1\nkind: PaddleJob\nmetadata: {name: horovod}\n",
			err:   `document 0: kind "PaddleJob" (apiVersion "kubeflow.org/v1") named "horovod" is not a kubeflow.org/v1 TFJob, PyTorchJob, XGBoostJob or MPIJob, nor a kubeflow.org/v2beta1 MPIJob`,
		},
		{
			name:  "an older Kubeflow version",
			input: strings.Replace(tfJobManifest, "kubeflow.org/v1", "kubeflow.org/v1beta2", 1),
			err:   `document 0: kind "TFJob" (apiVersion "kubeflow.org/v1beta2") named "mnist" is not a kubeflow.org/v1 TFJob, PyTorchJob, XGBoostJob or MPIJob, nor a kubeflow.org/v2beta1 MPIJob`,
		},
		{
			name:  "no kind",
			input: "metadata: {name: x}\n",
			err:   `document 0: kind "" (apiVersion "") named "x" is not a kubeflow.org/v1 TFJob, PyTorchJob, XGBoostJob or MPIJob, nor a kubeflow.org/v2beta1 MPIJob`,
		},
		{
			name:  "malformed YAML",
			input: tfJobManifest + "---\nkind: TFJob\nspec: [unclosed\n",
			err:   "document 1: error converting YAML to JSON: yaml: line 2: did not find expected ',' or ']'",
		},
		{
			name:  "malformed JSON",
			input: `{"kind": "TFJob", "spec": {]}`,
			err:   "document 0: error converting YAML to JSON: yaml: did not find expected node content",
		},
		{
			name:  "a field given twice",
			input: "apiVersion: kubeflow.org/v1\nkind: TFJob\nkind: PyTorchJob\n",
			err:   `document 0: error converting YAML to JSON: yaml: unmarshal errors:` + "\n" + `  line 3: key "kind" already set in map`,
		},
		{
			name:  "a list, not an object",
			input: "- kind: TFJob\n",
			err:   "document 0: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type map[string]interface {}",
		},
		{
			name:  "a bad document separator ends the document before it",
			input: tfJobManifest + "--- !!map\n",
			err:   "document 0: invalid Yaml document separator: !!map",
		},
		{
			name:  "a bad document separator after a good document",
			input: tfJobManifest + "---\n" + pyTorchJobManifest + "--- !!map\n",
			err:   "document 1: invalid Yaml document separator: !!map",
		},
		{
			name:  "metadata not an object",
			input: manifest(t, tfJobManifest, "metadata: mnist"),
			err:   `document 0: metadata: must be an object, not the string "mnist"`,
		},
		{
			name:  "a label not a string",
			input: manifest(t, tfJobManifest, "metadata: {labels: {tier: 1}}"),
			err:   `document 0: metadata.labels[tier]: must be a string, not the number 1`,
		},
		{
			name:  "spec not an object",
			input: manifest(t, tfJobManifest, "spec: [1]"),
			err:   `document 0: spec: must be an object, not a list`,
		},
	})
}

func TestMetadata(t *testing.T) {
	runFieldCases(t, []fieldCase{
		{
			name: "name, namespace, labels and annotations",
			input: manifest(t, tfJobManifest,
				`metadata: {labels: {team: vision, kueue.x-k8s.io/queue-name: gpu}, annotations: {owner: alice}}`),
			path: "metadata",
			want: `{name: mnist, namespace: team-a, labels: {team: vision, kueue.x-k8s.io/queue-name: gpu}, annotations: {owner: alice}}`,
		},
		{
			name:  "generateName",
			input: manifest(t, tfJobManifest, `metadata: {name: null, generateName: mnist-}`),
			path:  "metadata",
			want:  `{generateName: mnist-, namespace: team-a}`,
		},
		{
			name: "what the server set is dropped silently",
			input: manifest(t, tfJobManifest, `metadata: {uid: 8f0c7d3e-0d5c-4e0e-9a57-6d1c4b8c1a11, resourceVersion: "4711",
				creationTimestamp: "2024-05-01T10:00:00Z", generation: 3, selfLink: /apis/kubeflow.org/v1/tfjobs/mnist,
				managedFields: [{manager: kubectl, operation: Update}]}`),
			path: "metadata",
			want: `{name: mnist, namespace: team-a}`,
		},
		{
			name: "what kubectl apply recorded is dropped with a warning",
			input: manifest(t, tfJobManifest,
				`metadata: {annotations: {kubectl.kubernetes.io/last-applied-configuration: '{"kind":"TFJob"}'}}`),
			path:     "metadata",
			want:     `{name: mnist, namespace: team-a}`,
			warnings: []string{"metadata.annotations[kubectl.kubernetes.io/last-applied-configuration]: dropped: it records the Kubeflow manifest kubectl last applied; applying the converted job records it anew"},
		},
		{
			name: "owner references and finalizers are dropped with a warning",
			input: manifest(t, tfJobManifest, `metadata: {finalizers: [example.com/keep],
				ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: owner, uid: 8f0c7d3e-0d5c-4e0e-9a57-6d1c4b8c1a11}]}`),
			path: "metadata",
			want: `{name: mnist, namespace: team-a}`,
			warnings: []string{
				"metadata.ownerReferences: not carried over: owner references name their owners by UID; set them again on the new job if it is to be deleted with its owner",
				"metadata.finalizers: not carried over: the finalizers belong to the controllers of the Kubeflow job",
			},
		},
		{
			name:     "an unknown metadata field",
			input:    manifest(t, tfJobManifest, `metadata: {labelz: {team: vision}}`),
			path:     "metadata",
			want:     `{name: mnist, namespace: team-a}`,
			warnings: []string{"metadata.labelz: unknown field, not converted"},
		},
	})
}

func TestStatusAndUnknownFields(t *testing.T) {
	status := `status: {conditions: [{type: Running, status: "True"}], replicaStatuses: {Worker: {active: 2}}, startTime: "2024-05-01T10:00:00Z"}`
	runFieldCases(t, []fieldCase{
		{
			name:     "a TFJob's status is dropped with a warning",
			input:    manifest(t, tfJobManifest, status),
			path:     "status.phase",
			want:     `null`,
			warnings: []string{"status: dropped: the status of a TensorStack job is written by its controller once the job runs"},
		},
		{
			name:     "a PyTorchJob's status is dropped with a warning",
			input:    manifest(t, pyTorchJobManifest, status),
			path:     "status.phase",
			want:     `null`,
			warnings: []string{"status: dropped: the status of a TensorStack job is written by its controller once the job runs"},
		},
		{
			name:  "an empty status carries nothing",
			input: manifest(t, tfJobManifest, `status: {}`),
			path:  "status.phase",
			want:  `null`,
		},
		{
			name:  "unknown fields anywhere outside the pod templates",
			input: manifest(t, tfJobManifest, `{extra: 1, spec: {tfReplicaSpecs: {Worker: {minReplicas: 1}}, runPolicy: {retries: 2, schedulingPolicy: {gang: true}}, tfConfig: {}}}`),
			path:  "spec.replicaSpecs[*].type",
			want:  `[worker]`,
			warnings: []string{
				"spec.tfReplicaSpecs.Worker.minReplicas: unknown field, not converted",
				"spec.runPolicy.schedulingPolicy.gang: unknown field, not converted",
				"spec.runPolicy.retries: unknown field, not converted",
				"spec.tfConfig: unknown field, not converted",
				"extra: unknown field, not converted",
			},
		},
		{
			name:  "unknown PyTorchJob fields",
			input: manifest(t, pyTorchJobManifest, `{spec: {elasticPolicy: {minReplicas: 1, maxReplicas: 3, scaleDown: true}, torchrun: true}}`),
			path:  "spec.elastic",
			want:  `{enabled: true, minReplicas: 1, maxReplicas: 3}`,
			warnings: []string{
				"spec.elasticPolicy.scaleDown: unknown field, not converted",
				"spec.torchrun: unknown field, not converted",
			},
		},
		{
			name:  "null fields carry nothing",
			input: manifest(t, tfJobManifest, `{spec: {successPolicy: null}}`) + "extra: null\n",
			path:  "spec.replicaSpecs[*].type",
			want:  `[worker]`,
		},
	})
}
