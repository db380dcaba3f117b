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

package integration

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/integration/framework"
)

// searchOf is a search over a learning rate whose PyTorch trials take it as
// an argument.
func searchOf(name string) *v1beta1.TuningJob {
	specs := replicaSpecs(v1beta1.PyTorchContainerName, []v1beta1.ReplicaType{v1beta1.ReplicaTypeMaster})
	specs[0].Template.Spec.Containers[0].Args = []string{"--lr", "${param.lr}"}
	return &v1beta1.TuningJob{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1beta1.TuningJobSpec{
			TrialTemplate: v1beta1.TrainingJobTemplate{Pytorch: &v1beta1.PyTorchTrainingJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{ReplicaSpecs: specs}}},
			Parameters:    []v1beta1.TuningParameter{{Name: "lr", Type: v1beta1.ParameterDouble, Min: "0.001", Max: "0.1", LogScale: true}},
			Objective:     v1beta1.TuningObjective{Metric: "loss", Direction: v1beta1.Minimize},
			EarlyStopping: &v1beta1.EarlyStopping{ASHA: &v1beta1.ASHA{MinResource: 10}},
			MaxTrials:     8,
		},
	}
}

// TestTuningJobs stores a search defaulted and without the status sent
// along, shows it as a table, keeps its status and spec apart, pauses and
// resumes it, and refuses what may not change.
func TestTuningJobs(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	searches := s.Client.BatchV1beta1().TuningJobs("team-a")

	sent := searchOf("lr")
	sent.Status.BestValue = "0"
	created, err := searches.Create(ctx, sent, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	spec := created.Spec
	if created.Generation != 1 || created.Status.BestValue != "" {
		t.Errorf("created: generation %d, status %+v", created.Generation, created.Status)
	}
	if spec.Algorithm.Name != v1beta1.AlgorithmRandom || spec.ParallelTrials != 1 || ptr.Deref(spec.MaxFailedTrials, -1) != 3 ||
		spec.Objective.TrialValue != v1beta1.TrialValueLast || spec.EarlyStopping.ASHA.ReductionFactor != 3 ||
		spec.EarlyStopping.ASHA.Rungs != 3 || spec.EarlyStopping.ASHA.Resource != v1beta1.ResourceSteps {
		t.Errorf("defaults: %+v", spec)
	}
	// The template is defaulted as its trials will be, and checked so.
	if spec.TrialTemplate.Pytorch.RunPolicy.BackoffLimit == nil {
		t.Errorf("the trial template was not defaulted: %+v", spec.TrialTemplate.Pytorch.RunPolicy)
	}
	// Unless it names a runtime, whose values the defaults would take the
	// place of. An MPI template needs no field that defaults fill.
	mpi := searchOf("mpi")
	mpi.Spec.TrialTemplate = v1beta1.TrainingJobTemplate{MPI: &v1beta1.MPIJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{
		ReplicaSpecs: replicaSpecs("mpi", []v1beta1.ReplicaType{"launcher", "worker"})}}}
	if _, err := searches.Create(ctx, mpi, metav1.CreateOptions{}); err != nil {
		t.Errorf("an MPI trial template without the fields defaults fill: %v", err)
	}
	fromRuntime := searchOf("from-runtime")
	fromRuntime.Spec.TrialTemplate = v1beta1.TrainingJobTemplate{Pytorch: &v1beta1.PyTorchTrainingJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{
		RuntimeRef: &v1beta1.RuntimeRef{Name: "torch-distributed"}, Trainer: &v1beta1.Trainer{Args: []string{"--lr", "${param.lr}"}}}}}
	stored, err := searches.Create(ctx, fromRuntime, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a trial template naming a runtime: %v", err)
	}
	if rp := stored.Spec.TrialTemplate.Pytorch.RunPolicy; rp.BackoffLimit != nil || rp.CleanUpPolicy != "" {
		t.Errorf("a template that names a runtime was defaulted: %+v", rp)
	}

	// The status subresource writes the status alone; the main resource,
	// the spec alone.
	created.Status.BestTrial, created.Status.BestValue = "lr-0", "0.25"
	created.Spec.MaxTrials = 1
	withStatus, err := searches.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update status: %v", err)
	}
	if withStatus.Status.BestValue != "0.25" || withStatus.Spec.MaxTrials != 8 || withStatus.Generation != 1 {
		t.Errorf("after a status write: status %+v, maxTrials %d, generation %d", withStatus.Status, withStatus.Spec.MaxTrials, withStatus.Generation)
	}
	withStatus.Spec.MaxTrials = 12
	withStatus.Status.BestValue = "9"
	grown, err := searches.Update(ctx, withStatus, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update maxTrials: %v", err)
	}
	if grown.Spec.MaxTrials != 12 || grown.Status.BestValue != "0.25" || grown.Generation != 2 {
		t.Errorf("after a spec write: maxTrials %d, status %+v, generation %d", grown.Spec.MaxTrials, grown.Status, grown.Generation)
	}
	grown.Spec.Objective.Direction = v1beta1.Maximize
	if _, err := searches.Update(ctx, grown, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !hasCause(statusOf(err), "spec") {
		t.Errorf("changing the objective's direction: %v, want 422 on spec", err)
	}

	// Pause and resume, each a subresource.
	paused, err := searches.Pause(ctx, "lr", &v1beta1.PauseRequest{}, metav1.CreateOptions{})
	if err != nil || !paused.Spec.Suspend {
		t.Fatalf("pause: %v, suspend %v", err, paused.Spec.Suspend)
	}
	resumed, err := searches.Resume(ctx, "lr", &v1beta1.ResumeRequest{}, metav1.CreateOptions{})
	if err != nil || resumed.Spec.Suspend {
		t.Fatalf("resume: %v, suspend %v", err, resumed.Spec.Suspend)
	}
	resumed.Status.Conditions = []metav1.Condition{{Type: "Succeeded", Status: metav1.ConditionTrue, Reason: "TrialsSpent",
		LastTransitionTime: metav1.Now()}}
	if _, err := searches.UpdateStatus(ctx, resumed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := searches.Pause(ctx, "lr", &v1beta1.PauseRequest{}, metav1.CreateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("pausing an ended search: %v, want 409", err)
	}

	// kubectl get's table.
	table := &metav1.Table{}
	if err := restClient(t, s).Get().AbsPath("/apis/batch.tensorstack.dev/v1beta1/namespaces/team-a/tuningjobs").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Into(table); err != nil {
		t.Fatalf("get as a table: %v", err)
	}
	var columns []string
	for _, c := range table.ColumnDefinitions {
		columns = append(columns, c.Name)
	}
	if got := strings.Join(columns, ","); got != "Name,State,Best,Trials,Running,Paused,Succeeded,Failed,Age,Objective,Algorithm,Best-Trial" {
		t.Fatalf("columns %s", got)
	}
	var cells []any
	for _, row := range table.Rows {
		if row.Cells[0] == "lr" {
			cells = row.Cells
		}
	}
	if len(table.Rows) != 3 || cells == nil || cells[1] != "Succeeded" || cells[2] != "0.25" || cells[3] != "0/12" ||
		cells[9] != "minimize loss" || cells[10] != "random+asha" {
		t.Errorf("%d rows, the row of lr %v", len(table.Rows), cells)
	}
}

func statusOf(err error) metav1.Status {
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		return s.Status()
	}
	return metav1.Status{}
}

