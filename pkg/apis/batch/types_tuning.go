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

package batch

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TuningJob is a hyperparameter search: it runs trials, ordinary training
// jobs made from one template with different parameter values, and looks
// for the values that give the best objective. Under asha early stopping a
// trial that falls behind is paused with a checkpoint, and resumed from it
// when the trials after it show it was better than it looked.
type TuningJob struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the search the user asks for.
	Spec TuningJobSpec `json:"spec,omitempty"`

	// Status is how the search stands: its trials, the best so far, and
	// its conditions.
	Status TuningJobStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TuningJobList is a list of TuningJobs.
type TuningJobList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the searches in the list.
	Items []TuningJob `json:"items"`
}

// TuningJobSpec is a hyperparameter search.
type TuningJobSpec struct {
	// TrialTemplate is the job every trial is made from. Every string in
	// it may hold placeholders ${param.<name>}, which a trial replaces with
	// its value of that parameter; ${trial.name} is the trial's job name.
	TrialTemplate TrainingJobTemplate `json:"trialTemplate"`

	// Parameters are the values the search varies, at most 16.
	Parameters []TuningParameter `json:"parameters"`

	// Objective is the metric the trials report and which way is better.
	Objective TuningObjective `json:"objective"`

	// Algorithm chooses each trial's parameter values. Defaults to random.
	Algorithm TuningAlgorithm `json:"algorithm,omitempty"`

	// EarlyStopping stops trials that fall behind before they finish.
	// Unset, every trial runs to its end.
	EarlyStopping *EarlyStopping `json:"earlyStopping,omitempty"`

	// ParallelTrials is how many trials may run at once. Defaults to 1.
	ParallelTrials int32 `json:"parallelTrials,omitempty"`

	// MaxTrials is how many trials the search makes in all, from
	// parallelTrials to 500. Defaults to 10.
	MaxTrials int32 `json:"maxTrials,omitempty"`

	// MaxFailedTrials is how many trials may fail before the search fails.
	// Defaults to 3.
	MaxFailedTrials *int32 `json:"maxFailedTrials,omitempty"`

	// Suspend, set by the pause subresource and cleared by resume, holds
	// the search: no new trial starts and running trials are paused.
	Suspend bool `json:"suspend,omitempty"`
}

// TuningParameterType is the kind of values a parameter takes.
type TuningParameterType string

const (
	// ParameterDouble takes decimal values from min to max.
	ParameterDouble TuningParameterType = "double"
	// ParameterInt takes whole numbers from min to max.
	ParameterInt TuningParameterType = "int"
	// ParameterCategorical takes one of its values.
	ParameterCategorical TuningParameterType = "categorical"
)

// TuningParameter is one value the search varies.
type TuningParameter struct {
	// Name is what placeholders call the parameter: letters, digits and
	// "_", starting with a letter; at most 63 characters.
	Name string `json:"name"`

	// Type is double, int or categorical.
	Type TuningParameterType `json:"type"`

	// Min is the smallest value of a double or int parameter, as a decimal
	// string.
	Min string `json:"min,omitempty"`

	// Max is the largest value of a double or int parameter, at least min.
	Max string `json:"max,omitempty"`

	// Step, when set, makes a double or int parameter take only min,
	// min+step, min+2*step... up to max. A grid search needs it for a
	// double parameter; an int parameter's grid steps by 1 without it.
	Step string `json:"step,omitempty"`

	// LogScale samples a double or int parameter evenly over the logarithm
	// of its range, as suits learning rates; min must then be above 0.
	LogScale bool `json:"logScale,omitempty"`

	// Values are the choices of a categorical parameter, at least one.
	Values []string `json:"values,omitempty"`
}

// ObjectiveDirection says whether a smaller or a larger value is better.
type ObjectiveDirection string

const (
	// Minimize prefers smaller values, as of a loss.
	Minimize ObjectiveDirection = "minimize"
	// Maximize prefers larger values, as of an accuracy.
	Maximize ObjectiveDirection = "maximize"
)

// TrialValue says which of the values a trial reports is its objective.
type TrialValue string

