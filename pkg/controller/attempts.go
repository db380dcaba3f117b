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

package controller

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// The history of a job's attempts (status.attempts): an attempt opens when
// the controller creates pods for a job that has none running for it, and
// ends with the stop that removes them (stopRunning) or with the job's
// outcome (finish). Replicas that fail in between are recorded with the end
// of their log, read before their pod is deleted, so that a failure can be
// read after its pod is gone. Each change rides on a status write the
// controller makes anyway: creating pods, stopping them, or recording an
// exit.

// Reasons for a failed replica whose pod left no termination to read.
const (
	failedReplicaVanished        = "Vanished"
	failedReplicaDeletedWhileRan = "DeletedWhileRunning"
)

// openAttempt returns the job's attempt that has not ended, or nil.
func openAttempt(st *v1beta1.TrainingJobStatus) *v1beta1.Attempt {
	if n := len(st.Attempts); n > 0 && st.Attempts[n-1].EndTime == nil {
		return &st.Attempts[n-1]
	}
	return nil
}

// beginAttempt opens an attempt when pods are about to be created for a
// job that has no attempt open: its first start, or a start after a stop.
func (r *reconciler) beginAttempt() {
	if len(r.creates) == 0 || openAttempt(r.status) != nil {
		return
	}
	newAttempt(r.status, r.now)
}

// newAttempt opens the job's next attempt at now, resuming from its latest
// checkpoint, and keeps the newest attempts only.
func newAttempt(st *v1beta1.TrainingJobStatus, now time.Time) {
	st.AttemptCount++
	a := v1beta1.Attempt{Number: st.AttemptCount, StartTime: apiTime(now)}
	if c := st.Checkpoint; c != nil && c.Latest != nil {
		a.ResumedFrom = attemptCheckpoint(c.Latest)
	}
	attempts := append(st.Attempts, a)
	if over := len(attempts) - batch.MaxAttempts; over > 0 {
		attempts = slices.Clone(attempts[over:])
	}
	// Only the newest attempts list their failed replicas.
	for i := range max(len(attempts)-batch.MaxAttemptsWithFailedReplicas, 0) {
		attempts[i].FailedReplicas = nil
	}
	st.Attempts = attempts
}

// endAttempt closes the open attempt, if any, at now, with why it ended,
// what it wrote last and the steps it made.
func endAttempt(st *v1beta1.TrainingJobStatus, now time.Time, reason, message string) {
	a := openAttempt(st)
	if a == nil {
		return
	}
	a.EndTime = ptr.To(apiTime(now))
	if a.EndTime.Before(&a.StartTime) {
		a.EndTime = a.StartTime.DeepCopy()
	}
	a.Reason = v1beta1.CutReason(reason)
	a.Message = batch.CutBytes(message, batch.MaxAttemptMessageBytes)
	if c := st.Checkpoint; c != nil && c.Latest != nil && !c.Latest.ReportTime.Time.Before(a.StartTime.Time) {
		a.LastCheckpoint = attemptCheckpoint(c.Latest)
	}
	if p := st.Progress; p != nil && p.Step != nil && p.ReportTime != nil && !p.ReportTime.Time.Before(a.StartTime.Time) {
		from := int64(0)
		if a.ResumedFrom != nil && a.ResumedFrom.Step != nil {
			from = *a.ResumedFrom.Step
		}
		a.Steps = ptr.To(max(*p.Step-from, 0))
	}
}

func attemptCheckpoint(c *v1beta1.CheckpointRecord) *v1beta1.AttemptCheckpoint {
	return &v1beta1.AttemptCheckpoint{Path: c.Path, Step: c.Step}
}

// noteFailedReplica records a replica's failure in the open attempt, once
// per pod, and plans the read of its log tail (readAttemptLogs).
func (r *reconciler) noteFailedReplica(s *slot) {
	ex := s.exit
	a := openAttempt(r.status)
	if ex == nil || ex.succeeded || s.replacing || a == nil {
		return
	}
	uid := types.UID("")
	switch {
	case ex.pod != nil:
		uid = ex.pod.UID
	case s.prev != nil:
		uid = s.prev.UID
	}
	for i := range a.FailedReplicas {
		if a.FailedReplicas[i].UID == uid && a.FailedReplicas[i].Name == s.name {
			return
		}
	}
	a.FailedReplicaCount++
	if len(a.FailedReplicas) >= batch.MaxAttemptFailedReplicas {
		return
	}
	f := v1beta1.FailedReplica{Name: s.name, UID: uid, Reason: r.failedReplicaReason(ex), Time: apiTime(r.now)}
	switch {
	case ex.known:
		f.ExitCode = ptr.To(ex.code)
	case ex.preflight != nil:
		f.ExitCode = ptr.To(ex.preflight.ExitCode)
	}
	if ex.pod != nil {
		f.Node = ex.pod.Spec.NodeName
		read := attemptLogRead{attempt: a.Number, index: len(a.FailedReplicas), pod: ex.pod}
		if ex.preflight != nil {
			// The training container never ran: the check's log says why.
			read.container = batch.PreflightContainerName
		}
		r.attemptLogReads = append(r.attemptLogReads, read)
	}
	a.FailedReplicas = append(a.FailedReplicas, f)
}

// failedReplicaReason is one word for how a replica's pod failed: the
// pod's own reason (Evicted, DeadlineExceeded, ...), else its deciding
// container's (Error, OOMKilled, ...).
func (r *reconciler) failedReplicaReason(ex *replicaExit) string {
	p := ex.pod
	switch {
	case p == nil:
		return failedReplicaVanished
	case ex.preflight != nil:
		return v1beta1.SuspectNodePreflightFailed
	case p.Status.Reason != "":
		return v1beta1.CutReason(p.Status.Reason)
	case podOutcome(p) != corev1.PodFailed:
		return failedReplicaDeletedWhileRan
	}
	if t := failedTermination(r.kind, p); t != nil && t.Reason != "" {
		return v1beta1.CutReason(t.Reason)
	}
	return string(corev1.PodFailed)
}
