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

import "strings"

// Spellings accepted from older manifests and Kubeflow, mapped to the stored form.
var (
	tensorFlowReplicaTypeAliases = map[ReplicaType]ReplicaType{
		"Chief":     ReplicaTypeChief,
		"Master":    ReplicaTypeChief,
		"master":    ReplicaTypeChief,
		"Worker":    ReplicaTypeWorker,
		"PS":        ReplicaTypePS,
		"Ps":        ReplicaTypePS,
		"Evaluator": ReplicaTypeEvaluator,
	}
	pyTorchReplicaTypeAliases = map[ReplicaType]ReplicaType{
		"Master": ReplicaTypeMaster,
		"Worker": ReplicaTypeWorker,
	}
	// Kubeflow's XGBoostJob spells its types Master and Worker.
	xgboostReplicaTypeAliases = pyTorchReplicaTypeAliases
	mpiReplicaTypeAliases     = map[ReplicaType]ReplicaType{
		"Launcher": ReplicaTypeLauncher,
		"Worker":   ReplicaTypeWorker,
	}
	cleanUpPolicyAliases = map[CleanUpPolicy]CleanUpPolicy{
		"all":        CleanUpPolicyAll,
		"unfinished": CleanUpPolicyUnfinished,
		"none":       CleanUpPolicyNone,
	}
)

// CanonicalizeTensorFlowJob rewrites accepted alternative spellings in the
// spec to their stored form. It runs before validation, so validation and
// every reader see one spelling only.
func CanonicalizeTensorFlowJob(job *TensorFlowTrainingJob) {
	canonicalizeSpec(&job.Spec.TrainingJobSpec, tensorFlowReplicaTypeAliases)
}

// CanonicalizeXGBoostJob is CanonicalizeTensorFlowJob for XGBoost jobs.
func CanonicalizeXGBoostJob(job *XGBoostTrainingJob) {
	canonicalizeSpec(&job.Spec.TrainingJobSpec, xgboostReplicaTypeAliases)
}

// CanonicalizeGenericJob is CanonicalizeTensorFlowJob for generic jobs,
// whose replica types are the user's own and have no other spelling.
func CanonicalizeGenericJob(job *GenericJob) {
	canonicalizeSpec(&job.Spec.TrainingJobSpec, nil)
}

// CanonicalizeMPIJob is CanonicalizeTensorFlowJob for MPI jobs, whose
// types Kubeflow's MPIJob spells Launcher and Worker.
func CanonicalizeMPIJob(job *MPIJob) {
	canonicalizeSpec(&job.Spec.TrainingJobSpec, mpiReplicaTypeAliases)
}

// CanonicalizePyTorchJob is CanonicalizeTensorFlowJob for PyTorch jobs.
func CanonicalizePyTorchJob(job *PyTorchTrainingJob) {
	canonicalizeSpec(&job.Spec.TrainingJobSpec, pyTorchReplicaTypeAliases)
	if tc := job.Spec.TorchrunConfig; tc != nil {
		tc.RdzvBackend = RendezvousBackend(strings.ToLower(string(tc.RdzvBackend)))
	}
}

func canonicalizeSpec(spec *TrainingJobSpec, typeAliases map[ReplicaType]ReplicaType) {
	canonical := func(t *ReplicaType) {
		if c, ok := typeAliases[*t]; ok {
			*t = c
		}
	}
	for i := range spec.ReplicaSpecs {
		canonical(&spec.ReplicaSpecs[i].Type)
	}
	if c, ok := cleanUpPolicyAliases[spec.RunPolicy.CleanUpPolicy]; ok {
		spec.RunPolicy.CleanUpPolicy = c
	}
	if fp := spec.RunPolicy.FailurePolicy; fp != nil {
		for i := range fp.Rules {
			for j := range fp.Rules[i].ReplicaTypes {
				canonical(&fp.Rules[i].ReplicaTypes[j])
			}
		}
	}
	if mode := spec.RunMode; mode != nil {
		if mode.Debug != nil {
			for i := range mode.Debug.ReplicaSpecs {
				canonical(&mode.Debug.ReplicaSpecs[i].Type)
			}
		}
		if mode.Pause != nil {
			for i := range mode.Pause.ResumeSpecs {
				canonical(&mode.Pause.ResumeSpecs[i].Type)
			}
		}
	}
}
