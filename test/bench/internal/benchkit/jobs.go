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

package benchkit

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// TFJobResource is Kubeflow's TFJob custom resource (training-operator
// v1.9.4, manifests/base/crds/kubeflow.org_tfjobs.yaml).
var TFJobResource = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "tfjobs"}

// OurResource is our TensorFlowTrainingJob.
var OurResource = v1beta1.SchemeGroupVersion.WithResource(v1beta1.TensorFlowTrainingJobResource)

// ReplicaType is one replica type of the benchmark jobs: our name and
// Kubeflow's (the keys of spec.tfReplicaSpecs).
type ReplicaType struct {
	Ours, Kubeflow string
	Replicas       int32
}

// Shape is the shape of every benchmark job: chief 1, ps 1, worker 3.
var Shape = []ReplicaType{
	{Ours: "chief", Kubeflow: "Chief", Replicas: 1},
	{Ours: "ps", Kubeflow: "PS", Replicas: 1},
	{Ours: "worker", Kubeflow: "Worker", Replicas: 3},
}

// PodsPerJob is the number of pods of a job of Shape.
func PodsPerJob() int {
	n := 0
	for _, r := range Shape {
		n += int(r.Replicas)
	}
	return n
}

// JobOptions say how the benchmark jobs behave.
type JobOptions struct {
	// Paused creates our jobs with spec.runMode.pause.enabled and Kubeflow's
	// with spec.runPolicy.suspend, so that no pod is made.
	Paused bool
	// ExitAfter, when set, makes every pod exit 0 that long after it started
	// (the simulated nodes' kwok.tensorstack.dev annotations).
	ExitAfter string
}

func builder(name string, o JobOptions) *framework.JobBuilder {
	b := framework.NewTFJob(name)
	for _, r := range Shape {
		b.WithReplicas(r.Ours, r.Replicas)
	}
	if o.Paused {
		b.Paused()
	}
	if o.ExitAfter != "" {
		b.ExitCode(0).RunFor(o.ExitAfter)
	}
	return b
}

// OurJob is a TensorFlowTrainingJob of Shape.
func OurJob(namespace, name string, o JobOptions) *v1beta1.TensorFlowTrainingJob {
	return builder(name, o).Build(namespace).(*v1beta1.TensorFlowTrainingJob)
}

// KubeflowJob is the TFJob of the same shape, with the very same pod
// templates as OurJob's.
func KubeflowJob(namespace, name string, o JobOptions) (*unstructured.Unstructured, error) {
	ours := OurJob(namespace, name, o)
	specs := map[string]interface{}{}
	for i, r := range Shape {
		s := ours.Spec.ReplicaSpecs[i]
		if string(s.Type) != r.Ours {
			return nil, fmt.Errorf("replica %d is %s, want %s", i, s.Type, r.Ours)
		}
		template, err := UnstructuredTemplate(s.Template)
		if err != nil {
			return nil, err
		}
		specs[r.Kubeflow] = map[string]interface{}{
			"replicas": int64(r.Replicas),
			"template": template,
		}
	}
	runPolicy := map[string]interface{}{}
	if o.Paused {
		runPolicy["suspend"] = true
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": TFJobResource.GroupVersion().String(),
		"kind":       "TFJob",
		"metadata":   map[string]interface{}{"name": name, "namespace": namespace},
		"spec": map[string]interface{}{
			"runPolicy":      runPolicy,
			"tfReplicaSpecs": specs,
		},
	}}, nil
}

// UnstructuredTemplate is a pod template as a Kubeflow job's replica spec
// holds it in an unstructured object.
func UnstructuredTemplate(t corev1.PodTemplateSpec) (map[string]interface{}, error) {
	data, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	var template map[string]interface{}
	if err := json.Unmarshal(data, &template); err != nil {
		return nil, err
	}
	// A typed ObjectMeta always carries creationTimestamp: null.
	if md, ok := template["metadata"].(map[string]interface{}); ok {
		delete(md, "creationTimestamp")
	}
	return template, nil
}
