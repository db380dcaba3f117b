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
	"testing"

	"github.com/google/go-cmp/cmp"
)

// specWithTypes builds a spec that uses the type in every place a replica
// type appears: the replica specs, debug mode, resume specs and the failure
// policy's rules.
func specWithTypes(cleanUp CleanUpPolicy, types ...ReplicaType) TrainingJobSpec {
	spec := TrainingJobSpec{
		RunPolicy: RunPolicy{CleanUpPolicy: cleanUp, FailurePolicy: &FailurePolicy{Rules: []FailurePolicyRule{
			{Action: FailurePolicyActionIgnore}, {Action: FailurePolicyActionFailJob},
		}}},
		RunMode: &RunMode{Debug: &DebugMode{}, Pause: &PauseMode{}},
	}
	for _, t := range types {
		spec.ReplicaSpecs = append(spec.ReplicaSpecs, ReplicaSpec{Type: t})
		spec.RunMode.Debug.ReplicaSpecs = append(spec.RunMode.Debug.ReplicaSpecs, ReplicaDebugSpec{Type: t})
		spec.RunMode.Pause.ResumeSpecs = append(spec.RunMode.Pause.ResumeSpecs, ResumeSpec{Type: t})
		rule := &spec.RunPolicy.FailurePolicy.Rules[1]
		rule.ReplicaTypes = append(rule.ReplicaTypes, t)
	}
	return spec
}

func TestCanonicalizeTensorFlowJob(t *testing.T) {
	cases := []struct {
		name      string
		spec      TrainingJobSpec
		canonical TrainingJobSpec
	}{
		{"Kubeflow spellings",
			specWithTypes("", "Chief", "Worker", "PS", "Evaluator"),
			specWithTypes("", ReplicaTypeChief, ReplicaTypeWorker, ReplicaTypePS, ReplicaTypeEvaluator)},
		{"master is the chief",
			specWithTypes("", "Master", "Ps"),
			specWithTypes("", ReplicaTypeChief, ReplicaTypePS)},
		{"lower-case master is the chief", specWithTypes("", "master"), specWithTypes("", ReplicaTypeChief)},
		{"canonical types stay",
			specWithTypes(CleanUpPolicyAll, ReplicaTypeChief, ReplicaTypeWorker, ReplicaTypePS, ReplicaTypeEvaluator),
			specWithTypes(CleanUpPolicyAll, ReplicaTypeChief, ReplicaTypeWorker, ReplicaTypePS, ReplicaTypeEvaluator)},
		{"unknown types are left for validation", specWithTypes("", "Launcher", "WORKER"), specWithTypes("", "Launcher", "WORKER")},
		{"clean-up policy all", specWithTypes("all", ReplicaTypeWorker), specWithTypes(CleanUpPolicyAll, ReplicaTypeWorker)},
		{"clean-up policy unfinished", specWithTypes("unfinished", ReplicaTypeWorker), specWithTypes(CleanUpPolicyUnfinished, ReplicaTypeWorker)},
		{"clean-up policy none", specWithTypes("none", ReplicaTypeWorker), specWithTypes(CleanUpPolicyNone, ReplicaTypeWorker)},
		{"other clean-up spellings are left for validation", specWithTypes("ALL", ReplicaTypeWorker), specWithTypes("ALL", ReplicaTypeWorker)},
		{"no run mode", TrainingJobSpec{ReplicaSpecs: []ReplicaSpec{{Type: "Chief"}}}, TrainingJobSpec{ReplicaSpecs: []ReplicaSpec{{Type: ReplicaTypeChief}}}},
		{"empty run mode", TrainingJobSpec{RunMode: &RunMode{}}, TrainingJobSpec{RunMode: &RunMode{}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := &TensorFlowTrainingJob{Spec: TensorFlowTrainingJobSpec{TrainingJobSpec: tc.spec}}
			CanonicalizeTensorFlowJob(job)
			if diff := cmp.Diff(tc.canonical, job.Spec.TrainingJobSpec); diff != "" {
				t.Errorf("canonical spec differs (-want +got):\n%s", diff)
			}
			// A second pass changes nothing.
			CanonicalizeTensorFlowJob(job)
			if diff := cmp.Diff(tc.canonical, job.Spec.TrainingJobSpec); diff != "" {
				t.Errorf("canonicalizing twice changed the spec (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCanonicalizePyTorchJob(t *testing.T) {
	cases := []struct {
		name      string
		spec      PyTorchTrainingJobSpec
		canonical PyTorchTrainingJobSpec
	}{
		{"Kubeflow spellings",
			PyTorchTrainingJobSpec{TrainingJobSpec: specWithTypes("unfinished", "Master", "Worker")},
			PyTorchTrainingJobSpec{TrainingJobSpec: specWithTypes(CleanUpPolicyUnfinished, ReplicaTypeMaster, ReplicaTypeWorker)}},
		{"master stays master",
			PyTorchTrainingJobSpec{TrainingJobSpec: specWithTypes("", ReplicaTypeMaster, ReplicaTypeNode)},
			PyTorchTrainingJobSpec{TrainingJobSpec: specWithTypes("", ReplicaTypeMaster, ReplicaTypeNode)}},
		{"TensorFlow aliases do not apply",
			PyTorchTrainingJobSpec{TrainingJobSpec: specWithTypes("", "Chief", "PS")},
			PyTorchTrainingJobSpec{TrainingJobSpec: specWithTypes("", "Chief", "PS")}},
		{"rendezvous backend in capitals",
			PyTorchTrainingJobSpec{TorchrunConfig: &TorchrunConfig{RdzvBackend: "C10D"}},
			PyTorchTrainingJobSpec{TorchrunConfig: &TorchrunConfig{RdzvBackend: RendezvousBackendC10d}}},
		{"rendezvous backend etcd-v2",
			PyTorchTrainingJobSpec{TorchrunConfig: &TorchrunConfig{RdzvBackend: "Etcd-V2"}},
			PyTorchTrainingJobSpec{TorchrunConfig: &TorchrunConfig{RdzvBackend: RendezvousBackendEtcdV2}}},
		{"rendezvous backend unset stays unset",
			PyTorchTrainingJobSpec{TorchrunConfig: &TorchrunConfig{}},
			PyTorchTrainingJobSpec{TorchrunConfig: &TorchrunConfig{}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := &PyTorchTrainingJob{Spec: tc.spec}
			CanonicalizePyTorchJob(job)
			if diff := cmp.Diff(tc.canonical, job.Spec); diff != "" {
				t.Errorf("canonical spec differs (-want +got):\n%s", diff)
			}
			CanonicalizePyTorchJob(job)
			if diff := cmp.Diff(tc.canonical, job.Spec); diff != "" {
				t.Errorf("canonicalizing twice changed the spec (-want +got):\n%s", diff)
			}
		})
	}
}
