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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

// searchOf is a valid, defaulted search over a learning rate and a depth,
// whose PyTorch trials take them as arguments, changed by mod.
func searchOf(mod func(*batch.TuningJob)) *batch.TuningJob {
	trial := ptJob().Spec
	c := &trial.ReplicaSpecs[0].Template.Spec.Containers[0]
	c.Args = []string{"--lr=${param.lr}", "--depth", "${param.depth}"}
	c.Env = append(c.Env, corev1.EnvVar{Name: "OPTIMIZER", Value: "${param.optimizer}"}, corev1.EnvVar{Name: "RUN", Value: "${trial.name}"})
	job := &batch.TuningJob{
		ObjectMeta: metav1.ObjectMeta{Name: "search", Namespace: "team-a"},
		Spec: batch.TuningJobSpec{
			TrialTemplate: batch.TrainingJobTemplate{Pytorch: &trial},
			Parameters: []batch.TuningParameter{
				{Name: "lr", Type: batch.ParameterDouble, Min: "0.001", Max: "0.5", LogScale: true},
				{Name: "depth", Type: batch.ParameterInt, Min: "2", Max: "8"},
				{Name: "optimizer", Type: batch.ParameterCategorical, Values: []string{"sgd", "adam"}},
			},
			Objective:       batch.TuningObjective{Metric: "loss", Direction: batch.Minimize, TrialValue: batch.TrialValueLast},
			Algorithm:       batch.TuningAlgorithm{Name: batch.AlgorithmRandom},
			EarlyStopping:   &batch.EarlyStopping{ASHA: &batch.ASHA{Resource: batch.ResourceSteps, MinResource: 10, ReductionFactor: 2, Rungs: 3}},
			ParallelTrials:  2,
			MaxTrials:       8,
			MaxFailedTrials: ptr.To[int32](3),
		},
	}
	if mod != nil {
		mod(job)
	}
	return job
}

