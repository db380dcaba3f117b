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
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/kubeflow/kubeflowtest"
)

// exampleWarnings are the warnings of the examples that give any.
var exampleWarnings = map[string][]string{
	"xgboost/smoke-dist/xgboostjob_v1alpha1_rabit_test.yaml#0": {
		"spec.xgbReplicaSpecs.Master.template.apiVersion: dropped: a pod template has no apiVersion or kind (Kubernetes prunes them from a Kubeflow job)",
		"spec.xgbReplicaSpecs.Master.template.kind: dropped: a pod template has no apiVersion or kind (Kubernetes prunes them from a Kubeflow job)",
		"spec.xgbReplicaSpecs.Worker.template.apiVersion: dropped: a pod template has no apiVersion or kind (Kubernetes prunes them from a Kubeflow job)",
		"spec.xgbReplicaSpecs.Worker.template.kind: dropped: a pod template has no apiVersion or kind (Kubernetes prunes them from a Kubeflow job)",
	},
	"pytorch/elastic/echo/echo.yaml#0": {
		"spec.nprocPerNode: absent, so Kubeflow hands torchrun auto, which starts one process per CPU where there is no GPU; ours starts a fixed number of processes or one per GPU, and procPerNode is left at its default, 1",
	},
	"pytorch/elastic/imagenet/imagenet.yaml#0": {
		"spec.elasticPolicy.metrics: not carried over: ours does not scale a job by metrics (Kubeflow creates a HorizontalPodAutoscaler for them)",
		"spec.nprocPerNode: absent, so Kubeflow hands torchrun auto, which starts one process per CPU where there is no GPU; ours starts a fixed number of processes or one per GPU, and procPerNode is left at its default, 1",
	},
}

// TestKubeflowExamples converts Kubeflow's own example jobs, those of
// training-operator and of mpi-operator: each must be accepted by our
// server, give the expected warnings only, and keep the replicas of each
// type, their images and their commands.
func TestKubeflowExamples(t *testing.T) {
	examples := kubeflowtest.AllExamples(t)
	for _, example := range examples {
		t.Run(example.Name(), func(t *testing.T) {
			input := runtime.DeepCopyJSON(example.Object)
			converted, err := ConvertObject(example.Object)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(input, example.Object); diff != "" {
				t.Errorf("ConvertObject changed its input (-before +after):\n%s", diff)
			}
			expectWarnings(t, converted.Warnings, exampleWarnings[example.Name()])
			expectAccepted(t, converted.Object)
			compareReplicas(t, example, converted.Object)
		})
	}
}

