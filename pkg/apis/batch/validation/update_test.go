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

package validation

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

func TestTensorFlowUpdate(t *testing.T) {
	withResumeSpecs := func(specs ...batch.ResumeSpec) func(*batch.TensorFlowTrainingJob) {
		return func(j *batch.TensorFlowTrainingJob) {
			j.Spec.RunMode = &batch.RunMode{Pause: &batch.PauseMode{ResumeSpecs: specs}}
		}
	}
	resume := batch.ResumeSpec{Type: batch.ReplicaTypeWorker, Command: []string{"python", "train.py", "--resume"}}

	cases := []struct {
		name     string
		old, job *batch.TensorFlowTrainingJob
		want     []wantErr
	}{
		{"unchanged", tfJob(), tfJob(), nil},
		{"more workers", tfJob(), tfJob(func(j *batch.TensorFlowTrainingJob) { j.Spec.ReplicaSpecs[2].Replicas = ptr.To[int32](8) }), nil},
		{"new image", tfJob(), tfJob(func(j *batch.TensorFlowTrainingJob) {
			j.Spec.ReplicaSpecs[2].Template.Spec.Containers[0].Image = "docker.io/library/train:2"
		}), nil},
		{"new restart policy and run policy", tfJob(), tfJob(func(j *batch.TensorFlowTrainingJob) {
			j.Spec.ReplicaSpecs[2].RestartPolicy = batch.RestartPolicyExitCode
			j.Spec.RunPolicy.BackoffLimit = ptr.To[int32](10)
		}), nil},
		{"types swapped", tfJob(), tfJob(func(j *batch.TensorFlowTrainingJob) {
			s := j.Spec.ReplicaSpecs
			s[0], s[1] = s[1], s[0]
		}), []wantErr{invalid("spec.replicaSpecs[0].type"), invalid("spec.replicaSpecs[1].type")}},
		{"type renamed", tfJob(), tfJob(func(j *batch.TensorFlowTrainingJob) { j.Spec.ReplicaSpecs[1].Type = batch.ReplicaTypeEvaluator }),
			[]wantErr{invalid("spec.replicaSpecs[1].type")}},
		{"type added", tfJob(), tfJob(func(j *batch.TensorFlowTrainingJob) {
			j.Spec.ReplicaSpecs = append(j.Spec.ReplicaSpecs, replica(batch.ReplicaTypeEvaluator, 1, "tensorflow"))
		}), []wantErr{forbidden("spec.replicaSpecs")}},
		{"type removed", tfJob(), tfJob(func(j *batch.TensorFlowTrainingJob) { j.Spec.ReplicaSpecs = j.Spec.ReplicaSpecs[:2] }),
			[]wantErr{forbidden("spec.replicaSpecs")}},
		{"paused and resumed", tfJob(withResumeSpecs(resume)), tfJob(withResumeSpecs(resume), func(j *batch.TensorFlowTrainingJob) {
			j.Spec.RunMode.Pause.Enabled = true
		}), nil},
		{"pause switched on without resume specs", tfJob(), tfJob(func(j *batch.TensorFlowTrainingJob) {
			j.Spec.RunMode = &batch.RunMode{Pause: &batch.PauseMode{Enabled: true}}
		}), nil},
		{"resume specs changed", tfJob(withResumeSpecs(resume)), tfJob(withResumeSpecs(batch.ResumeSpec{Type: batch.ReplicaTypeWorker})),
			[]wantErr{invalid("spec.runMode.pause.resumeSpecs")}},
		{"resume specs added", tfJob(), tfJob(withResumeSpecs(resume)), []wantErr{invalid("spec.runMode.pause.resumeSpecs")}},
		{"resume specs removed", tfJob(withResumeSpecs(resume)), tfJob(), []wantErr{invalid("spec.runMode.pause.resumeSpecs")}},
		{"debug switched on", tfJob(), tfJob(func(j *batch.TensorFlowTrainingJob) {
			j.Spec.RunMode = &batch.RunMode{Debug: &batch.DebugMode{Enabled: true,
				ReplicaSpecs: []batch.ReplicaDebugSpec{{Type: batch.ReplicaTypeChief, Command: []string{"sleep", "inf"}}}}}
		}), nil},
		{"new spec invalid", tfJob(), tfJob(func(j *batch.TensorFlowTrainingJob) { j.Spec.RunPolicy.BackoffLimit = ptr.To[int32](-1) }),
			[]wantErr{invalid("spec.runPolicy.backoffLimit")}},
		{"name changed", tfJob(), tfJob(func(j *batch.TensorFlowTrainingJob) { j.Name = "other" }), []wantErr{invalid("metadata.name")}},
		{"labels changed", tfJob(), tfJob(func(j *batch.TensorFlowTrainingJob) { j.Labels = map[string]string{"team": "vision"} }), nil},
		{"TensorBoard added to a long name", tfJob(func(j *batch.TensorFlowTrainingJob) { j.Name = strings.Repeat("a", 60) }),
			tfJob(func(j *batch.TensorFlowTrainingJob) {
				j.Name = strings.Repeat("a", 60)
				j.Spec.TensorboardSpec = &batch.TensorBoardSpec{Image: "tensorboard:2", TrainingLogFilesets: []string{"t9k://pvc/logs/x"}}
			}), []wantErr{invalid("metadata.name")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidateTensorFlowTrainingJobUpdate(tc.job, tc.old), tc.want...)
		})
	}
}