// TestHostileTuningJobs: every bad search is refused with a 4xx naming the
// field, and nothing is stored.
func TestHostileTuningJobs(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	searches := s.Client.BatchV1beta1().TuningJobs("team-a")
	for _, tt := range []struct {
		name  string
		mod   func(*v1beta1.TuningJob)
		field string
	}{
		{"no parameters", func(j *v1beta1.TuningJob) {
			j.Spec.Parameters = nil
			j.Spec.TrialTemplate.Pytorch.ReplicaSpecs[0].Template.Spec.Containers[0].Args = nil
		}, "spec.parameters"},
		{"min above max", func(j *v1beta1.TuningJob) { j.Spec.Parameters[0].Min = "1" }, "spec.parameters[0].max"},
		{"a categorical with no values", func(j *v1beta1.TuningJob) {
			j.Spec.Parameters = append(j.Spec.Parameters, v1beta1.TuningParameter{Name: "opt", Type: v1beta1.ParameterCategorical})
		}, "spec.parameters[1].values"},
		{"parallelTrials 0", func(j *v1beta1.TuningJob) { j.Spec.ParallelTrials = -1 }, "spec.parallelTrials"},
		{"maxTrials under parallelTrials", func(j *v1beta1.TuningJob) { j.Spec.ParallelTrials = 9 }, "spec.parallelTrials"},
		{"a placeholder naming no parameter", func(j *v1beta1.TuningJob) {
			j.Spec.TrialTemplate.Pytorch.ReplicaSpecs[0].Template.Spec.Containers[0].Args[1] = "${param.rate}"
		}, "spec.trialTemplate.pytorch.replicaSpecs[0].template.spec.containers[0].args[1]"},
		{"no objective metric", func(j *v1beta1.TuningJob) { j.Spec.Objective.Metric = "" }, "spec.objective.metric"},
		{"an unknown algorithm", func(j *v1beta1.TuningJob) { j.Spec.Algorithm.Name = "bayes" }, "spec.algorithm.name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			job := searchOf("bad")
			tt.mod(job)
			_, err := searches.Create(ctx, job, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) || !hasCause(statusOf(err), tt.field) {
				t.Errorf("create: %v, want 422 naming %s", err, tt.field)
			}
		})
	}
	// 2^31 does not fit parallelTrials: 400, naming it.
	body := `{"apiVersion":"batch.tensorstack.dev/v1beta1","kind":"TuningJob","metadata":{"name":"huge"},` +
		`"spec":{"parallelTrials":2147483648,"maxTrials":1,"parameters":[{"name":"lr","type":"double","min":"0","max":"1"}],` +
		`"objective":{"metric":"loss","direction":"minimize"},"trialTemplate":{"generic":{}}}}`
	err := restClient(t, s).Post().AbsPath("/apis/batch.tensorstack.dev/v1beta1/namespaces/team-a/tuningjobs").
		SetHeader("Content-Type", "application/json").Body([]byte(body)).Do(ctx).Error()
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "parallelTrials") {
		t.Errorf("parallelTrials 2^31: %v, want 400 naming it", err)
	}
	if list, err := searches.List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
		t.Errorf("stored after refusals: %v %v", list, err)
	}
}

// TestTuningExampleAccepted creates the example search of docs/tuning.md as
// it is.
func TestTuningExampleAccepted(t *testing.T) {
	s := framework.StartTestServer(t, "")
	data, err := os.ReadFile("../../artifacts/examples/tuning/pytorch-lr-search.yaml")
	if err != nil {
		t.Fatal(err)
	}
	search := &v1beta1.TuningJob{}
	if err := yaml.UnmarshalStrict(data, search); err != nil {
		t.Fatal(err)
	}
	created, err := s.Client.BatchV1beta1().TuningJobs("default").Create(context.Background(), search, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the example is refused: %v", err)
	}
	if created.Spec.TrialTemplate.Generic == nil || created.Spec.TrialTemplate.Generic.Trainer.Script == nil {
		t.Errorf("the example's trial template lost its script: %+v", created.Spec.TrialTemplate)
	}
}
