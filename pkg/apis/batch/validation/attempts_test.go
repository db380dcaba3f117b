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
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

// TestAttemptsBounds: a status write, whoever makes it, cannot grow
// status.attempts past its bounds or make it contradict itself; each
// refusal names the field.
func TestAttemptsBounds(t *testing.T) {
	start := metav1.NewTime(time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))
	attempts := func(n int) []batch.Attempt {
		out := make([]batch.Attempt, n)
		for i := range out {
			out[i] = batch.Attempt{Number: int32(i + 1), StartTime: start}
		}
		return out
	}
	failedWithLogs := func(n int, logs string) []batch.FailedReplica {
		out := make([]batch.FailedReplica, n)
		for i := range out {
			out[i] = batch.FailedReplica{Name: "j-worker-0", Logs: logs, Time: start}
		}
		return out
	}
	cases := []struct {
		name   string
		status func(*batch.TrainingJobStatus)
		want   []wantErr
	}{
		{"a full history", func(s *batch.TrainingJobStatus) {
			s.Attempts, s.AttemptCount = attempts(batch.MaxAttempts), 100
			s.Attempts[batch.MaxAttempts-1].FailedReplicas = failedWithLogs(batch.MaxAttemptFailedReplicas, strings.Repeat("x", batch.MaxAttemptLogBytes))
			s.Attempts[batch.MaxAttempts-1].FailedReplicaCount = 7
		}, nil},
		{"too many attempts", func(s *batch.TrainingJobStatus) {
			s.Attempts, s.AttemptCount = attempts(batch.MaxAttempts+1), batch.MaxAttempts+1
		}, []wantErr{tooMany("status.attempts")}},
		{"a count below the list", func(s *batch.TrainingJobStatus) {
			s.Attempts, s.AttemptCount = attempts(3), 2
		}, []wantErr{invalid("status.attemptCount")}},
		{"numbers out of order", func(s *batch.TrainingJobStatus) {
			s.Attempts, s.AttemptCount = attempts(2), 2
			s.Attempts[1].Number = 1
		}, []wantErr{invalid("status.attempts[1].number")}},
		{"an end before the start", func(s *batch.TrainingJobStatus) {
			s.Attempts, s.AttemptCount = attempts(1), 1
			s.Attempts[0].EndTime = ptr.To(metav1.NewTime(start.Add(-time.Second)))
		}, []wantErr{invalid("status.attempts[0].endTime")}},
		{"negative steps and a long message", func(s *batch.TrainingJobStatus) {
			s.Attempts, s.AttemptCount = attempts(1), 1
			s.Attempts[0].Steps = ptr.To[int64](-1)
			s.Attempts[0].Message = strings.Repeat("m", batch.MaxAttemptMessageBytes+1)
		}, []wantErr{invalid("status.attempts[0].steps"), tooLong("status.attempts[0].message")}},
		{"too many failed replicas", func(s *batch.TrainingJobStatus) {
			s.Attempts, s.AttemptCount = attempts(1), 1
			s.Attempts[0].FailedReplicas = failedWithLogs(batch.MaxAttemptFailedReplicas+1, "")
			s.Attempts[0].FailedReplicaCount = batch.MaxAttemptFailedReplicas + 1
		}, []wantErr{tooMany("status.attempts[0].failedReplicas")}},
		{"a failed replica count below the list", func(s *batch.TrainingJobStatus) {
			s.Attempts, s.AttemptCount = attempts(1), 1
			s.Attempts[0].FailedReplicas = failedWithLogs(2, "")
			s.Attempts[0].FailedReplicaCount = 1
		}, []wantErr{invalid("status.attempts[0].failedReplicaCount")}},
		{"a log tail too long", func(s *batch.TrainingJobStatus) {
			s.Attempts, s.AttemptCount = attempts(1), 1
			s.Attempts[0].FailedReplicas = failedWithLogs(1, strings.Repeat("x", batch.MaxAttemptLogBytes+1))
			s.Attempts[0].FailedReplicaCount = 1
		}, []wantErr{tooLong("status.attempts[0].failedReplicas[0].logs")}},
		{"failed replicas listed in an old attempt", func(s *batch.TrainingJobStatus) {
			n := batch.MaxAttemptsWithFailedReplicas + 1
			s.Attempts, s.AttemptCount = attempts(n), int32(n)
			s.Attempts[0].FailedReplicas = failedWithLogs(1, "the end")
			s.Attempts[0].FailedReplicaCount = 1
		}, []wantErr{forbidden("status.attempts[0].failedReplicas")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old, job := ptJob(), ptJob()
			tc.status(&job.Status)
			expectErrors(t, ValidateTrainingJobStatusUpdate(job, old), tc.want...)
		})
	}
}

