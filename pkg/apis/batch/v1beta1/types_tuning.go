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

package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +genclient:method=Pause,verb=create,subresource=pause,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.PauseRequest,result=TuningJob
// +genclient:method=Resume,verb=create,subresource=resume,input=tensorstack.dev/training/pkg/apis/batch/v1beta1.ResumeRequest,result=TuningJob
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TuningJob is a hyperparameter search: it runs trials, ordinary training
// jobs made from one template with different parameter values, and looks
// for the values that give the best objective. Under asha early stopping a
// trial that falls behind is paused with a checkpoint, and resumed from it
// when the trials after it show it was better than it looked.
type TuningJob struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Spec is the search the user asks for.
	// +optional
	Spec TuningJobSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`

	// Status is how the search stands: its trials, the best so far, and
	// its conditions.
	// +optional
	Status TuningJobStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TuningJobList is a list of TuningJobs.
type TuningJobList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Items are the searches in the list.
	Items []TuningJob `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// TuningJobSpec is a hyperparameter search.
type TuningJobSpec struct {
	// TrialTemplate is the job every trial is made from. Every string in
	// it may hold placeholders ${param.<name>}, which a trial replaces with
	// its value of that parameter; ${trial.name} is the trial's job name.
	TrialTemplate TrainingJobTemplate `json:"trialTemplate" protobuf:"bytes,1,opt,name=trialTemplate"`

	// Parameters are the values the search varies, at most 16.
	// +listType=map
	// +listMapKey=name
	Parameters []TuningParameter `json:"parameters" protobuf:"bytes,2,rep,name=parameters"`

	// Objective is the metric the trials report and which way is better.
	Objective TuningObjective `json:"objective" protobuf:"bytes,3,opt,name=objective"`

	// Algorithm chooses each trial's parameter values. Defaults to random.
	// +optional
	Algorithm TuningAlgorithm `json:"algorithm,omitempty" protobuf:"bytes,4,opt,name=algorithm"`

	// EarlyStopping stops trials that fall behind before they finish.
	// Unset, every trial runs to its end.
	// +optional
	EarlyStopping *EarlyStopping `json:"earlyStopping,omitempty" protobuf:"bytes,5,opt,name=earlyStopping"`

	// ParallelTrials is how many trials may run at once. Defaults to 1.
	// +optional
	ParallelTrials int32 `json:"parallelTrials,omitempty" protobuf:"varint,6,opt,name=parallelTrials"`

	// MaxTrials is how many trials the search makes in all, from
	// parallelTrials to 500. Defaults to 10.
	// +optional
	MaxTrials int32 `json:"maxTrials,omitempty" protobuf:"varint,7,opt,name=maxTrials"`

	// MaxFailedTrials is how many trials may fail before the search fails.
	// Defaults to 3.
	// +optional
	MaxFailedTrials *int32 `json:"maxFailedTrials,omitempty" protobuf:"varint,8,opt,name=maxFailedTrials"`

	// Suspend, set by the pause subresource and cleared by resume, holds
	// the search: no new trial starts and running trials are paused.
	// +optional
	Suspend bool `json:"suspend,omitempty" protobuf:"varint,9,opt,name=suspend"`
}

// TuningParameterType is the kind of values a parameter takes.
// +enum
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
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`

	// Type is double, int or categorical.
	Type TuningParameterType `json:"type" protobuf:"bytes,2,opt,name=type,casttype=TuningParameterType"`

	// Min is the smallest value of a double or int parameter, as a decimal
	// string.
	// +optional
	Min string `json:"min,omitempty" protobuf:"bytes,3,opt,name=min"`

	// Max is the largest value of a double or int parameter, at least min.
	// +optional
	Max string `json:"max,omitempty" protobuf:"bytes,4,opt,name=max"`

	// Step, when set, makes a double or int parameter take only min,
	// min+step, min+2*step... up to max. A grid search needs it for a
	// double parameter; an int parameter's grid steps by 1 without it.
	// +optional
	Step string `json:"step,omitempty" protobuf:"bytes,5,opt,name=step"`

	// LogScale samples a double or int parameter evenly over the logarithm
	// of its range, as suits learning rates; min must then be above 0.
	// +optional
	LogScale bool `json:"logScale,omitempty" protobuf:"varint,6,opt,name=logScale"`

	// Values are the choices of a categorical parameter, at least one.
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty" protobuf:"bytes,7,rep,name=values"`
}

// ObjectiveDirection says whether a smaller or a larger value is better.
// +enum
type ObjectiveDirection string