const (
	// TrialValueLast is the last value the trial reported.
	TrialValueLast TrialValue = "last"
	// TrialValueBest is the best value the trial reported.
	TrialValueBest TrialValue = "best"
	// TrialValueAtStep is the value the trial reported at objective.step,
	// or the last one before it.
	TrialValueAtStep TrialValue = "atStep"
)

// TuningObjective is what the search optimizes.
type TuningObjective struct {
	// Metric names a metric of the trials' progress reports, such as loss
	// or accuracy.
	Metric string `json:"metric"`

	// Direction is minimize or maximize.
	Direction ObjectiveDirection `json:"direction"`

	// Goal, when set, ends the search as Succeeded as soon as a trial
	// reaches it: a decimal string.
	Goal string `json:"goal,omitempty"`

	// TrialValue is which value of a trial counts: last (the default),
	// best or atStep.
	TrialValue TrialValue `json:"trialValue,omitempty"`

	// Step is the step whose value counts under trialValue atStep.
	Step *int64 `json:"step,omitempty"`
}

// TuningAlgorithmName names a way of choosing parameter values.
type TuningAlgorithmName string

const (
	// AlgorithmRandom draws every parameter independently.
	AlgorithmRandom TuningAlgorithmName = "random"
	// AlgorithmGrid walks the grid of every parameter's values in order.
	AlgorithmGrid TuningAlgorithmName = "grid"
	// AlgorithmTPE, the tree-structured Parzen estimator, draws random
	// values for the first startupTrials trials, then values that are
	// likelier among the better trials than among the worse.
	AlgorithmTPE TuningAlgorithmName = "tpe"
)

// TuningAlgorithm chooses each trial's parameter values.
type TuningAlgorithm struct {
	// Name is random (the default), grid or tpe.
	Name TuningAlgorithmName `json:"name,omitempty"`

	// Seed makes the choices repeatable: a search with the same seed and
	// the same trial results chooses the same values. Unset, the search
	// picks one and records it in status.seed.
	Seed *int64 `json:"seed,omitempty"`

	// StartupTrials is how many random trials tpe runs before it models
	// the results. Defaults to 3 under tpe.
	StartupTrials int32 `json:"startupTrials,omitempty"`
}

// EarlyStopping stops trials that fall behind. Exactly one of its fields
// is set.
type EarlyStopping struct {
	// MedianStop stops a trial whose best value so far is worse than the
	// median of the other trials' values at the same step.
	MedianStop *MedianStop `json:"medianStop,omitempty"`

	// ASHA, asynchronous successive halving, lets only the best
	// 1/reductionFactor of the trials at each rung go on to the next, and
	// pauses the others, with a checkpoint when the trial template has a
	// checkpoint policy. A paused trial that later ranks in the best share
	// of its rung is promoted: resumed, from its checkpoint.
	ASHA *ASHA `json:"asha,omitempty"`
}

// MedianStop is the median stopping rule.
type MedianStop struct {
	// StartStep is the step before which no trial is stopped. Defaults to 1.
	StartStep int64 `json:"startStep,omitempty"`

	// MinTrials is how many other trials must have reported at a step
	// before the rule judges a trial there. Defaults to 3.
	MinTrials int32 `json:"minTrials,omitempty"`
}

// ASHAResource is what a trial's progress along the rungs is counted in.
type ASHAResource string

const (
	// ResourceSteps counts the steps the trials report.
	ResourceSteps ASHAResource = "steps"
	// ResourceEpochs counts the epochs the trials report.
	ResourceEpochs ASHAResource = "epochs"
)

// ASHA is asynchronous successive halving.
type ASHA struct {
	// Resource is steps (the default) or epochs.
	Resource ASHAResource `json:"resource,omitempty"`

	// MinResource is the resource at the first rung, at least 1. Rung r
	// lies at minResource * reductionFactor^r.
	MinResource int64 `json:"minResource"`

	// ReductionFactor is how much smaller each rung's share of promoted
	// trials is, from 2 to 10. Defaults to 3.
	ReductionFactor int32 `json:"reductionFactor,omitempty"`

	// Rungs is the number of rungs, from 1 to 10. Defaults to 3.
	Rungs int32 `json:"rungs,omitempty"`
}