// TestNodeChecks: the exit codes that blame a node, the preflight check
// and status.suspectNodes refuse what they cannot mean, naming the field.
func TestNodeChecks(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))
	cases := []struct {
		name string
		mod  func(*batch.PyTorchTrainingJob)
		want []wantErr
	}{
		{"codes and a check", func(j *batch.PyTorchTrainingJob) {
			j.Spec.RunPolicy.NodeFailureExitCodes = []int32{1, 79, 255}
			j.Spec.RunPolicy.Preflight = &batch.Preflight{Command: []string{"nvidia-smi"}}
		}, nil},
		{"codes out of range or repeated", func(j *batch.PyTorchTrainingJob) {
			j.Spec.RunPolicy.NodeFailureExitCodes = []int32{0, 79, 79, 256}
		}, []wantErr{invalid("spec.runPolicy.nodeFailureExitCodes[0]"), duplicate("spec.runPolicy.nodeFailureExitCodes[2]"),
			invalid("spec.runPolicy.nodeFailureExitCodes[3]")}},
		{"a check without a command", func(j *batch.PyTorchTrainingJob) {
			j.Spec.RunPolicy.Preflight = &batch.Preflight{Image: " busybox"}
		}, []wantErr{required("spec.runPolicy.preflight.command"), invalid("spec.runPolicy.preflight.image")}},
		{"a check command too long", func(j *batch.PyTorchTrainingJob) {
			j.Spec.RunPolicy.Preflight = &batch.Preflight{Command: []string{strings.Repeat("x", batch.MaxCommandBytes)}}
		}, []wantErr{tooLong("spec.runPolicy.preflight.command")}},
		{"a template taking the check's name", func(j *batch.PyTorchTrainingJob) {
			j.Spec.RunPolicy.Preflight = &batch.Preflight{Command: []string{"true"}}
			pod := &j.Spec.ReplicaSpecs[0].Template.Spec
			pod.InitContainers = append(pod.InitContainers, container(batch.PreflightContainerName))
		}, []wantErr{invalid("spec.replicaSpecs[0].template.spec.initContainers[0].name")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidatePyTorchTrainingJob(ptJob(tc.mod)), tc.want...)
		})
	}

	nodes := func(n int) []batch.SuspectNode {
		out := make([]batch.SuspectNode, n)
		for i := range out {
			out[i] = batch.SuspectNode{Name: fmt.Sprintf("node-%d", i), Reason: "PreflightFailed", Time: at}
		}
		return out
	}
	statusCases := []struct {
		name  string
		nodes []batch.SuspectNode
		want  []wantErr
	}{
		{"a full list", nodes(batch.MaxSuspectNodes), nil},
		{"too many", nodes(batch.MaxSuspectNodes + 1), []wantErr{tooMany("status.suspectNodes")}},
		{"a node twice, one unnamed", append(nodes(2), batch.SuspectNode{Name: "node-1"}, batch.SuspectNode{}),
			[]wantErr{duplicate("status.suspectNodes[2].name"), required("status.suspectNodes[3].name")}},
	}
	for _, tc := range statusCases {
		t.Run(tc.name, func(t *testing.T) {
			old, job := ptJob(), ptJob()
			job.Status.SuspectNodes = tc.nodes
			expectErrors(t, ValidateTrainingJobStatusUpdate(job, old), tc.want...)
		})
	}
}
