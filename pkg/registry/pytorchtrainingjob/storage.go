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

// Package pytorchtrainingjob is the REST storage of PyTorchTrainingJobs:
// the shared training job storage with PyTorch's types and rules.
package pytorchtrainingjob

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/validation"
	"tensorstack.dev/training/pkg/registry/trainingjob"
)

// Kind describes PyTorchTrainingJobs to the shared storage.
var Kind = &trainingjob.Kind[*batch.PyTorchTrainingJob, batch.PyTorchTrainingJobSpec]{
	Info: batch.PyTorchKind,

	New:     func() *batch.PyTorchTrainingJob { return &batch.PyTorchTrainingJob{} },
	NewList: func() runtime.Object { return &batch.PyTorchTrainingJobList{} },
	Spec:    func(job *batch.PyTorchTrainingJob) *batch.PyTorchTrainingJobSpec { return &job.Spec },

	Canonicalize:   batch.CanonicalizePyTorchJob,
	Validate:       validation.ValidatePyTorchTrainingJob,
	ValidateUpdate: validation.ValidatePyTorchTrainingJobUpdate,
	Warnings:       warnings,
}

// warnings points out an elastic job without torchrun: the controller
// scales its pods, and nothing in them lets the training group change.
func warnings(job *batch.PyTorchTrainingJob) []string {
	if !batch.ElasticEnabled(job.Spec.Elastic) || (job.Spec.TorchrunConfig != nil && job.Spec.TorchrunConfig.Enabled) {
		return nil
	}
	return []string{field.NewPath("spec", "elastic").String() + ": without spec.torchrunConfig.enabled the controller " +
		"runs expectedReplicas pods, but their training program must itself let replicas join and leave; " +
		"torchrun's elastic agent does that"}
}

// NewStorage returns the REST objects of PyTorchTrainingJobs.
func NewStorage(optsGetter generic.RESTOptionsGetter, updatePath trainingjob.UpdatePath, progress trainingjob.ProgressConfig) (*trainingjob.Storage, error) {
	s, err := trainingjob.NewStorage(optsGetter, Kind, updatePath, progress)
	if err != nil {
		return nil, err
	}
	s.Scale = trainingjob.NewScaleREST(s.Job.Store, "PyTorchTrainingJob")
	return s, nil
}
