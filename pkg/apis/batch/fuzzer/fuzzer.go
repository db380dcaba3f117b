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

// Package fuzzer fills batch.tensorstack.dev objects with random content for
// round-trip tests, keeping each object in a form that survives the trip.
//
// Decoding v1beta1 applies defaults and folds the deprecated enable fields
// into enabled, so a random object only comes back unchanged when it is
// already defaulted and carries no enable field. The functions here fill
// every field at random and then put those few fields into that form.
package fuzzer

import (
	corev1 "k8s.io/api/core/v1"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// Funcs returns the fill functions of the group, for
// k8s.io/apimachinery/pkg/api/apitesting/fuzzer.FuzzerFor and the round-trip
// tests built on it.
var Funcs = func(_ runtimeserializer.CodecFactory) []interface{} {
	funcs := internalFuncs()
	funcs = append(funcs, v1beta1Funcs()...)
	return append(funcs, podDefaultFuncs()...)
}

// internalFuncs fill internal objects with values their defaulting would
// never change: the defaulted fields are always set, to random valid values.
func internalFuncs() []interface{} {
	return []interface{}{
		func(s *batch.ReplicaSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			if s.Replicas == nil {
				s.Replicas = ptr.To(c.Int31n(16))
			}
			if s.RestartPolicy == "" {
				s.RestartPolicy = oneOf(c, batch.RestartPolicyNever, batch.RestartPolicyOnFailure,
					batch.RestartPolicyAlways, batch.RestartPolicyExitCode)
			}
		},
		func(p *batch.RunPolicy, c randfill.Continue) {
			c.FillNoCustom(p)
			if p.BackoffLimit == nil {
				p.BackoffLimit = ptr.To(c.Int31n(10))
			}
			if p.CleanUpPolicy == "" {
				p.CleanUpPolicy = oneOf(c, batch.CleanUpPolicyAll, batch.CleanUpPolicyUnfinished, batch.CleanUpPolicyNone)
			}
			if p.Checkpoint != nil && p.Checkpoint.StopGraceSeconds == nil {
				p.Checkpoint.StopGraceSeconds = ptr.To(1 + c.Int31n(batch.DefaultStopGraceSeconds))
			}
			if p.RestartStrategy == "" {
				p.RestartStrategy = oneOf(c, batch.RestartStrategyRecreate, batch.RestartStrategyInPlace)
			}
			if p.ProgressDeadlineSeconds != nil && p.StallPolicy == "" {
				p.StallPolicy = oneOf(c, batch.StallPolicyNone, batch.StallPolicyRestart, batch.StallPolicyFail)
			}
		},
		func(d *batch.ReplicaDebugSpec, c randfill.Continue) {
			c.FillNoCustom(d)
			if len(d.Command) == 0 {
				d.Command = append([]string(nil), v1beta1.DefaultDebugCommand...)
			}
		},
		func(p *batch.FailurePolicyOnPodCondition, c randfill.Continue) {
			c.FillNoCustom(p)
			if p.Status == "" {
				p.Status = oneOf(c, corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown)
			}
		},
		func(s *batch.MPIJobSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			if s.SlotsPerWorker == nil {
				s.SlotsPerWorker = ptr.To(1 + c.Int31n(8))
			}
			if s.MPIImplementation == "" {
				s.MPIImplementation = oneOf(c, batch.MPIImplementationOpenMPI, batch.MPIImplementationIntelMPI, batch.MPIImplementationMPICH)
			}
			if s.SSHAuthMountPath == "" {
				s.SSHAuthMountPath = batch.DefaultSSHAuthMountPath
			}
			if s.RunPolicy.StartupPolicy == "" {
				s.RunPolicy.StartupPolicy = oneOf(c, batch.StartupPolicyInOrder, batch.StartupPolicyAnyOrder)
			}
		},
		// Defaulted searches, whose lists come back nil when empty.
		func(s *batch.TuningJobSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			if s.Algorithm.Name == "" {
				s.Algorithm.Name = batch.AlgorithmRandom
			}
			if s.Algorithm.Name == batch.AlgorithmTPE && s.Algorithm.StartupTrials == 0 {
				s.Algorithm.StartupTrials = 1 + c.Int31n(5)
			}
			if s.ParallelTrials == 0 {
				s.ParallelTrials = 1 + c.Int31n(4)
			}
			if s.MaxTrials == 0 {
				s.MaxTrials = 1 + c.Int31n(50)
			}
			if s.MaxFailedTrials == nil {
				s.MaxFailedTrials = ptr.To(c.Int31n(5))
			}
			if s.Objective.TrialValue == "" {
				s.Objective.TrialValue = batch.TrialValueLast
			}
			if s.EarlyStopping != nil {
				if a := s.EarlyStopping.ASHA; a != nil {
					if a.Resource == "" {
						a.Resource = batch.ResourceSteps
					}
					if a.ReductionFactor == 0 {
						a.ReductionFactor = 2 + c.Int31n(3)
					}
					if a.Rungs == 0 {
						a.Rungs = 1 + c.Int31n(4)
					}
				}
				if m := s.EarlyStopping.MedianStop; m != nil {
					if m.StartStep == 0 {
						m.StartStep = 1 + c.Int63n(10)
					}
					if m.MinTrials == 0 {
						m.MinTrials = 1 + c.Int31n(5)
					}
				}
			}
			if len(s.Parameters) == 0 {
				s.Parameters = nil
			}
		},
		func(s *batch.TuningJobStatus, c randfill.Continue) {
			c.FillNoCustom(s)
			if len(s.Trials) == 0 {
				s.Trials = nil
			}
		},
		func(t *batch.TorchrunConfig, c randfill.Continue) {
			c.FillNoCustom(t)
			if t.MaxRestarts == nil {
				t.MaxRestarts = ptr.To(c.Int31n(5))
			}
			if t.ProcPerNode == "" {
				t.ProcPerNode = oneOf(c, "1", "8", "gpu")
			}
			if t.RdzvBackend == "" {
				t.RdzvBackend = oneOf(c, batch.RendezvousBackendStatic, batch.RendezvousBackendC10d, batch.RendezvousBackendEtcd,
					batch.RendezvousBackendEtcdV2)
			}
		},
	}
}

// v1beta1Funcs fill versioned objects so that they come back unchanged from
// a trip through the internal version: defaulted, and without the deprecated
// enable field, which the conversion folds into enabled and drops.
func v1beta1Funcs() []interface{} {
	return []interface{}{
		func(s *v1beta1.ReplicaSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			v1beta1.SetDefaults_ReplicaSpec(s)
		},
		func(p *v1beta1.RunPolicy, c randfill.Continue) {
			c.FillNoCustom(p)
			v1beta1.SetDefaults_RunPolicy(p)
		},
		func(d *v1beta1.ReplicaDebugSpec, c randfill.Continue) {
			c.FillNoCustom(d)
			v1beta1.SetDefaults_ReplicaDebugSpec(d)
		},
		func(p *v1beta1.FailurePolicyOnPodCondition, c randfill.Continue) {
			c.FillNoCustom(p)
			v1beta1.SetDefaults_FailurePolicyOnPodCondition(p)
		},
		func(t *v1beta1.TorchrunConfig, c randfill.Continue) {
			c.FillNoCustom(t)
			v1beta1.SetDefaults_TorchrunConfig(t)
			// The rendezvous is defaulted with the rest of the spec in
			// view; any value set is kept.
			if t.RdzvBackend == "" {
				t.RdzvBackend = v1beta1.RendezvousBackendStatic
			}
		},
		func(d *v1beta1.DebugMode, c randfill.Continue) {
			c.FillNoCustom(d)
			d.Enable = nil
		},
		func(p *v1beta1.PauseMode, c randfill.Continue) {
			c.FillNoCustom(p)
			p.Enable = nil
		},
	}
}

// podDefaultFuncs apply the defaults of the Kubernetes core types that the
// v1beta1 defaulters (generated over the pod templates) fill in on decode.
func podDefaultFuncs() []interface{} {
	return []interface{}{
		func(p *corev1.ContainerPort, c randfill.Continue) {
			c.FillNoCustom(p)
			if p.Protocol == "" {
				p.Protocol = corev1.ProtocolTCP
			}
		},
		func(s *corev1.FileKeySelector, c randfill.Continue) {
			c.FillNoCustom(s)
			if s.Optional == nil {
				s.Optional = ptr.To(false)
			}
		},
		func(g *corev1.GRPCAction, c randfill.Continue) {
			c.FillNoCustom(g)
			if g.Service == nil {
				g.Service = ptr.To("")
			}
		},
		func(v *corev1.ISCSIVolumeSource, c randfill.Continue) {
			c.FillNoCustom(v)
			if v.ISCSIInterface == "" {
				v.ISCSIInterface = "default"
			}
		},
		func(v *corev1.RBDVolumeSource, c randfill.Continue) {
			c.FillNoCustom(v)
			if v.RBDPool == "" {
				v.RBDPool = "rbd"
			}
			if v.RadosUser == "" {
				v.RadosUser = "admin"
			}
			if v.Keyring == "" {
				v.Keyring = "/etc/ceph/keyring"
			}
		},
		func(v *corev1.AzureDiskVolumeSource, c randfill.Continue) {
			c.FillNoCustom(v)
			if v.CachingMode == nil {
				v.CachingMode = ptr.To(corev1.AzureDataDiskCachingReadWrite)
			}
			if v.FSType == nil {
				v.FSType = ptr.To("ext4")
			}
			if v.ReadOnly == nil {
				v.ReadOnly = ptr.To(false)
			}
			if v.Kind == nil {
				v.Kind = ptr.To(corev1.AzureSharedBlobDisk)
			}
		},
		func(v *corev1.ScaleIOVolumeSource, c randfill.Continue) {
			c.FillNoCustom(v)
			if v.StorageMode == "" {
				v.StorageMode = "ThinProvisioned"
			}
			if v.FSType == "" {
				v.FSType = "xfs"
			}
		},
	}
}

// oneOf picks one of the values at random.
func oneOf[T any](c randfill.Continue, values ...T) T {
	return values[c.Intn(len(values))]
}
