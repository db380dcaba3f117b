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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch"
)

// Labels the controller puts on every object it creates for a job.
const (
	LabelJobName      = GroupName + "/job-name"
	LabelJobKind      = GroupName + "/job-kind"
	LabelReplicaType  = GroupName + "/replica-type"
	LabelReplicaIndex = GroupName + "/replica-index"
)

// Labels of a search's trials: the search they belong to and their index.
const (
	LabelTuningJob  = GroupName + "/tuning-job"
	LabelTrialIndex = GroupName + "/trial-index"
)

// JobLabels are the labels that select every object the controller created
// for a job of a kind (batch.Kinds).
func JobLabels(kind, name string) map[string]string {
	return map[string]string{LabelJobName: name, LabelJobKind: kind}
}

// JobControllerRef makes a job of a kind the controller of an object the
// controller creates for it.
func JobControllerRef(job metav1.Object, kind string) metav1.OwnerReference {
	return *metav1.NewControllerRef(job, SchemeGroupVersion.WithKind(kind))
}

// Resource names and short names of the job kinds (pkg/apis/batch's table
// of kinds, kinds.go).
const (
	TensorFlowTrainingJobResource  = batch.TensorFlowTrainingJobResource
	TensorFlowTrainingJobShortName = batch.TensorFlowTrainingJobShortName
	PyTorchTrainingJobResource     = batch.PyTorchTrainingJobResource
	PyTorchTrainingJobShortName    = batch.PyTorchTrainingJobShortName
	XGBoostTrainingJobResource     = batch.XGBoostTrainingJobResource
	XGBoostTrainingJobShortName    = batch.XGBoostTrainingJobShortName
	GenericJobResource             = batch.GenericJobResource
	GenericJobShortName            = batch.GenericJobShortName
	MPIJobResource                 = batch.MPIJobResource
	MPIJobShortName                = batch.MPIJobShortName
	// CategoryTrainingJobs groups every kind: kubectl get trainingjobs.
	CategoryTrainingJobs = "trainingjobs"
)

// Environment variables every container of a job's pods gets, so that the
// training code can name its own job (to report its progress, for one), and
// those of the checkpoint contract, which a job with
// spec.runPolicy.checkpoint gets: pkg/apis/batch (env.go) lists them all.
const (
	EnvJobName      = batch.EnvJobName
	EnvJobNamespace = batch.EnvJobNamespace
	EnvJobResource  = batch.EnvJobResource
	// EnvCheckpointDir is the directory, in the training container, where
	// the job writes its checkpoints: the checkpoint volume's mount path.
	EnvCheckpointDir = batch.EnvCheckpointDir
	// EnvCheckpointInterval is spec.runPolicy.checkpoint.intervalSeconds,
	// when set.
	EnvCheckpointInterval = batch.EnvCheckpointInterval
	// EnvCheckpointRequestFile names a file that is empty until the
	// controller asks for a checkpoint before it stops the pods; then it
	// holds the request's time (RFC 3339). The file is a downward API
	// projection of AnnotationCheckpointRequest.
	EnvCheckpointRequestFile = batch.EnvCheckpointRequestFile
	// EnvResumeFrom and EnvResumeStep are the path and step of the job's
	// last good checkpoint when the pod was made; unset before the first.
	EnvResumeFrom = batch.EnvResumeFrom
	EnvResumeStep = batch.EnvResumeStep
	// EnvAttempt is the number of the job's attempt a container runs in
	// (status.attempts), under the InPlace restart strategy. An in-place
	// restart starts the containers again with the next number.
	EnvAttempt = batch.EnvAttempt
)

// AnnotationCheckpointRequest is set by the controller on a job's pods when
// it asks for a checkpoint before a stop: the request's time, RFC 3339 with
// fractions of a second.
const AnnotationCheckpointRequest = GroupName + "/checkpoint-request"

// AnnotationResumeFrom and AnnotationResumeStep carry the job's latest
// checkpoint on its running pods, kept current by the controller: a
// training process restarted inside a pod that is still running (torchrun
// restarting its workers, an elastic resize) finds the newest checkpoint in
// the files ResumeFromFileName and ResumeStepFileName, where the
// environment still names the one of the pod's creation.
const (
	AnnotationResumeFrom = GroupName + "/resume-from"
	AnnotationResumeStep = GroupName + "/resume-step"
)

// CheckpointRequestDir is where the training container finds the file of
// EnvCheckpointRequestFile, named CheckpointRequestFileName, and the
// current resume point's files.
const (
	CheckpointRequestDir      = "/etc/tensorstack/checkpoint"
	CheckpointRequestFileName = "request"
	ResumeFromFileName        = "resume-from"
	ResumeStepFileName        = "resume-step"
	// CheckpointRequestVolume is the name of the downward API volume that
	// projects the request into CheckpointRequestDir.
	CheckpointRequestVolume = "tensorstack-checkpoint-request"
)

// FieldStatusPhase is the field selector label of a job's phase.
const FieldStatusPhase = batch.FieldStatusPhase

// Container names and default ports of the training replicas; the rules
// themselves are in pkg/apis/batch (contract.go), which validation applies.
const (
	TensorFlowContainerName = batch.TensorFlowContainerName
	PyTorchContainerName    = batch.PyTorchContainerName
	XGBoostContainerName    = batch.XGBoostContainerName
	TensorFlowDefaultPort   = batch.TensorFlowDefaultPort
	PyTorchDefaultPort      = batch.PyTorchDefaultPort
	XGBoostDefaultPort      = batch.XGBoostDefaultPort
)

// RetryableExitCodes are the exit codes the ExitCode restart policy retries:
// interrupts and kills (SIGINT, SIGKILL, SIGUSR2, SIGTERM) that say more
// about the pod's environment than about the training program.
var RetryableExitCodes = map[int32]bool{130: true, 137: true, 138: true, 143: true}

// PodName is the name of a replica's pod: <job>-<type>-<index>.
func PodName(job string, replicaType ReplicaType, index int32) string {
	return batch.PodName(job, string(replicaType), index)
}

// TrainingContainer is the index in containers of the container that runs
// the training program: the one named name (TensorFlowContainerName or
// PyTorchContainerName), else the first; -1 when there are none.
func TrainingContainer(containers []corev1.Container, name string) int {
	return batch.TrainingContainer(containers, name)
}

// ReplicasOf is how many replicas a replica type asks for; an unset count
// means 1, as defaulting sets it.
func ReplicasOf(spec *ReplicaSpec) int32 {
	return batch.ReplicasOrDefault(spec.Replicas)
}

// ElasticTotal says whether a job is elastic, and then how many
// replicas in all it runs (batch.ElasticTotal).
func ElasticTotal(job ElasticJob) (int64, bool) {
	e, specs := job.ElasticSpec(), job.CommonSpec().ReplicaSpecs
	if e == nil || !e.Enabled || len(specs) == 0 {
		return 0, false
	}
	var requested int64
	for i := range specs {
		requested += int64(ReplicasOf(&specs[i]))
	}
	return batch.ElasticTotal(requested, e.MinReplicas, e.MaxReplicas, e.ExpectedReplicas), true
}

// ReplicaOutcomeFinalizer is the finalizer the controller puts on every
// replica pod. It keeps the pod until the job's status holds the pod's
// outcome, so an outcome is never lost to a pod deleted or garbage-collected
// before the controller saw it.
const ReplicaOutcomeFinalizer = GroupName + "/replica-outcome"
