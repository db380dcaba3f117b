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

package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/pkg/apis/batch"
)

func TestControllerEnvIsRefused(t *testing.T) {
	withEnv := func(names ...string) specMod {
		return func(s *batch.TrainingJobSpec) {
			pod := workerPod(s)
			for _, name := range names {
				pod.Containers[0].Env = append(pod.Containers[0].Env, corev1.EnvVar{Name: name, Value: "1"})
			}
		}
	}
	const envPath = "spec.replicaSpecs[1].template.spec.containers[0].env"
	// The kind's own variables, the job's, and another kind's, which is
	// fine: TF_CONFIG means nothing to PyTorch.
	expectErrors(t, ValidatePyTorchTrainingJob(ptJob(onPT(withEnv("DATA", "RANK", batch.EnvJobName, "TF_CONFIG")))),
		invalid(envPath+"[1].name"), invalid(envPath+"[2].name"))
	expectErrors(t, ValidateTensorFlowTrainingJob(tfJob(onTF(withEnv("TF_CONFIG", "RANK")))),
		invalid("spec.replicaSpecs[2].template.spec.containers[0].env[0].name"))
	// PYTHONUNBUFFERED is a default, which a template may set.
	expectErrors(t, ValidatePyTorchTrainingJob(ptJob(onPT(withEnv(batch.EnvPythonUnbuffered)))))
	// Init containers get the variables too.
	initEnv := ptJob(func(j *batch.PyTorchTrainingJob) {
		pod := workerPod(&j.Spec.TrainingJobSpec)
		pod.InitContainers = []corev1.Container{container("fetch")}
		pod.InitContainers[0].Env = []corev1.EnvVar{{Name: "MASTER_ADDR", Value: "elsewhere"}}
	})
	expectErrors(t, ValidatePyTorchTrainingJob(initEnv), invalid("spec.replicaSpecs[1].template.spec.initContainers[0].env[0].name"))

	// A job stored before the rule keeps its variable through updates, and
	// may not add another.
	old := ptJob(onPT(withEnv("RANK")))
	expectErrors(t, ValidatePyTorchTrainingJobUpdate(ptJob(onPT(withEnv("RANK"))), old))
	expectErrors(t, ValidatePyTorchTrainingJobUpdate(ptJob(onPT(withEnv("RANK", "WORLD_SIZE"))), old), invalid(envPath+"[1].name"))
	expectErrors(t, ValidatePyTorchTrainingJobUpdate(ptJob(onPT(withEnv("WORLD_SIZE"))), ptJob()), invalid(envPath+"[0].name"))
}
