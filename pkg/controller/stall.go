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
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// ReasonStalled is the Failed condition's reason, and the event's, for a
// job that stopped progressing.
const ReasonStalled = "Stalled"

// planStall applies spec.runPolicy.progressDeadlineSeconds. The clock runs
// only while every replica runs, from the last of them starting or the
// last report that moved the step or epoch, whichever is later: time
// paused, queued or starting never counts. It returns the reason and
// message of a job failure under stallPolicy Fail.
func (r *reconciler) planStall(debug bool) (reason, message string) {
	deadline := r.spec.RunPolicy.ProgressDeadlineSeconds
	if deadline == nil || debug {
		r.resolveStalled("the job has no progress deadline now")
		return "", ""
	}
	since, ok := r.allRunningSince()
	if !ok {
		return "", ""
	}
	from, p := since, r.status.Progress
	if p != nil && p.AdvanceTime != nil && p.AdvanceTime.After(from) {
		from = p.AdvanceTime.Time
	}
	due := from.Add(time.Duration(*deadline) * time.Second)
	if r.now.Before(due) {
		r.requeueAt(due)
		r.resolveStalled("the job makes progress")
		return "", ""
	}
	message = r.stallMessage(*deadline)
	if c := meta.FindStatusCondition(r.status.Conditions, v1beta1.ConditionStalled); c == nil || c.Status != metav1.ConditionTrue {
		r.event(corev1.EventTypeWarning, ReasonStalled, "Stalled: %s (stall policy %s)", message, stallPolicy(r.spec))
		r.status.Stall = r.stallRecord()
	}
	r.setCondition(v1beta1.ConditionStalled, metav1.ConditionTrue, v1beta1.ReasonProgressDeadlineExceeded, message)
	switch stallPolicy(r.spec) {
	case v1beta1.StallPolicyFail:
		r.stallLogs = true
		return ReasonStalled, message
	case v1beta1.StallPolicyRestart:
		limit := backoffLimit(r.spec)
		if r.status.BackoffCount >= limit {
			r.stallLogs = true
			return ReasonBackoffLimitExceeded, fmt.Sprintf("the job has used all %d of its restarts, and %s", limit, message)
		}
		if !r.stopRunning(StopStalled, message) {
			return "", ""
		}
		r.stallLogs = true
		r.status.BackoffCount++
		r.restartAll(fmt.Sprintf("The job stalled; restarting every replica (restart %d of %d)", r.status.BackoffCount, limit))
	}
	return "", ""
}

func stallPolicy(spec *v1beta1.TrainingJobSpec) v1beta1.StallPolicy {
	if spec.RunPolicy.StallPolicy == "" {
		return v1beta1.StallPolicyNone
	}
	return spec.RunPolicy.StallPolicy
}

// resolveStalled turns a True Stalled condition False.
func (r *reconciler) resolveStalled(why string) {
	if c := meta.FindStatusCondition(r.status.Conditions, v1beta1.ConditionStalled); c != nil && c.Status == metav1.ConditionTrue {
		r.setCondition(v1beta1.ConditionStalled, metav1.ConditionFalse, v1beta1.ReasonProgressing, why)
	}
}

// allRunningSince is when the last replica's training container started
// running, and false unless every replica's pod runs now.
func (r *reconciler) allRunningSince() (time.Time, bool) {
	var since time.Time
	if len(r.slots) == 0 {
		return since, false
	}
	for _, s := range r.slots {
		p := s.pod
		if p == nil || s.replacing || p.DeletionTimestamp != nil || podOutcome(p) != corev1.PodRunning {
			return since, false
		}
		started, ok := r.trainingStarted(p)
		if !ok {
			return since, false
		}
		if started.After(since) {
			since = started
		}
	}
	return since, true
}

// trainingStarted is when a pod's training container started running.
func (r *reconciler) trainingStarted(p *corev1.Pod) (time.Time, bool) {
	name := ""
	if i := podbuilder.TrainingContainer(r.kind, &p.Spec); i >= 0 {
		name = p.Spec.Containers[i].Name
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == name && cs.State.Running != nil {
			if t := cs.State.Running.StartedAt; !t.IsZero() {
				return t.Time, true
			}
			// A runtime that gives no start: the pod's, when it has one.
			if p.Status.StartTime != nil {
				return p.Status.StartTime.Time, true
			}
		}
	}
	return time.Time{}, false
}

func (r *reconciler) stallMessage(deadline int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "no progress report changed the step or epoch for %ds while every replica ran", deadline)
	p := r.status.Progress
	switch {
	case p == nil || p.ReportTime == nil:
		b.WriteString("; the job never reported progress")
	default:
		b.WriteString("; the last report")
		if p.Step != nil {
			fmt.Fprintf(&b, " was at step %d", *p.Step)
		}
		if p.Epoch != nil {
			fmt.Fprintf(&b, " (epoch %d)", *p.Epoch)
		}
		if p.Reporter != "" {
			fmt.Fprintf(&b, ", from %s", p.Reporter)
		}
		fmt.Fprintf(&b, ", at %s", p.ReportTime.UTC().Format(time.RFC3339))
	}
	return b.String()
}

func (r *reconciler) stallRecord() *v1beta1.StallStatus {
	st := &v1beta1.StallStatus{Time: *r.metaNow()}
	if p := r.status.Progress; p != nil {
		st.Reporter, st.Step, st.Epoch = p.Reporter, p.Step, p.Epoch
	}
	return st
}

// restartAll replaces every replica at once, without a backoff delay: the
// stop of a stalled job.
func (r *reconciler) restartAll(message string) {
	r.restartingJob = true
	r.event(corev1.EventTypeWarning, ReasonRestartingJob, "%s", message)
	r.replaceEveryReplica("the job stalled")
}

// readStallLogs keeps the last lines of each replica's training container
// in status.stall before the pods go, so that a hang can be read after.
func (r *reconciler) readStallLogs(ctx context.Context) {
	if r.status.Stall == nil {
		r.status.Stall = r.stallRecord()
	}
	var logs []v1beta1.ReplicaLogTail
	for _, s := range r.slots {
		if len(logs) == batch.MaxStallLogReplicas {
			break
		}
		if s.pod == nil {
			continue
		}
		logs = append(logs, r.logTail(ctx, s.pod, "", batch.MaxStallLogLines, batch.MaxStallLogBytes))
	}
	r.status.Stall.Logs = logs
}