const (
	// Minimize prefers smaller values, as of a loss.
	Minimize ObjectiveDirection = "minimize"
	// Maximize prefers larger values, as of an accuracy.
	Maximize ObjectiveDirection = "maximize"
)

// TrialValue says which of the values a trial reports is its objective.
// +enum
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
	Metric string `json:"metric" protobuf:"bytes,1,opt,name=metric"`

	// Direction is minimize or maximize.
	Direction ObjectiveDirection `json:"direction" protobuf:"bytes,2,opt,name=direction,casttype=ObjectiveDirection"`

	// Goal, when set, ends the search as Succeeded as soon as a trial
	// reaches it: a decimal string.
	// +optional
	Goal string `json:"goal,omitempty" protobuf:"bytes,3,opt,name=goal"`

	// TrialValue is which value of a trial counts: last (the default),
	// best or atStep.
	// +optional
	TrialValue TrialValue `json:"trialValue,omitempty" protobuf:"bytes,4,opt,name=trialValue,casttype=TrialValue"`

	// Step is the step whose value counts under trialValue atStep.
	// +optional
	Step *int64 `json:"step,omitempty" protobuf:"varint,5,opt,name=step"`
}

// TuningAlgorithmName names a way of choosing parameter values.
// +enum
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
	// +optional
	Name TuningAlgorithmName `json:"name,omitempty" protobuf:"bytes,1,opt,name=name,casttype=TuningAlgorithmName"`

	// Seed makes the choices repeatable: a search with the same seed and
	// the same trial results chooses the same values. Unset, the search
	// picks one and records it in status.seed.
	// +optional
	Seed *int64 `json:"seed,omitempty" protobuf:"varint,2,opt,name=seed"`

	// StartupTrials is how many random trials tpe runs before it models
	// the results. Defaults to 3 under tpe.
	// +optional
	StartupTrials int32 `json:"startupTrials,omitempty" protobuf:"varint,3,opt,name=startupTrials"`
}

// EarlyStopping stops trials that fall behind. Exactly one of its fields
// is set.
type EarlyStopping struct {
	// MedianStop stops a trial whose best value so far is worse than the
	// median of the other trials' values at the same step.
	// +optional
	MedianStop *MedianStop `json:"medianStop,omitempty" protobuf:"bytes,1,opt,name=medianStop"`

	// ASHA, asynchronous successive halving, lets only the best
	// 1/reductionFactor of the trials at each rung go on to the next, and
	// pauses the others, with a checkpoint when the trial template has a
	// checkpoint policy. A paused trial that later ranks in the best share
	// of its rung is promoted: resumed, from its checkpoint.
	// +optional
	ASHA *ASHA `json:"asha,omitempty" protobuf:"bytes,2,opt,name=asha"`
}

// MedianStop is the median stopping rule.
type MedianStop struct {
	// StartStep is the step before which no trial is stopped. Defaults to 1.
	// +optional
	StartStep int64 `json:"startStep,omitempty" protobuf:"varint,1,opt,name=startStep"`

	// MinTrials is how many other trials must have reported at a step
	// before the rule judges a trial there. Defaults to 3.
	// +optional
	MinTrials int32 `json:"minTrials,omitempty" protobuf:"varint,2,opt,name=minTrials"`
}

// ASHAResource is what a trial's progress along the rungs is counted in.
// +enum
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
	// +optional
	Resource ASHAResource `json:"resource,omitempty" protobuf:"bytes,1,opt,name=resource,casttype=ASHAResource"`

	// MinResource is the resource at the first rung, at least 1. Rung r
	// lies at minResource * reductionFactor^r.
	MinResource int64 `json:"minResource" protobuf:"varint,2,opt,name=minResource"`

	// ReductionFactor is how much smaller each rung's share of promoted
	// trials is, from 2 to 10. Defaults to 3.
	// +optional
	ReductionFactor int32 `json:"reductionFactor,omitempty" protobuf:"varint,3,opt,name=reductionFactor"`

	// Rungs is the number of rungs, from 1 to 10. Defaults to 3.
	// +optional
	Rungs int32 `json:"rungs,omitempty" protobuf:"varint,4,opt,name=rungs"`
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
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty" protobuf:"varint,1,opt,name=observedGeneration"`

	// Conditions are Running, Suspended, Succeeded and Failed.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" protobuf:"bytes,2,rep,name=conditions"`

	// Seed is the seed the algorithm uses: spec.algorithm.seed, or the one
	// the search picked.
	// +optional
	Seed *int64 `json:"seed,omitempty" protobuf:"varint,3,opt,name=seed"`

	// Trials are every trial made so far, in the order they were made. A
	// trial is recorded here before its job is created.
	// +listType=map
	// +listMapKey=name
	// +optional
	Trials []TrialStatus `json:"trials,omitempty" protobuf:"bytes,4,rep,name=trials"`

	// Counts are the trials by state.
	// +optional
	Counts TrialCounts `json:"counts,omitempty" protobuf:"bytes,5,opt,name=counts"`

	// BestTrial names the trial with the best objective value so far.
	// +optional
	BestTrial string `json:"bestTrial,omitempty" protobuf:"bytes,6,opt,name=bestTrial"`

	// BestValue is that trial's objective value.
	// +optional
	BestValue string `json:"bestValue,omitempty" protobuf:"bytes,7,opt,name=bestValue"`

	// StartTime is when the search started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty" protobuf:"bytes,8,opt,name=startTime"`

	// CompletionTime is when the search ended.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty" protobuf:"bytes,9,opt,name=completionTime"`
}