// TrialState is where a trial stands.
type TrialState string

const (
	// TrialPending is a trial recorded but not yet seen running.
	TrialPending TrialState = "Pending"
	// TrialRunning is a trial whose job runs, or waits in a queue.
	TrialRunning TrialState = "Running"
	// TrialPaused is a trial that asha paused at a rung; it may still be
	// promoted.
	TrialPaused TrialState = "Paused"
	// TrialSucceeded is a trial whose job succeeded.
	TrialSucceeded TrialState = "Succeeded"
	// TrialFailed is a trial whose job failed, or was deleted.
	TrialFailed TrialState = "Failed"
	// TrialStopped is a trial that early stopping ended for good.
	TrialStopped TrialState = "Stopped"
)

// TuningJobStatus is how a search stands.
type TuningJobStatus struct {
	// ObservedGeneration is the generation of the spec this status
	// describes.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are Running, Suspended, Succeeded and Failed.
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Seed is the seed the algorithm uses: spec.algorithm.seed, or the one
	// the search picked.
	Seed *int64 `json:"seed,omitempty"`

	// Trials are every trial made so far, in the order they were made. A
	// trial is recorded here before its job is created.
	Trials []TrialStatus `json:"trials,omitempty"`

	// Counts are the trials by state.
	Counts TrialCounts `json:"counts,omitempty"`

	// BestTrial names the trial with the best objective value so far.
	BestTrial string `json:"bestTrial,omitempty"`

	// BestValue is that trial's objective value.
	BestValue string `json:"bestValue,omitempty"`

	// StartTime is when the search started.
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the search ended.
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// TrialCounts are a search's trials by state.
type TrialCounts struct {
	Pending   int32 `json:"pending,omitempty"`
	Running   int32 `json:"running,omitempty"`
	Paused    int32 `json:"paused,omitempty"`
	Succeeded int32 `json:"succeeded,omitempty"`
	Failed    int32 `json:"failed,omitempty"`
	Stopped   int32 `json:"stopped,omitempty"`
}

// TrialStatus is one trial: its parameter values, its job's state and what
// it reported.
type TrialStatus struct {
	// Name is the trial's job name, <search>-<index>.
	Name string `json:"name"`

	// Index counts the trials of the search from 0.
	Index int32 `json:"index"`

	// Parameters are the trial's values, in the order of spec.parameters.
	Parameters []ParameterValue `json:"parameters"`

	// State is Pending, Running, Paused, Succeeded, Failed or Stopped.
	State TrialState `json:"state"`

	// Value is the trial's objective value so far, by
	// spec.objective.trialValue.
	Value string `json:"value,omitempty"`

	// Progress is the last step (or epoch, under asha over epochs) the
	// trial reported.
	Progress *int64 `json:"progress,omitempty"`

	// Rung is the number of asha rungs the trial has reached.
	Rung int32 `json:"rung,omitempty"`

	// RungValues are the trial's values at the rungs it reached, first
	// rung first.
	RungValues []string `json:"rungValues,omitempty"`

	// Promotions counts the times asha resumed the trial after a pause.
	Promotions int32 `json:"promotions,omitempty"`

	// Curve is the trial's objective metric over its progress, at most 16
	// points, thinned evenly as the trial goes on.
	Curve []CurvePoint `json:"curve,omitempty"`

	// Message says why the trial is where it is: which rung paused it, or
	// that a promotion restarts it from the beginning for want of a
	// checkpoint policy.
	Message string `json:"message,omitempty"`
}

// ParameterValue is one parameter's value in a trial.
type ParameterValue struct {
	// Name is the parameter's name.
	Name string `json:"name"`
	// Value is its value, as substituted into the trial.
	Value string `json:"value"`
}

// CurvePoint is one value of a trial's objective metric.
type CurvePoint struct {
	// Progress is the step (or epoch) of the value.
	Progress int64 `json:"progress"`
	// Value is the metric's value there.
	Value string `json:"value"`
}

func init() {
	tuningTypes = append(tuningTypes, &TuningJob{}, &TuningJobList{})
}
