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

package trainingjob

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/validation"
)

// The storage of every kind: one row each, with the kind's types and rules;
// its names come from batch.Kinds. Kinds lists them in the table's order.

// KindStorage makes the REST storage of one kind.
type KindStorage interface {
	// KindInfo is the kind's row of batch.Kinds.
	KindInfo() batch.KindInfo
	// NewStorage returns the kind's REST objects.
	NewStorage(optsGetter generic.RESTOptionsGetter, updatePath UpdatePath, progress ProgressConfig, runtimes RuntimeResolver,
		records JobRecorder) (*Storage, error)
}

// Kinds is the storage of every kind the apiserver serves, in the order of
// batch.Kinds (a test holds them together).
var Kinds = []KindStorage{tensorFlowKind, pyTorchKind, xgboostKind, genericKind, mpiKind}

var tensorFlowKind = &Kind[*batch.TensorFlowTrainingJob, batch.TensorFlowTrainingJobSpec]{
	Info:           batch.TensorFlowKind,
	New:            func() *batch.TensorFlowTrainingJob { return &batch.TensorFlowTrainingJob{} },
	NewList:        func() runtime.Object { return &batch.TensorFlowTrainingJobList{} },
	Spec:           func(job *batch.TensorFlowTrainingJob) *batch.TensorFlowTrainingJobSpec { return &job.Spec },
	Canonicalize:   batch.CanonicalizeTensorFlowJob,
	Validate:       validation.ValidateTensorFlowTrainingJob,
	ValidateUpdate: validation.ValidateTensorFlowTrainingJobUpdate,
}

// pyTorchKind is elastic (a scale subresource) and warns of an elastic job
// without torchrun.
var pyTorchKind = &Kind[*batch.PyTorchTrainingJob, batch.PyTorchTrainingJobSpec]{
	Info:           batch.PyTorchKind,
	New:            func() *batch.PyTorchTrainingJob { return &batch.PyTorchTrainingJob{} },
	NewList:        func() runtime.Object { return &batch.PyTorchTrainingJobList{} },
	Spec:           func(job *batch.PyTorchTrainingJob) *batch.PyTorchTrainingJobSpec { return &job.Spec },
	Canonicalize:   batch.CanonicalizePyTorchJob,
	Validate:       validation.ValidatePyTorchTrainingJob,
	ValidateUpdate: validation.ValidatePyTorchTrainingJobUpdate,
	Warnings:       pyTorchWarnings,
}

var xgboostKind = &Kind[*batch.XGBoostTrainingJob, batch.XGBoostTrainingJobSpec]{
	Info:           batch.XGBoostKind,
	New:            func() *batch.XGBoostTrainingJob { return &batch.XGBoostTrainingJob{} },
	NewList:        func() runtime.Object { return &batch.XGBoostTrainingJobList{} },
	Spec:           func(job *batch.XGBoostTrainingJob) *batch.XGBoostTrainingJobSpec { return &job.Spec },
	Canonicalize:   batch.CanonicalizeXGBoostJob,
	Validate:       validation.ValidateXGBoostTrainingJob,
	ValidateUpdate: validation.ValidateXGBoostTrainingJobUpdate,
}

// genericKind is elastic: a GenericJob may opt in to it.
var genericKind = &Kind[*batch.GenericJob, batch.GenericJobSpec]{
	Info:           batch.GenericKind,
	New:            func() *batch.GenericJob { return &batch.GenericJob{} },
	NewList:        func() runtime.Object { return &batch.GenericJobList{} },
	Spec:           func(job *batch.GenericJob) *batch.GenericJobSpec { return &job.Spec },
	Canonicalize:   batch.CanonicalizeGenericJob,
	Validate:       validation.ValidateGenericJob,
	ValidateUpdate: validation.ValidateGenericJobUpdate,
}

var mpiKind = &Kind[*batch.MPIJob, batch.MPIJobSpec]{
	Info:           batch.MPIKind,
	New:            func() *batch.MPIJob { return &batch.MPIJob{} },
	NewList:        func() runtime.Object { return &batch.MPIJobList{} },
	Spec:           func(job *batch.MPIJob) *batch.MPIJobSpec { return &job.Spec },
	Canonicalize:   batch.CanonicalizeMPIJob,
	Validate:       validation.ValidateMPIJob,
	ValidateUpdate: validation.ValidateMPIJobUpdate,
}

// pyTorchWarnings points out an elastic job without torchrun: the
// controller scales its pods, and nothing in them lets the training group
// change.
func pyTorchWarnings(job *batch.PyTorchTrainingJob) []string {
	if !batch.ElasticEnabled(job.Spec.Elastic) || (job.Spec.TorchrunConfig != nil && job.Spec.TorchrunConfig.Enabled) {
		return nil
	}
	return []string{field.NewPath("spec", "elastic").String() + ": without spec.torchrunConfig.enabled the controller " +
		"runs expectedReplicas pods, but their training program must itself let replicas join and leave; " +
		"torchrun's elastic agent does that"}
}
