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

// Package genericjob is the REST storage of GenericJobs:
// the shared training job storage with the generic types and rules.
package genericjob

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/validation"
	"tensorstack.dev/training/pkg/registry/trainingjob"
)

// Kind describes GenericJobs to the shared storage.
var Kind = &trainingjob.Kind[*batch.GenericJob, batch.GenericJobSpec]{
	Info: batch.GenericKind,

	New:     func() *batch.GenericJob { return &batch.GenericJob{} },
	NewList: func() runtime.Object { return &batch.GenericJobList{} },
	Spec:    func(job *batch.GenericJob) *batch.GenericJobSpec { return &job.Spec },

	Canonicalize:   batch.CanonicalizeGenericJob,
	Validate:       validation.ValidateGenericJob,
	ValidateUpdate: validation.ValidateGenericJobUpdate,
}

// NewStorage returns the REST objects of GenericJobs, the scale
// subresource among them: a GenericJob may opt in to elasticity.
func NewStorage(optsGetter generic.RESTOptionsGetter, updatePath trainingjob.UpdatePath, progress trainingjob.ProgressConfig) (*trainingjob.Storage, error) {
	s, err := trainingjob.NewStorage(optsGetter, Kind, updatePath, progress)
	if err != nil {
		return nil, err
	}
	s.Scale = trainingjob.NewScaleREST(s.Job.Store, "GenericJob")
	return s, nil
}
