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
	"k8s.io/utils/ptr"
)

// Defaults of a search's optional fields.
const (
	DefaultParallelTrials      int32 = 1
	DefaultMaxTrials           int32 = 10
	DefaultMaxFailedTrials     int32 = 3
	DefaultStartupTrials       int32 = 3
	DefaultASHAReductionFactor int32 = 3
	DefaultASHARungs           int32 = 3
	DefaultMedianStopMinTrials int32 = 3
	DefaultMedianStopStartStep int64 = 1
)

// defaultTuningJob fills a search's optional fields, and its trial
// template's as a job's would be filled, so that the template is checked
// as the trials will be. A template that names a runtime is left alone:
// its trials are defaulted once the runtime is applied, and defaults filled
// in before would take the runtime's place.
func defaultTuningJob(job *TuningJob) {
	if !templateNamesRuntime(&job.Spec.TrialTemplate) {
		SetObjectDefaults_TuningJob(job)
	}
	setTuningJobDefaults(job)
}

// templateNamesRuntime says whether a template's kind spec names a runtime.
func templateNamesRuntime(t *TrainingJobTemplate) bool {
	var specs []*TrainingJobSpec
	if t.Pytorch != nil {
		specs = append(specs, &t.Pytorch.TrainingJobSpec)
	}
	if t.Tensorflow != nil {
		specs = append(specs, &t.Tensorflow.TrainingJobSpec)
	}
	if t.Xgboost != nil {
		specs = append(specs, &t.Xgboost.TrainingJobSpec)
	}
	if t.MPI != nil {
		specs = append(specs, &t.MPI.TrainingJobSpec)
	}
	if t.Generic != nil {
		specs = append(specs, &t.Generic.TrainingJobSpec)
	}
	for _, spec := range specs {
		if spec.RuntimeRef != nil {
			return true
		}
	}
	return false
}

// setTuningJobDefaults fills a search's own optional fields.
func setTuningJobDefaults(job *TuningJob) {
	spec := &job.Spec
	if spec.Algorithm.Name == "" {
		spec.Algorithm.Name = AlgorithmRandom
	}
	if spec.Algorithm.Name == AlgorithmTPE && spec.Algorithm.StartupTrials == 0 {
		spec.Algorithm.StartupTrials = DefaultStartupTrials
	}
	if spec.ParallelTrials == 0 {
		spec.ParallelTrials = DefaultParallelTrials
	}
	if spec.MaxTrials == 0 {
		spec.MaxTrials = DefaultMaxTrials
	}
	if spec.MaxFailedTrials == nil {
		spec.MaxFailedTrials = ptr.To(DefaultMaxFailedTrials)
	}
	if spec.Objective.TrialValue == "" {
		spec.Objective.TrialValue = TrialValueLast
	}
	if es := spec.EarlyStopping; es != nil {
		if a := es.ASHA; a != nil {
			if a.Resource == "" {
				a.Resource = ResourceSteps
			}
			if a.ReductionFactor == 0 {
				a.ReductionFactor = DefaultASHAReductionFactor
			}
			if a.Rungs == 0 {
				a.Rungs = DefaultASHARungs
			}
		}
		if m := es.MedianStop; m != nil {
			if m.StartStep == 0 {
				m.StartStep = DefaultMedianStopStartStep
			}
			if m.MinTrials == 0 {
				m.MinTrials = DefaultMedianStopMinTrials
			}
		}
	}
}