func TestPyTorchUpdate(t *testing.T) {
	elastic := func(min, max, expected *int32) func(*batch.PyTorchTrainingJob) {
		return func(j *batch.PyTorchTrainingJob) {
			j.Spec.Elastic = &batch.ElasticConfig{Enabled: true, MinReplicas: min, MaxReplicas: max, ExpectedReplicas: expected}
		}
	}
	torchrun := func(procs string) func(*batch.PyTorchTrainingJob) {
		return func(j *batch.PyTorchTrainingJob) {
			j.Spec.TorchrunConfig = &batch.TorchrunConfig{Enabled: true, MaxRestarts: ptr.To[int32](0), ProcPerNode: procs, RdzvBackend: batch.RendezvousBackendC10d}
		}
	}
	static := func(j *batch.PyTorchTrainingJob) { j.Spec.TorchrunConfig.RdzvBackend = batch.RendezvousBackendStatic }
	// running is a stored job with a pod.
	running := func(j *batch.PyTorchTrainingJob) {
		j.Status.Phase = batch.JobRunning
		j.Status.Tasks = []batch.TaskStatus{{Type: batch.ReplicaTypeWorker, ReplicaStatus: []batch.ReplicaStatus{
			{Name: "p-worker-0", UID: "5f0c3a4e-0000-4000-8000-000000000001", Phase: batch.ReplicaRunning}}}}
	}
	cases := []struct {
		name     string
		old, job *batch.PyTorchTrainingJob
		want     []wantErr
	}{
		{"unchanged", ptJob(elastic(ptr.To[int32](1), ptr.To[int32](4), nil)), ptJob(elastic(ptr.To[int32](1), ptr.To[int32](4), nil)), nil},
		{"expected replicas changed", ptJob(elastic(ptr.To[int32](1), ptr.To[int32](4), ptr.To[int32](2))),
			ptJob(elastic(ptr.To[int32](1), ptr.To[int32](4), ptr.To[int32](3))), nil},
		{"minimum changed", ptJob(elastic(ptr.To[int32](1), ptr.To[int32](4), nil)), ptJob(elastic(ptr.To[int32](2), ptr.To[int32](4), nil)),
			[]wantErr{invalid("spec.elastic.minReplicas")}},
		{"maximum changed", ptJob(elastic(ptr.To[int32](1), ptr.To[int32](4), nil)), ptJob(elastic(ptr.To[int32](1), ptr.To[int32](8), nil)),
			[]wantErr{invalid("spec.elastic.maxReplicas")}},
		{"elastic removed", ptJob(elastic(ptr.To[int32](1), ptr.To[int32](4), nil)), ptJob(),
			[]wantErr{invalid("spec.elastic.minReplicas"), invalid("spec.elastic.maxReplicas")}},
		{"elastic added", ptJob(), ptJob(elastic(ptr.To[int32](1), ptr.To[int32](4), nil)),
			[]wantErr{invalid("spec.elastic.minReplicas"), invalid("spec.elastic.maxReplicas")}},
		{"elastic switched off", ptJob(elastic(ptr.To[int32](1), ptr.To[int32](4), nil)), ptJob(func(j *batch.PyTorchTrainingJob) {
			j.Spec.Elastic = &batch.ElasticConfig{MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](4)}
		}), nil},
		{"expected replicas changed while running", ptJob(running, elastic(ptr.To[int32](1), ptr.To[int32](4), ptr.To[int32](2))),
			ptJob(running, elastic(ptr.To[int32](1), ptr.To[int32](4), ptr.To[int32](4))), nil},
		{"elastic switched off while running", ptJob(running, elastic(ptr.To[int32](1), ptr.To[int32](4), nil)), ptJob(running, func(j *batch.PyTorchTrainingJob) {
			j.Spec.Elastic = &batch.ElasticConfig{MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](4)}
		}), []wantErr{forbidden("spec.elastic.enabled")}},
		{"elastic switched off while pausing", ptJob(running, elastic(ptr.To[int32](1), ptr.To[int32](4), nil)), ptJob(running, func(j *batch.PyTorchTrainingJob) {
			j.Spec.Elastic = &batch.ElasticConfig{MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](4)}
			batch.Pause(&j.Spec.TrainingJobSpec)
		}), nil},
		{"elastic switched on over the static default", ptJob(torchrun("1"), static, func(j *batch.PyTorchTrainingJob) {
			j.Spec.Elastic = &batch.ElasticConfig{MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](4)}
		}), ptJob(torchrun("1"), static, elastic(ptr.To[int32](1), ptr.To[int32](4), nil)),
			[]wantErr{invalid("spec.torchrunConfig.rdzvBackend")}},
		{"torchrun changed", ptJob(torchrun("1")), ptJob(torchrun("gpu")), nil},
		{"torchrun switched on", ptJob(), ptJob(torchrun("4")), nil},
		{"new torchrun invalid", ptJob(), ptJob(torchrun("0")), []wantErr{invalid("spec.torchrunConfig.procPerNode")}},
		{"master removed", ptJob(), ptJob(func(j *batch.PyTorchTrainingJob) { j.Spec.ReplicaSpecs = j.Spec.ReplicaSpecs[1:] }),
			[]wantErr{forbidden("spec.replicaSpecs")}},
		{"worker template changed", ptJob(), ptJob(func(j *batch.PyTorchTrainingJob) {
			j.Spec.ReplicaSpecs[1].Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": quantity("8")}
		}), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidatePyTorchTrainingJobUpdate(tc.job, tc.old), tc.want...)
		})
	}
}