// compareReplicas checks that every Kubeflow replica type has its
// counterpart, with as many replicas, the same containers and images, and
// the same command lines, torchrun taken off where ours starts it.
func compareReplicas(t *testing.T, example kubeflowtest.Example, obj runtime.Object) {
	t.Helper()
	var replicas []v1beta1.ReplicaSpec
	var torchrun *v1beta1.TorchrunConfig
	specsField := "tfReplicaSpecs"
	switch job := obj.(type) {
	case *v1beta1.TensorFlowTrainingJob:
		replicas = job.Spec.ReplicaSpecs
	case *v1beta1.PyTorchTrainingJob:
		replicas, torchrun, specsField = job.Spec.ReplicaSpecs, job.Spec.TorchrunConfig, "pytorchReplicaSpecs"
	case *v1beta1.XGBoostTrainingJob:
		replicas, specsField = job.Spec.ReplicaSpecs, "xgbReplicaSpecs"
	case *v1beta1.MPIJob:
		replicas, specsField = job.Spec.ReplicaSpecs, "mpiReplicaSpecs"
	}
	ours := map[v1beta1.ReplicaType]v1beta1.ReplicaSpec{}
	for _, r := range replicas {
		ours[r.Type] = r
	}

	kubeflowReplicas := example.Object["spec"].(map[string]interface{})[specsField].(map[string]interface{})
	if len(ours) != len(kubeflowReplicas) {
		t.Errorf("%d replica types, want %d", len(ours), len(kubeflowReplicas))
	}
	for kubeflowType, value := range kubeflowReplicas {
		typ := v1beta1.ReplicaType(strings.ToLower(kubeflowType))
		if example.Kind == "TFJob" && typ == "master" {
			typ = v1beta1.ReplicaTypeChief
		}
		replica, found := ours[typ]
		if !found {
			t.Errorf("%s: no replica type %s", kubeflowType, typ)
			continue
		}
		kubeflowReplica := value.(map[string]interface{})
		wantCount, gotCount := int64(1), int64(1)
		if n, given := kubeflowReplica["replicas"]; given {
			wantCount = n.(int64)
		}
		if replica.Replicas != nil {
			gotCount = int64(*replica.Replicas)
		}
		if gotCount != wantCount {
			t.Errorf("%s: %d replicas, want %d", kubeflowType, gotCount, wantCount)
		}

		template := kubeflowReplica["template"].(map[string]interface{})
		kubeflowContainers := template["spec"].(map[string]interface{})["containers"].([]interface{})
		containers := replica.Template.Spec.Containers
		if len(containers) != len(kubeflowContainers) {
			t.Errorf("%s: %d containers, want %d", kubeflowType, len(containers), len(kubeflowContainers))
			continue
		}
		for i, value := range kubeflowContainers {
			kubeflowContainer := value.(map[string]interface{})
			c := containers[i]
			if c.Name != kubeflowContainer["name"] || c.Image != kubeflowContainer["image"] {
				t.Errorf("%s container %d: %s with %s, want %v with %v", kubeflowType, i, c.Name, c.Image, kubeflowContainer["name"], kubeflowContainer["image"])
			}
			command, args := words(kubeflowContainer["command"]), words(kubeflowContainer["args"])
			if torchrun != nil && torchrun.Enabled && c.Name == v1beta1.PyTorchContainerName {
				compareTorchrunCommand(t, kubeflowType, append(command, args...), &c, torchrun)
			} else if !slices.Equal(c.Command, command) || !slices.Equal(c.Args, args) {
				t.Errorf("%s container %d: command %q, args %q; want %q, %q", kubeflowType, i, c.Command, c.Args, command, args)
			}
		}
	}
}

var pythonWord = regexp.MustCompile(`^python[0-9.]*$`)

// compareTorchrunCommand checks a command line that Kubeflow's container
// started torchrun with: ours runs the same program, and the options it gave
// torchrun are the last of torchrunConfig's extra options.
func compareTorchrunCommand(t *testing.T, replicaType string, kubeflowLine []string, c *corev1.Container, torchrun *v1beta1.TorchrunConfig) {
	t.Helper()
	program := append(slices.Clone(c.Command), c.Args...)
	if len(program) > 0 && pythonWord.MatchString(path.Base(program[0])) {
		program = program[1:]
	}
	for len(program) > 0 && program[0] == "-u" {
		program = program[1:]
	}
	if len(program) == 0 || len(program) > len(kubeflowLine) || !slices.Equal(kubeflowLine[len(kubeflowLine)-len(program):], program) {
		t.Errorf("%s: runs %q, which does not end Kubeflow's command line %q", replicaType, program, kubeflowLine)
		return
	}
	launcher := kubeflowLine[:len(kubeflowLine)-len(program)]
	var options []string
	switch {
	case len(launcher) >= 1 && launcher[0] == "torchrun":
		options = launcher[1:]
	case len(launcher) >= 3 && pythonWord.MatchString(launcher[0]) && launcher[1] == "-m" && launcher[2] == "torch.distributed.run":
		options = launcher[3:]
	default:
		t.Errorf("%s: Kubeflow's command line %q does not start torchrun before the program %q", replicaType, kubeflowLine, program)
		return
	}
	extra := torchrun.ExtraOptions
	if len(options) > len(extra) || !slices.Equal(extra[len(extra)-len(options):], options) {
		t.Errorf("%s: extra options %q do not end with the options Kubeflow's command line gave torchrun, %q", replicaType, extra, options)
	}
}

// words reads a command or args of a generic container.
func words(value interface{}) []string {
	list, _ := value.([]interface{})
	var out []string
	for _, w := range list {
		out = append(out, w.(string))
	}
	return out
}
