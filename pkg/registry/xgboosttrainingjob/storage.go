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

// Package xgboosttrainingjob is the REST storage of XGBoostTrainingJobs:
// the shared training job storage with XGBoost's types and rules.
package xgboosttrainingjob

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/validation"
	"tensorstack.dev/training/pkg/registry/trainingjob"
)

// Kind describes XGBoostTrainingJobs to the shared storage.
var Kind = &trainingjob.Kind[*batch.XGBoostTrainingJob, batch.XGBoostTrainingJobSpec]{
	Info: batch.XGBoostKind,

	New:     func() *batch.XGBoostTrainingJob { return &batch.XGBoostTrainingJob{} },
	NewList: func() runtime.Object { return &batch.XGBoostTrainingJobList{} },
	Spec:    func(job *batch.XGBoostTrainingJob) *batch.XGBoostTrainingJobSpec { return &job.Spec },

	Canonicalize:   batch.CanonicalizeXGBoostJob,
	Validate:       validation.ValidateXGBoostTrainingJob,
	ValidateUpdate: validation.ValidateXGBoostTrainingJobUpdate,
}

// NewStorage returns the REST objects of XGBoostTrainingJobs.
func NewStorage(optsGetter generic.RESTOptionsGetter, updatePath trainingjob.UpdatePath, progress trainingjob.ProgressConfig) (*trainingjob.Storage, error) {
	return trainingjob.NewStorage(optsGetter, Kind, updatePath, progress)
}
