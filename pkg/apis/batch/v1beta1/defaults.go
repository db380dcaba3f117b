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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

// Default values of optional fields.
const (
	DefaultBackoffLimit int32 = 3
	DefaultProcPerNode        = "1"
)

// DefaultDebugCommand keeps a debug replica alive until the user is done with it.
var DefaultDebugCommand = []string{"sleep", "inf"}

// addDefaultingFuncs registers the generated defaults, except that a job
// of any kind waiting for its runtime is left as it is: defaults filled in
// before the runtime is applied would take the place of the runtime's
// values. The apiserver defaults the job once it has applied the runtime
// (and set status.runtime).
func addDefaultingFuncs(scheme *runtime.Scheme) error {
	if err := RegisterDefaults(scheme); err != nil {
		return err
	}
	generated := runtime.NewScheme()
	if err := RegisterDefaults(generated); err != nil {
		return err
	}
	for _, obj := range jobKindTypes {
		job, ok := obj.(TrainingJob)
		if !ok {
			continue // the list types: their items are read back, never awaiting a runtime
		}
		scheme.AddTypeDefaultingFunc(job, func(obj any) {
			if !AwaitsRuntime(obj.(TrainingJob)) {
				generated.Default(obj.(runtime.Object))
			}
		})
	}
	// A search's own defaults; its trial template's, as a job's, unless the
	// template names a runtime.
	scheme.AddTypeDefaultingFunc(&TuningJob{}, func(obj any) { defaultTuningJob(obj.(*TuningJob)) })
	scheme.AddTypeDefaultingFunc(&TuningJobList{}, func(obj any) {
		for i := range obj.(*TuningJobList).Items {
			defaultTuningJob(&obj.(*TuningJobList).Items[i])
		}
	})
	return nil
}

// AwaitsRuntime says whether the job names a runtime that has not been
// applied to it yet: a job being created, before the apiserver applies the
// runtime.
func AwaitsRuntime(job TrainingJob) bool {
	return job.CommonSpec().RuntimeRef != nil && job.JobStatus().Runtime == nil
}

// SetDefaults_ReplicaSpec fills the replica count and restart policy.
func SetDefaults_ReplicaSpec(obj *ReplicaSpec) {
	if obj.Replicas == nil {
		obj.Replicas = ptr.To(batch.DefaultReplicas)
	}
	if obj.RestartPolicy == "" {
		obj.RestartPolicy = RestartPolicyNever
	}
}

// SetDefaults_RunPolicy fills the backoff limit, the clean-up policy and
// the restart strategy.
func SetDefaults_RunPolicy(obj *RunPolicy) {
	if obj.BackoffLimit == nil {
		obj.BackoffLimit = ptr.To(DefaultBackoffLimit)
	}
	if obj.CleanUpPolicy == "" {
		obj.CleanUpPolicy = CleanUpPolicyUnfinished
	}
	if obj.RestartStrategy == "" {
		obj.RestartStrategy = RestartStrategyRecreate
	}
}

// SetDefaults_TrainingJobSpec fills what depends on more than one part of
// the spec: the stop grace of a checkpoint policy (batch.DefaultStopGrace)
// and the stall policy of a job with a progress deadline.
func SetDefaults_TrainingJobSpec(obj *TrainingJobSpec) {
	policy := &obj.RunPolicy
	if c := policy.Checkpoint; c != nil && c.StopGraceSeconds == nil {
		templates := make([]*corev1.PodSpec, 0, len(obj.ReplicaSpecs))
		for i := range obj.ReplicaSpecs {
			templates = append(templates, &obj.ReplicaSpecs[i].Template.Spec)
		}
		c.StopGraceSeconds = ptr.To(batch.DefaultStopGrace(templates))
	}
	if policy.ProgressDeadlineSeconds != nil && policy.StallPolicy == "" {
		policy.StallPolicy = StallPolicyNone
	}
}

// SetDefaults_MPIJobSpec fills an MPI job's slots, implementation and key
// path, and makes its launcher wait for its workers unless the job says
// otherwise: mpirun reaches every worker as it starts.
func SetDefaults_MPIJobSpec(obj *MPIJobSpec) {
	if obj.SlotsPerWorker == nil {
		obj.SlotsPerWorker = ptr.To(batch.DefaultSlotsPerWorker)
	}
	if obj.MPIImplementation == "" {
		obj.MPIImplementation = MPIImplementationOpenMPI
	}
	if obj.SSHAuthMountPath == "" {
		obj.SSHAuthMountPath = batch.DefaultSSHAuthMountPath
	}
	if obj.RunPolicy.StartupPolicy == "" {
		obj.RunPolicy.StartupPolicy = StartupPolicyInOrder
	}
}

// SetDefaults_FailurePolicyOnPodCondition fills the condition status a rule
// matches: True, the status of a condition that happened (a pod lost to a
// disruption has DisruptionTarget True).
//
// RunPolicy.SuccessPolicy has no default: unset means Default, and stays
// unset, so that jobs written before the field existed read back unchanged.
func SetDefaults_FailurePolicyOnPodCondition(obj *FailurePolicyOnPodCondition) {
	if obj.Status == "" {
		obj.Status = corev1.ConditionTrue
	}
}

// SetDefaults_ReplicaDebugSpec fills the debug command.
func SetDefaults_ReplicaDebugSpec(obj *ReplicaDebugSpec) {
	if len(obj.Command) == 0 {
		obj.Command = append([]string(nil), DefaultDebugCommand...)
	}
}

// SetDefaults_TorchrunConfig fills the torchrun options that do not depend
// on the rest of the spec; SetDefaults_PyTorchTrainingJobSpec fills the
// rendezvous.
func SetDefaults_TorchrunConfig(obj *TorchrunConfig) {
	if obj.MaxRestarts == nil {
		obj.MaxRestarts = ptr.To[int32](0)
	}
	if obj.ProcPerNode == "" {
		obj.ProcPerNode = DefaultProcPerNode
	}
}

// SetDefaults_PyTorchTrainingJobSpec fills the torchrun rendezvous
// (DefaultRendezvousBackend). Defaults also run on every read from storage,
// so a job stored without a rendezvous reads back with the one its pods are
// built with. Jobs created while c10d was the only default had it written
// into them, and keep it.
func SetDefaults_PyTorchTrainingJobSpec(obj *PyTorchTrainingJobSpec) {
	if tc := obj.TorchrunConfig; tc != nil && tc.RdzvBackend == "" {
		tc.RdzvBackend = DefaultRendezvousBackend(obj)
	}
}

// DefaultRendezvousBackend is the rendezvous of a job whose torchrunConfig
// names none. A fixed group of replicas meets fastest through static, whose
// agents meet in the first rank's store without polling it; an elastic job
// needs c10d, which lets replicas join and leave.
func DefaultRendezvousBackend(spec *PyTorchTrainingJobSpec) RendezvousBackend {
	if spec.Elastic != nil && spec.Elastic.Enabled {
		return RendezvousBackendC10d
	}
	return RendezvousBackendStatic
}
