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
	"fmt"
	"strings"
	"testing"

	"k8s.io/component-base/metrics/testutil"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/jobclient"
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
	// Every kind the controller runs has a series of every cached phase,
	// zero where it has no job; the fixture's jobs count where they are.
	counts := map[string]int{
		`kind="TensorFlowTrainingJob",phase="Running"`: 2,
		`kind="TensorFlowTrainingJob",phase="Pending"`: 1,
		`kind="PyTorchTrainingJob",phase="Paused"`:     1,
	}
	want := "\n# HELP training_controller_jobs [ALPHA] Unfinished jobs in the controller's cache, by kind and phase " +
		"(a job not yet reconciled counts as Pending); finished jobs are not cached.\n# TYPE training_controller_jobs gauge\n"
	for _, k := range jobclient.Kinds {
		for _, p := range []string{"Paused", "Pending", "Resuming", "Running", "Unknown"} {
			labels := fmt.Sprintf("kind=%q,phase=%q", k.Name, p)
			want += fmt.Sprintf("training_controller_jobs{%s} %d\n", labels, counts[labels])
		}
	}
	if err := testutil.CustomCollectAndCompare(f.c.JobsCollector(), strings.NewReader(want), "training_controller_jobs"); err != nil {
		t.Fatal(err)
	}
}
