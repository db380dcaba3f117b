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
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

func TestTensorFlowDefaults(t *testing.T) {
	job := &TensorFlowTrainingJob{Spec: TensorFlowTrainingJobSpec{TrainingJobSpec: TrainingJobSpec{
		ReplicaSpecs: []ReplicaSpec{{Type: ReplicaTypeWorker}},
		RunMode: &RunMode{
			Debug: &DebugMode{ReplicaSpecs: []ReplicaDebugSpec{{Type: ReplicaTypeWorker}}},
			Pause: &PauseMode{ResumeSpecs: []ResumeSpec{{Type: ReplicaTypeWorker}}},
		},
	}}}
	SetObjectDefaults_TensorFlowTrainingJob(job)

	want := TrainingJobSpec{
		ReplicaSpecs: []ReplicaSpec{{Type: ReplicaTypeWorker, Replicas: ptr.To[int32](1), RestartPolicy: RestartPolicyNever}},
		RunMode: &RunMode{
			Debug: &DebugMode{ReplicaSpecs: []ReplicaDebugSpec{{Type: ReplicaTypeWorker, Command: []string{"sleep", "inf"}}}},
			// Resume specs have no defaults: without a command the template's is used.
			Pause: &PauseMode{ResumeSpecs: []ResumeSpec{{Type: ReplicaTypeWorker}}},
		},
		RunPolicy: RunPolicy{BackoffLimit: ptr.To[int32](3), CleanUpPolicy: CleanUpPolicyUnfinished, RestartStrategy: RestartStrategyRecreate},
	}
	if diff := cmp.Diff(want, job.Spec.TrainingJobSpec); diff != "" {
		t.Errorf("defaulted spec differs (-want +got):\n%s", diff)
	}
}

func TestDefaultsKeepWhatIsSet(t *testing.T) {
	spec := TrainingJobSpec{
		ReplicaSpecs: []ReplicaSpec{
			// Zero replicas is a choice, not an unset count.
			{Type: ReplicaTypeWorker, Replicas: ptr.To[int32](0), RestartPolicy: RestartPolicyExitCode},
			{Type: ReplicaTypePS, Replicas: ptr.To[int32](4), RestartPolicy: RestartPolicyOnFailure},
		},
		RunMode: &RunMode{Debug: &DebugMode{Enabled: true, ReplicaSpecs: []ReplicaDebugSpec{
			{Type: ReplicaTypeWorker, Command: []string{"bash", "-c", "sleep 3600"}},
		}}},
		RunPolicy: RunPolicy{BackoffLimit: ptr.To[int32](0), CleanUpPolicy: CleanUpPolicyNone, RestartStrategy: RestartStrategyInPlace},
	}
	job := &TensorFlowTrainingJob{Spec: TensorFlowTrainingJobSpec{TrainingJobSpec: *spec.DeepCopy()}}
	SetObjectDefaults_TensorFlowTrainingJob(job)
	if diff := cmp.Diff(spec, job.Spec.TrainingJobSpec); diff != "" {
		t.Errorf("defaulting changed fields that were set (-want +got):\n%s", diff)
	}
}