func TestValidateTuningJob(t *testing.T) {
	tests := []struct {
		name string
		job  *batch.TuningJob
		want []wantErr
	}{
		{name: "a search", job: searchOf(nil)},
		{name: "tpe with median stop", job: searchOf(func(j *batch.TuningJob) {
			j.Spec.Algorithm = batch.TuningAlgorithm{Name: batch.AlgorithmTPE, StartupTrials: 3, Seed: ptr.To[int64](7)}
			j.Spec.EarlyStopping = &batch.EarlyStopping{MedianStop: &batch.MedianStop{StartStep: 5, MinTrials: 3}}
		})},
		{name: "no parameters", job: searchOf(func(j *batch.TuningJob) {
			j.Spec.Parameters = nil
			j.Spec.TrialTemplate.Pytorch.ReplicaSpecs[0].Template.Spec.Containers[0].Args = nil
			j.Spec.TrialTemplate.Pytorch.ReplicaSpecs[0].Template.Spec.Containers[0].Env = nil
		}), want: []wantErr{required("spec.parameters")}},
		{name: "min above max", job: searchOf(func(j *batch.TuningJob) { j.Spec.Parameters[0].Min = "0.9" }),
			want: []wantErr{invalid("spec.parameters[0].max")}},
		{name: "a categorical without values", job: searchOf(func(j *batch.TuningJob) { j.Spec.Parameters[2].Values = nil }),
			want: []wantErr{required("spec.parameters[2].values")}},
		{name: "a range that is no number", job: searchOf(func(j *batch.TuningJob) { j.Spec.Parameters[1].Max = "8.5" }),
			want: []wantErr{invalid("spec.parameters[1].max")}},
		{name: "log scale from 0", job: searchOf(func(j *batch.TuningJob) { j.Spec.Parameters[0].Min = "0" }),
			want: []wantErr{invalid("spec.parameters[0].min")}},
		{name: "a parameter twice", job: searchOf(func(j *batch.TuningJob) { j.Spec.Parameters[1].Name = "lr" }),
			want: []wantErr{duplicate("spec.parameters[1].name"), invalid("spec.trialTemplate.pytorch.replicaSpecs[0].template.spec.containers[0].args[2]")}},
		{name: "an unknown placeholder", job: searchOf(func(j *batch.TuningJob) {
			j.Spec.TrialTemplate.Pytorch.ReplicaSpecs[0].Template.Spec.Containers[0].Args[0] = "--lr=${param.learning_rate}"
		}), want: []wantErr{invalid("spec.trialTemplate.pytorch.replicaSpecs[0].template.spec.containers[0].args[0]")}},
		{name: "parallelTrials 0", job: searchOf(func(j *batch.TuningJob) { j.Spec.ParallelTrials = 0 }),
			want: []wantErr{invalid("spec.parallelTrials")}},
		{name: "parallelTrials 2^31-1", job: searchOf(func(j *batch.TuningJob) { j.Spec.ParallelTrials = 1<<31 - 1 }),
			want: []wantErr{invalid("spec.parallelTrials")}},
		{name: "maxTrials under parallelTrials", job: searchOf(func(j *batch.TuningJob) { j.Spec.MaxTrials = 1 }),
			want: []wantErr{invalid("spec.parallelTrials")}},
		{name: "too many trials", job: searchOf(func(j *batch.TuningJob) { j.Spec.MaxTrials = batch.MaxTrials + 1 }),
			want: []wantErr{invalid("spec.maxTrials")}},
		{name: "no objective metric", job: searchOf(func(j *batch.TuningJob) { j.Spec.Objective.Metric = "" }),
			want: []wantErr{required("spec.objective.metric")}},
		{name: "a goal that is no number", job: searchOf(func(j *batch.TuningJob) { j.Spec.Objective.Goal = "low" }),
			want: []wantErr{invalid("spec.objective.goal")}},
		{name: "atStep without a step", job: searchOf(func(j *batch.TuningJob) { j.Spec.Objective.TrialValue = batch.TrialValueAtStep }),
			want: []wantErr{required("spec.objective.step")}},
		{name: "grid without a double's step", job: searchOf(func(j *batch.TuningJob) { j.Spec.Algorithm.Name = batch.AlgorithmGrid }),
			want: []wantErr{required("spec.parameters[0].step")}},
		{name: "both early stopping rules", job: searchOf(func(j *batch.TuningJob) {
			j.Spec.EarlyStopping.MedianStop = &batch.MedianStop{StartStep: 1, MinTrials: 3}
		}), want: []wantErr{forbidden("spec.earlyStopping.medianStop")}},
		{name: "asha's reduction factor 1", job: searchOf(func(j *batch.TuningJob) { j.Spec.EarlyStopping.ASHA.ReductionFactor = 1 }),
			want: []wantErr{invalid("spec.earlyStopping.asha.reductionFactor")}},
		{name: "a last rung beyond 2^53", job: searchOf(func(j *batch.TuningJob) {
			j.Spec.EarlyStopping.ASHA.MinResource = 1 << 50
			j.Spec.EarlyStopping.ASHA.ReductionFactor = 10
		}), want: []wantErr{invalid("spec.earlyStopping.asha.minResource")}},
		{name: "no kind of trial", job: searchOf(func(j *batch.TuningJob) { j.Spec.TrialTemplate.Pytorch = nil }),
			want: []wantErr{required("spec.trialTemplate")}},
		{name: "a trial template that is no valid job", job: searchOf(func(j *batch.TuningJob) {
			j.Spec.TrialTemplate.Pytorch.ReplicaSpecs[0].Template.Spec.Containers[0].Image = ""
		}), want: []wantErr{required("spec.trialTemplate.pytorch.replicaSpecs[0].template.spec.containers[0].image")}},
		{name: "a name too long for its trials", job: searchOf(func(j *batch.TuningJob) {
			j.Name = "s2345678901234567890123456789012345678901234567890123456789012"
		}), want: []wantErr{tooLong("metadata.name")}},
		{name: "a trial from a runtime", job: searchOf(func(j *batch.TuningJob) {
			j.Spec.TrialTemplate.Pytorch = &batch.PyTorchTrainingJobSpec{TrainingJobSpec: batch.TrainingJobSpec{
				RuntimeRef: &batch.RuntimeRef{Name: "torch-distributed"},
				Trainer:    &batch.Trainer{Args: []string{"--lr", "${param.lr}", "--depth=${param.depth}", "${param.optimizer}"}},
			}}
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectErrors(t, ValidateTuningJob(tt.job), tt.want...)
		})
	}
}

func TestValidateTuningJobUpdate(t *testing.T) {
	withVersion := func(j *batch.TuningJob) *batch.TuningJob { j.ResourceVersion = "1"; return j }
	old := withVersion(searchOf(nil))
	old.Status.Trials = make([]batch.TrialStatus, 3)

	grown := withVersion(searchOf(func(j *batch.TuningJob) { j.Spec.MaxTrials, j.Spec.ParallelTrials, j.Spec.Suspend = 12, 3, true }))
	expectErrors(t, ValidateTuningJobUpdate(grown, old))

	shrunk := withVersion(searchOf(func(j *batch.TuningJob) { j.Spec.MaxTrials = 2 }))
	expectErrors(t, ValidateTuningJobUpdate(shrunk, old), invalid("spec.maxTrials"))

	reframed := withVersion(searchOf(func(j *batch.TuningJob) { j.Spec.Objective.Direction = batch.Maximize }))
	expectErrors(t, ValidateTuningJobUpdate(reframed, old), forbidden("spec"))
}