func TestStatusUpdate(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	later := metav1.NewTime(now.Add(time.Hour))
	condition := func(typ, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: reason, LastTransitionTime: now}
	}
	withStatus := func(mod func(*batch.TrainingJobStatus)) *batch.TensorFlowTrainingJob {
		job := tfJob()
		job.Status = batch.TrainingJobStatus{
			ObservedGeneration: 1,
			Phase:              batch.JobRunning,
			Conditions:         []metav1.Condition{condition(batch.ConditionInitialized, "PodsCreated"), condition(batch.ConditionRunning, "AllPodsRunning")},
			Tasks: []batch.TaskStatus{{Type: batch.ReplicaTypeWorker, RestartCount: 1, ReplicaStatus: []batch.ReplicaStatus{
				{Name: "mnist-worker-0", Phase: batch.ReplicaRunning},
				{Name: "mnist-worker-1", Phase: batch.ReplicaCreating},
			}}},
			Aggregate:    batch.Aggregate{Running: 1, Creating: 1},
			BackoffCount: 1,
			Tensorboard:  &batch.DependentStatus{Name: "tensorboard", Ready: true, Type: "Normal"},
			StartTime:    &now,
		}
		if mod != nil {
			mod(&job.Status)
		}
		return job
	}
	phase := func(p batch.JobPhase) *batch.TensorFlowTrainingJob {
		return withStatus(func(s *batch.TrainingJobStatus) { s.Phase = p })
	}
	succeeded := func() *batch.TensorFlowTrainingJob {
		return withStatus(func(s *batch.TrainingJobStatus) {
			s.Phase = batch.JobSucceeded
			s.CompletionTime = &later
			s.Conditions = append(s.Conditions, condition(batch.ConditionCompleted, "Succeeded"))
		})
	}

	cases := []struct {
		name     string
		old, job *batch.TensorFlowTrainingJob
		want     []wantErr
	}{
		{"first report", tfJob(), withStatus(nil), nil},
		{"empty status", tfJob(), tfJob(), nil},
		{"running to succeeded", phase(batch.JobRunning), withStatus(func(s *batch.TrainingJobStatus) {
			s.Phase = batch.JobSucceeded
			s.CompletionTime = &later
			s.Conditions = append(s.Conditions, condition(batch.ConditionCompleted, "Succeeded"))
		}), nil},
		{"running to paused", phase(batch.JobRunning), phase(batch.JobPaused), nil},
		{"failed stays failed", phase(batch.JobFailed), phase(batch.JobFailed), nil},
		{"succeeded back to running", phase(batch.JobSucceeded), phase(batch.JobRunning), []wantErr{invalid("status.phase")}},
		{"failed to succeeded", phase(batch.JobFailed), phase(batch.JobSucceeded), []wantErr{invalid("status.phase")}},
		{"failed to no phase", phase(batch.JobFailed), phase(""), []wantErr{invalid("status.phase")}},
		{"unknown phase", tfJob(), phase("Done"), []wantErr{notSupported("status.phase")}},
		{"condition without reason", tfJob(), withStatus(func(s *batch.TrainingJobStatus) { s.Conditions[0].Reason = "" }),
			[]wantErr{required("status.conditions[0].reason")}},
		{"condition twice", tfJob(), withStatus(func(s *batch.TrainingJobStatus) { s.Conditions[1].Type = s.Conditions[0].Type }),
			[]wantErr{duplicate("status.conditions[1]")}},
		{"condition status unknown", tfJob(), withStatus(func(s *batch.TrainingJobStatus) { s.Conditions[0].Status = "Yes" }),
			[]wantErr{notSupported("status.conditions[0].status")}},
		{"negative observed generation", tfJob(), withStatus(func(s *batch.TrainingJobStatus) { s.ObservedGeneration = -1 }),
			[]wantErr{invalid("status.observedGeneration")}},
		{"negative backoff count", tfJob(), withStatus(func(s *batch.TrainingJobStatus) { s.BackoffCount = -1 }),
			[]wantErr{invalid("status.backoffCount")}},
		{"negative counts", tfJob(), withStatus(func(s *batch.TrainingJobStatus) {
			s.Aggregate.Failed = -1
			s.Aggregate.Deleted = -2
		}), []wantErr{invalid("status.aggregate.failed"), invalid("status.aggregate.deleted")}},
		{"negative restart count", tfJob(), withStatus(func(s *batch.TrainingJobStatus) { s.Tasks[0].RestartCount = -1 }),
			[]wantErr{invalid("status.tasks[0].restartCount")}},
		{"negative replica restart count", tfJob(), withStatus(func(s *batch.TrainingJobStatus) {
			s.Tasks[0].ReplicaStatus[1].RestartCount = -1
			s.Tasks[0].ReplicaStatus[0].RestartCount = 3
		}), []wantErr{invalid("status.tasks[0].replicaStatus[1].restartCount")}},
		{"replica waiting to restart", tfJob(), withStatus(func(s *batch.TrainingJobStatus) {
			r := &s.Tasks[0].ReplicaStatus[1]
			r.Phase, r.Reason, r.RestartAt, r.RestartCount = batch.ReplicaFailed, "BackOff", &later, 2
		}), nil},
		{"replica reason too long", tfJob(), withStatus(func(s *batch.TrainingJobStatus) {
			s.Tasks[0].ReplicaStatus[1].Reason = strings.Repeat("R", batch.MaxReplicaStatusReasonLength+1)
		}), []wantErr{tooLong("status.tasks[0].replicaStatus[1].reason")}},
		{"how a container ended, within its bounds", tfJob(), withStatus(func(s *batch.TrainingJobStatus) {
			s.Tasks[0].ReplicaStatus[1].Containers = []batch.ContainerStatus{{Name: "tensorflow", State: "Terminated", ExitCode: 137,
				Reason: "OOMKilled", LastTermination: &batch.ContainerTermination{ExitCode: 137, Reason: "OOMKilled",
					Message: strings.Repeat("m", batch.MaxTerminationMessageBytes)}}}
		}), nil},
		{"container reasons and termination message too long", tfJob(), withStatus(func(s *batch.TrainingJobStatus) {
			s.Tasks[0].ReplicaStatus[1].Containers = []batch.ContainerStatus{{Name: "tensorflow",
				Reason: strings.Repeat("R", batch.MaxContainerReasonLength+1),
				LastTermination: &batch.ContainerTermination{Reason: strings.Repeat("R", batch.MaxContainerReasonLength+1),
					Message: strings.Repeat("m", batch.MaxTerminationMessageBytes+1)}}}
		}), []wantErr{
			tooLong("status.tasks[0].replicaStatus[1].containers[0].reason"),
			tooLong("status.tasks[0].replicaStatus[1].containers[0].lastTermination.reason"),
			tooLong("status.tasks[0].replicaStatus[1].containers[0].lastTermination.message"),
		}},
		{"unknown container state", tfJob(), withStatus(func(s *batch.TrainingJobStatus) {
			s.Tasks[0].ReplicaStatus[1].Containers = []batch.ContainerStatus{{Name: "tensorflow", State: "Crashed"}}
		}), []wantErr{notSupported("status.tasks[0].replicaStatus[1].containers[0].state")}},
		{"task type missing", tfJob(), withStatus(func(s *batch.TrainingJobStatus) { s.Tasks[0].Type = "" }),
			[]wantErr{required("status.tasks[0].type")}},
		{"task twice", tfJob(), withStatus(func(s *batch.TrainingJobStatus) { s.Tasks = append(s.Tasks, s.Tasks[0]) }),
			[]wantErr{duplicate("status.tasks[1].type")}},
		{"unknown replica phase", tfJob(), withStatus(func(s *batch.TrainingJobStatus) { s.Tasks[0].ReplicaStatus[1].Phase = "Starting" }),
			[]wantErr{notSupported("status.tasks[0].replicaStatus[1].phase")}},
		{"unknown TensorBoard status type", tfJob(), withStatus(func(s *batch.TrainingJobStatus) { s.Tensorboard.Type = "Error" }),
			[]wantErr{notSupported("status.tensorboard.type")}},
		{"completed before it started", tfJob(), withStatus(func(s *batch.TrainingJobStatus) {
			s.Phase = batch.JobSucceeded
			s.StartTime, s.CompletionTime = &later, &now
		}), []wantErr{invalid("status.completionTime")}},
		{"completion time on a running job", tfJob(), withStatus(func(s *batch.TrainingJobStatus) { s.CompletionTime = &later }),
			[]wantErr{invalid("status.completionTime")}},
		{"running to failed", phase(batch.JobRunning), withStatus(func(s *batch.TrainingJobStatus) {
			s.Phase = batch.JobFailed
			s.CompletionTime = &later
			s.Conditions = append(s.Conditions, condition(batch.ConditionCompleted, "Failed"), condition(batch.ConditionFailed, "BackoffLimitExceeded"))
		}), nil},
		{"completed while running", phase(batch.JobRunning), withStatus(func(s *batch.TrainingJobStatus) {
			s.Conditions = append(s.Conditions, condition(batch.ConditionCompleted, "Succeeded"))
		}), []wantErr{invalid("status.conditions[2].status")}},
		{"completed with another reason than the phase", phase(batch.JobRunning), withStatus(func(s *batch.TrainingJobStatus) {
			s.Phase = batch.JobSucceeded
			s.Conditions = append(s.Conditions, condition(batch.ConditionCompleted, "Failed"))
		}), []wantErr{invalid("status.conditions[2].reason")}},
		{"failed condition on a succeeded job", phase(batch.JobRunning), withStatus(func(s *batch.TrainingJobStatus) {
			s.Phase = batch.JobSucceeded
			s.Conditions = append(s.Conditions, condition(batch.ConditionCompleted, "Succeeded"), condition(batch.ConditionFailed, "DeadlineExceeded"))
		}), []wantErr{invalid("status.conditions[3].status")}},
		{"completed condition removed", succeeded(), withStatus(func(s *batch.TrainingJobStatus) {
			s.Phase = batch.JobSucceeded
			s.CompletionTime = &later
		}), []wantErr{forbidden("status.conditions")}},
		{"completed condition set to False", succeeded(), withStatus(func(s *batch.TrainingJobStatus) {
			s.Phase = batch.JobSucceeded
			s.CompletionTime = &later
			s.Conditions = append(s.Conditions, condition(batch.ConditionCompleted, "Succeeded"))
			s.Conditions[2].Status = metav1.ConditionFalse
		}), []wantErr{forbidden("status.conditions")}},
		{"completion time moved", succeeded(), withStatus(func(s *batch.TrainingJobStatus) {
			s.Phase = batch.JobSucceeded
			s.CompletionTime = &now
			s.Conditions = append(s.Conditions, condition(batch.ConditionCompleted, "Succeeded"))
		}), []wantErr{invalid("status.completionTime")}},
		{"succeeded job reported again", succeeded(), succeeded(), nil},
		{"metadata name changed", tfJob(), func() *batch.TensorFlowTrainingJob {
			job := withStatus(nil)
			job.Name = "renamed"
			return job
		}(), []wantErr{invalid("metadata.name")}},
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidateTrainingJobStatusUpdate(tc.job, tc.old), tc.want...)
		})
	}

	t.Run("PyTorch", func(t *testing.T) {
		old, job := ptJob(), ptJob()
		old.Status.Phase = batch.JobSucceeded
		job.Status.Phase = batch.JobResuming
		expectErrors(t, ValidateTrainingJobStatusUpdate(job, old), invalid("status.phase"))
	})
}