func TestPyTorchDefaults(t *testing.T) {
	cases := []struct {
		name     string
		torchrun *TorchrunConfig
		want     *TorchrunConfig
	}{
		{"absent stays absent", nil, nil},
		{"empty", &TorchrunConfig{Enabled: true},
			&TorchrunConfig{Enabled: true, MaxRestarts: ptr.To[int32](0), ProcPerNode: "1", RdzvBackend: RendezvousBackendStatic}},
		{"c10d kept", &TorchrunConfig{Enabled: true, RdzvBackend: RendezvousBackendC10d},
			&TorchrunConfig{Enabled: true, MaxRestarts: ptr.To[int32](0), ProcPerNode: "1", RdzvBackend: RendezvousBackendC10d}},
		{"not enabled", &TorchrunConfig{},
			&TorchrunConfig{MaxRestarts: ptr.To[int32](0), ProcPerNode: "1", RdzvBackend: RendezvousBackendStatic}},
		{"set", &TorchrunConfig{Enabled: true, MaxRestarts: ptr.To[int32](3), ProcPerNode: "gpu", RdzvBackend: RendezvousBackendEtcdV2},
			&TorchrunConfig{Enabled: true, MaxRestarts: ptr.To[int32](3), ProcPerNode: "gpu", RdzvBackend: RendezvousBackendEtcdV2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := &PyTorchTrainingJob{Spec: PyTorchTrainingJobSpec{
				TrainingJobSpec: TrainingJobSpec{ReplicaSpecs: []ReplicaSpec{{Type: ReplicaTypeMaster}, {Type: ReplicaTypeNode, Replicas: ptr.To[int32](3)}}},
				TorchrunConfig:  tc.torchrun,
			}}
			SetObjectDefaults_PyTorchTrainingJob(job)
			if diff := cmp.Diff(tc.want, job.Spec.TorchrunConfig); diff != "" {
				t.Errorf("torchrunConfig differs (-want +got):\n%s", diff)
			}
			wantReplicas := []ReplicaSpec{
				{Type: ReplicaTypeMaster, Replicas: ptr.To[int32](1), RestartPolicy: RestartPolicyNever},
				{Type: ReplicaTypeNode, Replicas: ptr.To[int32](3), RestartPolicy: RestartPolicyNever},
			}
			if diff := cmp.Diff(wantReplicas, job.Spec.ReplicaSpecs); diff != "" {
				t.Errorf("replica specs differ (-want +got):\n%s", diff)
			}
			if got := job.Spec.RunPolicy; *got.BackoffLimit != DefaultBackoffLimit || got.CleanUpPolicy != CleanUpPolicyUnfinished {
				t.Errorf("run policy = %+v, want backoffLimit 3 and cleanUpPolicy Unfinished", got)
			}
		})
	}
}

// TestRendezvousDefault: a job that names no rendezvous gets static unless
// it is elastic; an elastic job gets c10d, the rendezvous that lets replicas
// join and leave. A rendezvous given is kept.
func TestRendezvousDefault(t *testing.T) {
	elastic := &ElasticConfig{Enabled: true, MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](4)}
	cases := []struct {
		name    string
		backend RendezvousBackend
		elastic *ElasticConfig
		want    RendezvousBackend
	}{
		{"not elastic", "", nil, RendezvousBackendStatic},
		{"an elastic range not enabled", "", &ElasticConfig{MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](4)}, RendezvousBackendStatic},
		{"elastic", "", elastic, RendezvousBackendC10d},
		{"c10d kept", RendezvousBackendC10d, nil, RendezvousBackendC10d},
		{"etcd kept, elastic", RendezvousBackendEtcd, elastic, RendezvousBackendEtcd},
		{"static kept", RendezvousBackendStatic, nil, RendezvousBackendStatic},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := &PyTorchTrainingJob{Spec: PyTorchTrainingJobSpec{
				TrainingJobSpec: TrainingJobSpec{ReplicaSpecs: []ReplicaSpec{{Type: ReplicaTypeWorker, Replicas: ptr.To[int32](2)}}},
				TorchrunConfig:  &TorchrunConfig{Enabled: true, RdzvBackend: tc.backend},
				Elastic:         tc.elastic,
			}}
			SetObjectDefaults_PyTorchTrainingJob(job)
			if got := job.Spec.TorchrunConfig.RdzvBackend; got != tc.want {
				t.Errorf("rdzvBackend = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDebugRequestDefaults(t *testing.T) {
	request := &DebugRequest{ReplicaSpecs: []ReplicaDebugSpec{{Type: ReplicaTypeWorker}, {Type: ReplicaTypeChief, Command: []string{"sh"}}}}
	SetObjectDefaults_DebugRequest(request)
	want := []ReplicaDebugSpec{{Type: ReplicaTypeWorker, Command: []string{"sleep", "inf"}}, {Type: ReplicaTypeChief, Command: []string{"sh"}}}
	if diff := cmp.Diff(want, request.ReplicaSpecs); diff != "" {
		t.Errorf("replica specs differ (-want +got):\n%s", diff)
	}
}

// TestDefaultDebugCommandNotShared makes sure each defaulted command is a
// copy: changing one job's command must not change the default.
func TestDefaultDebugCommandNotShared(t *testing.T) {
	spec := ReplicaDebugSpec{}
	SetDefaults_ReplicaDebugSpec(&spec)
	spec.Command[0] = "changed"
	if DefaultDebugCommand[0] != "sleep" {
		t.Fatalf("the default debug command was changed through a defaulted object: %v", DefaultDebugCommand)
	}
}

// TestSchemeDefaults checks that the defaulters are registered, so decoding
// through the scheme defaults, including the core types inside templates.
func TestSchemeDefaults(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	job := &TensorFlowTrainingJob{Spec: TensorFlowTrainingJobSpec{TrainingJobSpec: TrainingJobSpec{
		ReplicaSpecs: []ReplicaSpec{{Type: ReplicaTypeWorker, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "tensorflow", Ports: []corev1.ContainerPort{{ContainerPort: 2222}}}},
		}}}},
	}}}
	scheme.Default(job)
	r := job.Spec.ReplicaSpecs[0]
	if r.Replicas == nil || *r.Replicas != 1 || r.RestartPolicy != RestartPolicyNever {
		t.Errorf("replica spec not defaulted: %+v", r)
	}
	if p := r.Template.Spec.Containers[0].Ports[0].Protocol; p != corev1.ProtocolTCP {
		t.Errorf("container port protocol = %q, want TCP", p)
	}
	if job.Spec.RunPolicy.BackoffLimit == nil {
		t.Errorf("run policy not defaulted")
	}
}