// TrialCounts are a search's trials by state.
type TrialCounts struct {
	Pending   int32 `json:"pending,omitempty" protobuf:"varint,1,opt,name=pending"`
	Running   int32 `json:"running,omitempty" protobuf:"varint,2,opt,name=running"`
	Paused    int32 `json:"paused,omitempty" protobuf:"varint,3,opt,name=paused"`
	Succeeded int32 `json:"succeeded,omitempty" protobuf:"varint,4,opt,name=succeeded"`
	Failed    int32 `json:"failed,omitempty" protobuf:"varint,5,opt,name=failed"`
	Stopped   int32 `json:"stopped,omitempty" protobuf:"varint,6,opt,name=stopped"`
}

// TrialStatus is one trial: its parameter values, its job's state and what
// it reported.
type TrialStatus struct {
	// Name is the trial's job name, <search>-<index>.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`

	// Index counts the trials of the search from 0.
	Index int32 `json:"index" protobuf:"varint,2,opt,name=index"`

	// Parameters are the trial's values, in the order of spec.parameters.
	// +listType=atomic
	Parameters []ParameterValue `json:"parameters" protobuf:"bytes,3,rep,name=parameters"`

	// State is Pending, Running, Paused, Succeeded, Failed or Stopped.
	State TrialState `json:"state" protobuf:"bytes,4,opt,name=state,casttype=TrialState"`

	// Value is the trial's objective value so far, by
	// spec.objective.trialValue.
	// +optional
	Value string `json:"value,omitempty" protobuf:"bytes,5,opt,name=value"`

	// Progress is the last step (or epoch, under asha over epochs) the
	// trial reported.
	// +optional
	Progress *int64 `json:"progress,omitempty" protobuf:"varint,6,opt,name=progress"`

	// Rung is the number of asha rungs the trial has reached.
	// +optional
	Rung int32 `json:"rung,omitempty" protobuf:"varint,7,opt,name=rung"`

	// RungValues are the trial's values at the rungs it reached, first
	// rung first.
	// +listType=atomic
	// +optional
	RungValues []string `json:"rungValues,omitempty" protobuf:"bytes,8,rep,name=rungValues"`

	// Promotions counts the times asha resumed the trial after a pause.
	// +optional
	Promotions int32 `json:"promotions,omitempty" protobuf:"varint,9,opt,name=promotions"`

	// Curve is the trial's objective metric over its progress, at most 16
	// points, thinned evenly as the trial goes on.
	// +listType=atomic
	// +optional
	Curve []CurvePoint `json:"curve,omitempty" protobuf:"bytes,10,rep,name=curve"`

	// Message says why the trial is where it is: which rung paused it, or
	// that a promotion restarts it from the beginning for want of a
	// checkpoint policy.
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,11,opt,name=message"`
}

// ParameterValue is one parameter's value in a trial.
type ParameterValue struct {
	// Name is the parameter's name.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// Value is its value, as substituted into the trial.
	Value string `json:"value" protobuf:"bytes,2,opt,name=value"`
}

// CurvePoint is one value of a trial's objective metric.
type CurvePoint struct {
	// Progress is the step (or epoch) of the value.
	Progress int64 `json:"progress" protobuf:"varint,1,opt,name=progress"`
	// Value is the metric's value there.
	Value string `json:"value" protobuf:"bytes,2,opt,name=value"`
}

func init() {
	tuningTypes = append(tuningTypes, &TuningJob{}, &TuningJobList{})
}