// TestTopologyUpdate checks when replica counts and pod templates may change:
// while the job is paused or before any of its pods exists, and in the update
// that pauses it; never once it finished.
func TestTopologyUpdate(t *testing.T) {
	const (
		workers  = "spec.replicaSpecs[2].replicas"
		template = "spec.replicaSpecs[2].template"
	)
	// status sets the stored job's phase and, with pods, a worker with a pod.
	status := func(phase batch.JobPhase, pods bool) func(*batch.TensorFlowTrainingJob) {
		return func(j *batch.TensorFlowTrainingJob) {
			j.Status.Phase = phase
			replica := batch.ReplicaStatus{Name: "mnist-worker-0", Phase: batch.ReplicaCreating}
			if pods {
				replica.UID, replica.Phase = "5f0c3a4e-0000-4000-8000-000000000001", batch.ReplicaRunning
			}
			j.Status.Tasks = []batch.TaskStatus{{Type: batch.ReplicaTypeWorker, ReplicaStatus: []batch.ReplicaStatus{replica}}}
		}
	}
	paused := func(j *batch.TensorFlowTrainingJob) { batch.Pause(&j.Spec.TrainingJobSpec) }
	resumed := func(j *batch.TensorFlowTrainingJob) { batch.Resume(&j.Spec.TrainingJobSpec) }
	debugged := func(j *batch.TensorFlowTrainingJob) { batch.Debug(&j.Spec.TrainingJobSpec, nil) }
	moreWorkers := func(j *batch.TensorFlowTrainingJob) { j.Spec.ReplicaSpecs[2].Replicas = ptr.To[int32](4) }
	newImage := func(j *batch.TensorFlowTrainingJob) {
		j.Spec.ReplicaSpecs[2].Template.Spec.Containers[0].Image = "docker.io/library/train:2"
	}
	running := status(batch.JobRunning, true)

	cases := []struct {
		name     string
		old, job *batch.TensorFlowTrainingJob
		want     []wantErr
	}{
		{"new job without a status", tfJob(), tfJob(moreWorkers, newImage), nil},
		{"pending without pods", tfJob(status(batch.JobPending, false)), tfJob(moreWorkers, newImage), nil},
		{"pending with a pod", tfJob(status(batch.JobPending, true)), tfJob(moreWorkers),
			[]wantErr{forbidden(workers)}},
		{"no phase yet but a pod", tfJob(status("", true)), tfJob(newImage), []wantErr{forbidden(template)}},
		{"running: replicas", tfJob(running), tfJob(moreWorkers), []wantErr{forbidden(workers)}},
		{"running: template", tfJob(running), tfJob(newImage), []wantErr{forbidden(template)}},
		{"running: both, on two types", tfJob(running), tfJob(moreWorkers, newImage, func(j *batch.TensorFlowTrainingJob) {
			j.Spec.ReplicaSpecs[1].Replicas = ptr.To[int32](2)
		}), []wantErr{forbidden(workers), forbidden(template), forbidden("spec.replicaSpecs[1].replicas")}},
		{"running without pods reported", tfJob(status(batch.JobRunning, false)), tfJob(moreWorkers), []wantErr{forbidden(workers)}},
		{"resuming", tfJob(status(batch.JobResuming, false)), tfJob(moreWorkers), []wantErr{forbidden(workers)}},
		{"unknown", tfJob(status(batch.JobUnknown, false)), tfJob(moreWorkers), []wantErr{forbidden(workers)}},
		{"running: other fields may change", tfJob(running), tfJob(func(j *batch.TensorFlowTrainingJob) {
			j.Spec.ReplicaSpecs[2].RestartPolicy = batch.RestartPolicyOnFailure
			j.Spec.RunPolicy.BackoffLimit = ptr.To[int32](10)
			j.Spec.RunPolicy.SuccessPolicy = batch.SuccessPolicyAllWorkers
			j.Labels = map[string]string{"team": "vision"}
		}), nil},
		{"running: an unset count written as 1", tfJob(running, func(j *batch.TensorFlowTrainingJob) { j.Spec.ReplicaSpecs[0].Replicas = nil }),
			tfJob(running), nil},
		{"running: 1 written as unset", tfJob(running), tfJob(func(j *batch.TensorFlowTrainingJob) { j.Spec.ReplicaSpecs[0].Replicas = nil }), nil},
		{"paused by the spec", tfJob(running, paused), tfJob(paused, moreWorkers, newImage), nil},
		{"paused by the spec with the deprecated enable", tfJob(running, func(j *batch.TensorFlowTrainingJob) {
			// enable was folded into enabled when the stored job was converted.
			j.Spec.RunMode = &batch.RunMode{Pause: &batch.PauseMode{Enabled: true}}
		}), tfJob(paused, moreWorkers), nil},
		{"pause mode present but off", tfJob(running, paused, resumed), tfJob(paused, resumed, moreWorkers), []wantErr{forbidden(workers)}},
		{"phase Paused", tfJob(status(batch.JobPaused, false)), tfJob(moreWorkers, newImage), nil},
		{"resumed and resized at once", tfJob(running, paused), tfJob(paused, resumed, moreWorkers), nil},
		{"paused and resized at once", tfJob(running), tfJob(paused, moreWorkers, newImage), nil},
		{"debugged and resized at once", tfJob(running), tfJob(debugged, moreWorkers), []wantErr{forbidden(workers)}},
		{"succeeded", tfJob(status(batch.JobSucceeded, true)), tfJob(moreWorkers), []wantErr{forbidden(workers)}},
		{"failed, even paused", tfJob(status(batch.JobFailed, false), paused), tfJob(paused, newImage), []wantErr{forbidden(template)}},
		{"failed: other fields may change", tfJob(status(batch.JobFailed, true)), tfJob(func(j *batch.TensorFlowTrainingJob) {
			j.Spec.RunPolicy.TTLSecondsAfterFinished = ptr.To[int32](60)
		}), nil},
		{"type renamed is reported on the type only", tfJob(running), tfJob(moreWorkers, func(j *batch.TensorFlowTrainingJob) {
			j.Spec.ReplicaSpecs[1].Type, j.Spec.ReplicaSpecs[2].Type = batch.ReplicaTypeEvaluator, batch.ReplicaTypePS
		}), []wantErr{invalid("spec.replicaSpecs[1].type"), invalid("spec.replicaSpecs[2].type")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A spec update keeps the stored status (the strategy copies it).
			tc.job.Status = tc.old.Status
			errs := ValidateTensorFlowTrainingJobUpdate(tc.job, tc.old)
			expectErrors(t, errs, tc.want...)
			for _, err := range errs {
				if err.Type != field.ErrorTypeForbidden {
					continue
				}
				want := "pause the job first (kubectl training pause"
				if tc.old.Status.Phase.IsFinished() {
					want = "the job has finished"
				}
				if !strings.Contains(err.Detail, want) {
					t.Errorf("%s: the message %q does not say %q", err.Field, err.Detail, want)
				}
			}
		})
	}

	t.Run("PyTorch", func(t *testing.T) {
		old := ptJob(func(j *batch.PyTorchTrainingJob) {
			j.Status.Phase = batch.JobRunning
			j.Spec.Elastic = &batch.ElasticConfig{Enabled: true, MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](4)}
		})
		job := old.DeepCopy()
		job.Spec.ReplicaSpecs[1].Replicas = ptr.To[int32](3)
		// Elastic jobs get no exception yet.
		expectErrors(t, ValidatePyTorchTrainingJobUpdate(job, old), forbidden("spec.replicaSpecs[1].replicas"))
		batch.Pause(&job.Spec.TrainingJobSpec)
		expectErrors(t, ValidatePyTorchTrainingJobUpdate(job, old))
	})
}