// TestFailurePolicyDefaults checks that a rule's pod condition matches a
// True condition unless it says otherwise, and that successPolicy stays
// unset (meaning Default) for both kinds.
func TestFailurePolicyDefaults(t *testing.T) {
	policy := func(statuses ...corev1.ConditionStatus) *FailurePolicy {
		rule := FailurePolicyRule{Action: FailurePolicyActionIgnore}
		for _, s := range statuses {
			rule.OnPodConditions = append(rule.OnPodConditions, FailurePolicyOnPodCondition{Type: corev1.DisruptionTarget, Status: s})
		}
		return &FailurePolicy{Rules: []FailurePolicyRule{rule, {Action: FailurePolicyActionFailJob}}}
	}
	spec := TrainingJobSpec{
		ReplicaSpecs: []ReplicaSpec{{Type: ReplicaTypeWorker}},
		RunPolicy:    RunPolicy{FailurePolicy: policy("", corev1.ConditionFalse, corev1.ConditionUnknown)},
	}
	want := policy(corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown)

	tf := &TensorFlowTrainingJob{Spec: TensorFlowTrainingJobSpec{TrainingJobSpec: *spec.DeepCopy()}}
	SetObjectDefaults_TensorFlowTrainingJob(tf)
	pt := &PyTorchTrainingJob{Spec: PyTorchTrainingJobSpec{TrainingJobSpec: *spec.DeepCopy()}}
	SetObjectDefaults_PyTorchTrainingJob(pt)
	for kind, got := range map[string]*TrainingJobSpec{"TensorFlow": &tf.Spec.TrainingJobSpec, "PyTorch": &pt.Spec.TrainingJobSpec} {
		if diff := cmp.Diff(want, got.RunPolicy.FailurePolicy); diff != "" {
			t.Errorf("%s: failurePolicy differs (-want +got):\n%s", kind, diff)
		}
		if got.RunPolicy.SuccessPolicy != "" {
			t.Errorf("%s: successPolicy = %q, want it left unset (Default)", kind, got.RunPolicy.SuccessPolicy)
		}
	}
}
