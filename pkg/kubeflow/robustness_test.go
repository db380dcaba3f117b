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
	"bytes"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// brokenManifest is a manifest to break, with the number of places in it.
type brokenManifest struct {
	manifest string
	places   int
}

// everyField is a PyTorchJob and a TFJob that use every field the converter
// reads, for the robustness test to break.
func everyField(t *testing.T) []brokenManifest {
	everything := `
metadata: {labels: {a: b}, annotations: {c: d}, generateName: x-, finalizers: [f], ownerReferences: [{name: o}]}
status: {conditions: [{type: Running}]}
spec:
  cleanPodPolicy: All
  backoffLimit: 1
  ttlSecondsAfterFinished: 1
  activeDeadlineSeconds: 1
  runPolicy:
    cleanPodPolicy: Running
    backoffLimit: 2
    ttlSecondsAfterFinished: 2
    activeDeadlineSeconds: 2
    suspend: true
    managedBy: m
    schedulingPolicy: {queue: q, minAvailable: 1, priorityClass: p, minResources: {cpu: 1}, scheduleTimeoutSeconds: 1}
`
	pyTorch := `
spec:
  nprocPerNode: "2"
  elasticPolicy: {minReplicas: 1, maxReplicas: 2, rdzvBackend: c10d, rdzvPort: 1, rdzvHost: h, rdzvId: i,
    rdzvConf: [{key: k, value: v}], standalone: true, nProcPerNode: 1, maxRestarts: 1, metrics: [{type: Resource}]}
  pytorchReplicaSpecs:
    Master: {template: {spec: {containers: [{name: pytorch, image: torch, command: [torchrun, --nnodes, "2", train.py], args: [--x]}]}}}
    Worker: {template: {spec: {containers: [{name: pytorch, image: torch, command: [torchrun, --nnodes, "2", train.py], args: [--x]}]}}}
`
	tensorFlow := `spec: {successPolicy: AllWorkers, enableDynamicWorker: true}`
	return []brokenManifest{
		{manifest(t, pyTorchJobManifest, everything, pyTorch), 87},
		{manifest(t, tfJobManifest, everything, tensorFlow), 52},
	}
}

// wrongValues stand in for any field.
var wrongValues = []interface{}{nil, "x", int64(-1), float64(0.5), true, []interface{}{int64(1)}, map[string]interface{}{"x": int64(1)}}

// TestConvertObjectNeverPanics replaces every field and list element of a
// manifest, one at a time, with values of every JSON type: the conversion
// may fail, but only with an error.
func TestConvertObjectNeverPanics(t *testing.T) {
	for _, input := range everyField(t) {
		var doc map[string]interface{}
		if err := utilyaml.Unmarshal([]byte(input.manifest), &doc); err != nil {
			t.Fatal(err)
		}
		if c, err := ConvertObject(doc); err != nil {
			t.Fatalf("the unbroken manifest: %v", err)
		} else {
			expectAccepted(t, c.Object)
		}
		tried := 0
		forEachPlace(doc, "", func(place string, set func(interface{})) {
			for _, wrong := range wrongValues {
				broken := runtime.DeepCopyJSON(doc)
				// Set the value in the copy: find the same place again.
				forEachPlace(broken, "", func(p string, setInCopy func(interface{})) {
					if p == place {
						setInCopy(wrong)
					}
				})
				tried++
				func() {
					defer func() {
						if r := recover(); r != nil {
							t.Errorf("%s = %#v: panic: %v", place, wrong, r)
						}
					}()
					_, _ = ConvertObject(broken)
				}()
			}
		})
		if places := tried / len(wrongValues); places != input.places {
			t.Errorf("%d places tried, want %d", places, input.places)
		}
	}
}

// forEachPlace calls visit with the path and a setter of every value below
// value, depth first.
func forEachPlace(value interface{}, path string, visit func(path string, set func(interface{}))) {
	switch v := value.(type) {
	case map[string]interface{}:
		for key, child := range v {
			childPath := path + "." + key
			visit(childPath, func(x interface{}) { v[key] = x })
			forEachPlace(child, childPath, visit)
		}
	case []interface{}:
		for i, child := range v {
			childPath := fmt.Sprintf("%s[%d]", path, i)
			visit(childPath, func(x interface{}) { v[i] = x })
			forEachPlace(child, childPath, visit)
		}
	}
}

// FuzzConvert feeds Convert arbitrary bytes: it returns jobs of our kinds or
// an error, and never panics.
func FuzzConvert(f *testing.F) {
	f.Add([]byte(tfJobManifest))
	f.Add([]byte(pyTorchJobManifest + "---\n" + tfJobManifest))
	f.Add([]byte(`{"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "spec": {"tfReplicaSpecs": {"Worker": {}}}}`))
	f.Add([]byte("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nspec: {elasticPolicy: {rdzvConf: [1]}}\n"))
	f.Add([]byte("--- !!map\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := Convert(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, c := range out {
			switch c.Object.(type) {
			case *v1beta1.TensorFlowTrainingJob, *v1beta1.PyTorchTrainingJob:
			default:
				t.Errorf("converted into %T", c.Object)
			}
			if c.Object.GetObjectKind().GroupVersionKind().GroupVersion() != v1beta1.SchemeGroupVersion {
				t.Errorf("converted into %v", c.Object.GetObjectKind().GroupVersionKind())
			}
		}
	})
}
