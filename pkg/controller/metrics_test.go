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

package controller

import (
	"strings"
	"testing"

	"k8s.io/component-base/metrics/testutil"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

func TestJobsCollector(t *testing.T) {
	f := newFixture(t,
		newTFJob("a").withReplicas("worker", 1).withStatus(v1beta1.TrainingJobStatus{Phase: v1beta1.JobRunning}).obj(),
		newTFJob("b").withReplicas("worker", 1).withStatus(v1beta1.TrainingJobStatus{Phase: v1beta1.JobRunning}).obj(),
		newTFJob("c").withReplicas("worker", 1).obj(), // not reconciled yet: Pending
		// Finished: not cached, so not counted.
		newPyTorchJob("d").withReplicas("master", 1).withStatus(v1beta1.TrainingJobStatus{Phase: v1beta1.JobFailed}).obj(),
		newPyTorchJob("e").withReplicas("master", 1).withStatus(v1beta1.TrainingJobStatus{Phase: v1beta1.JobPaused}).obj(),
	)
	want := `
# HELP training_controller_jobs [ALPHA] Unfinished jobs in the controller's cache, by kind and phase (a job not yet reconciled counts as Pending); finished jobs are not cached.
# TYPE training_controller_jobs gauge
training_controller_jobs{kind="GenericJob",phase="Paused"} 0
training_controller_jobs{kind="GenericJob",phase="Pending"} 0
training_controller_jobs{kind="GenericJob",phase="Resuming"} 0
training_controller_jobs{kind="GenericJob",phase="Running"} 0
training_controller_jobs{kind="GenericJob",phase="Unknown"} 0
training_controller_jobs{kind="MPIJob",phase="Paused"} 0
training_controller_jobs{kind="MPIJob",phase="Pending"} 0
training_controller_jobs{kind="MPIJob",phase="Resuming"} 0
training_controller_jobs{kind="MPIJob",phase="Running"} 0
training_controller_jobs{kind="MPIJob",phase="Unknown"} 0
training_controller_jobs{kind="PyTorchTrainingJob",phase="Paused"} 1
training_controller_jobs{kind="PyTorchTrainingJob",phase="Pending"} 0
training_controller_jobs{kind="PyTorchTrainingJob",phase="Resuming"} 0
training_controller_jobs{kind="PyTorchTrainingJob",phase="Running"} 0
training_controller_jobs{kind="PyTorchTrainingJob",phase="Unknown"} 0
training_controller_jobs{kind="TensorFlowTrainingJob",phase="Paused"} 0
training_controller_jobs{kind="TensorFlowTrainingJob",phase="Pending"} 1
training_controller_jobs{kind="TensorFlowTrainingJob",phase="Resuming"} 0
training_controller_jobs{kind="TensorFlowTrainingJob",phase="Running"} 2
training_controller_jobs{kind="TensorFlowTrainingJob",phase="Unknown"} 0
training_controller_jobs{kind="XGBoostTrainingJob",phase="Paused"} 0
training_controller_jobs{kind="XGBoostTrainingJob",phase="Pending"} 0
training_controller_jobs{kind="XGBoostTrainingJob",phase="Resuming"} 0
training_controller_jobs{kind="XGBoostTrainingJob",phase="Running"} 0
training_controller_jobs{kind="XGBoostTrainingJob",phase="Unknown"} 0
`
	if err := testutil.CustomCollectAndCompare(f.c.JobsCollector(), strings.NewReader(want), "training_controller_jobs"); err != nil {
		t.Fatal(err)
	}
}
