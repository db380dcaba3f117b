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
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// Reasons of the Initialized and Running conditions, and of ReplicaFailure
// turning False once every replica runs; when Running is False its reason is
// the job's phase.
const (
	ReasonCreatingReplicas = "CreatingReplicas"
	ReasonReplicasCreated  = "ReplicasCreated"
	ReasonReplicasRunning  = "ReplicasRunning"
	ReasonReplicasHealthy  = "ReplicasHealthy"
)

// fillStatus derives tasks and counts from the planned replicas, and
// returns the Running condition that follows.
func (r *reconciler) fillStatus() decision {
	st := r.status
	st.ObservedGeneration = r.job.GetGeneration()
	prevTasks := map[v1beta1.ReplicaType]int32{}
	for _, t := range r.old.Tasks {
		prevTasks[t.Type] = t.RestartCount
	}
	tasks := make([]v1beta1.TaskStatus, 0, len(r.topo.Groups))
	for gi := range r.topo.Groups {
		g := &r.topo.Groups[gi]
		tasks = append(tasks, v1beta1.TaskStatus{
			Type:         g.Type,
			RestartCount: prevTasks[g.Type] + r.restarts[g.Type],
		})
	}
	var agg v1beta1.Aggregate
	i := 0
	for _, s := range r.slots {
		for tasks[i].Type != s.id.Type {
			i++
		}
		rs := r.replicaStatus(s)
		tasks[i].ReplicaStatus = append(tasks[i].ReplicaStatus, rs)
		switch rs.Phase {
		case v1beta1.ReplicaCreating:
			agg.Creating++
		case v1beta1.ReplicaPending:
			agg.Pending++
		case v1beta1.ReplicaRunning:
			agg.Running++
		case v1beta1.ReplicaSucceeded:
			agg.Succeeded++
		case v1beta1.ReplicaFailed:
			agg.Failed++
		case v1beta1.ReplicaDeleted:
			agg.Deleted++
		default:
			agg.Unknown++
		}
	}
	// Report the types in the order the spec lists them, even where ranks
	// put the master first.
	order := map[v1beta1.ReplicaType]int{}
	for i, spec := range r.spec.ReplicaSpecs {
		if _, seen := order[spec.Type]; !seen {
			order[spec.Type] = i
		}
	}
	sort.SliceStable(tasks, func(a, b int) bool { return order[tasks[a].Type] < order[tasks[b].Type] })
	v1beta1.CompactTerminations(tasks)
	st.Tasks = tasks
	st.Aggregate = agg
	r.fillElasticStatus()
	return runningCondition(st.Phase, r.startBlocker)
}

// runningCondition is the Running condition of an active job's phase: True
// while it runs, False with the phase as its reason otherwise, or with what
// holds the start up (startBlocker) while the pods are on their way. A
// finished job's is set by the finish.
func runningCondition(phase v1beta1.JobPhase, startBlocker func() (reason, message string)) decision {
	var d decision
	switch {
	case phase.IsFinished(), phase == "":
	case phase == v1beta1.JobRunning:
		d.setCondition(v1beta1.ConditionRunning, metav1.ConditionTrue, ReasonReplicasRunning, "the job's replicas are running")
	default:
		reason, message := string(phase), runningMessage(phase)
		if phase == v1beta1.JobPending || phase == v1beta1.JobResuming {
			if why, what := startBlocker(); why != "" {
				reason, message = why, message+": "+what
			}
		}
		d.setCondition(v1beta1.ConditionRunning, metav1.ConditionFalse, reason, message)
	}
	return d
}

func runningMessage(p v1beta1.JobPhase) string {
	switch p {
	case v1beta1.JobPending:
		return "waiting for every replica to start"
	case v1beta1.JobResuming:
		return "waiting for every replica to start again"
	case v1beta1.JobPaused:
		return "the job is paused"
	default:
		return "the job is " + strings.ToLower(string(p))
	}
}

func (r *reconciler) replicaStatus(s *slot) v1beta1.ReplicaStatus {
	if s.keepRecord {
		return *s.prev.DeepCopy()
	}
	rs := v1beta1.ReplicaStatus{
		Name:         s.name,
		Phase:        s.phase,
		Reason:       s.reason,
		RestartAt:    s.restartAt,
		RestartCount: s.restartCount,
	}
	var prev []v1beta1.ContainerStatus
	if s.prev != nil {
		prev = s.prev.Containers
	}
	switch {
	case s.pod != nil:
		rs.UID = s.pod.UID
		rs.Containers = containerStatuses(s.pod, prev)
	case s.phase != v1beta1.ReplicaCreating && s.prev != nil && s.prev.UID != "":
		// The pod is gone: keep what it last reported, exit codes included.
		rs.UID = s.prev.UID
		rs.Containers = s.prev.Containers
	default:
		// Waiting for its next pod: how its containers last ended stays.
		rs.Containers = lastTerminations(prev)
	}
	return rs
}

// containerStatuses reports a pod's containers in the order of its spec:
// each one's state and the kubelet's reason for it, and how it last ended,
// in this pod or, while this one has not ended, as prev recorded it.
func containerStatuses(p *corev1.Pod, prev []v1beta1.ContainerStatus) []v1beta1.ContainerStatus {
	out := make([]v1beta1.ContainerStatus, 0, len(p.Spec.Containers))
	for _, c := range p.Spec.Containers {
		cs := v1beta1.ContainerStatus{Name: c.Name, State: v1beta1.ContainerStateWaiting}
		for _, s := range p.Status.ContainerStatuses {
			if s.Name != c.Name {
				continue
			}
			switch {
			case s.State.Terminated != nil:
				t := s.State.Terminated
				cs.State, cs.ExitCode, cs.Reason = v1beta1.ContainerStateTerminated, t.ExitCode, v1beta1.CutReason(t.Reason)
				cs.LastTermination = terminationOf(t)
			case s.State.Running != nil:
				cs.State = v1beta1.ContainerStateRunning
			case s.State.Waiting != nil:
				cs.Reason = v1beta1.CutReason(s.State.Waiting.Reason)
			}
		}
		if cs.LastTermination == nil {
			cs.LastTermination = lastTermination(prev, c.Name)
		}
		out = append(out, cs)
	}
	return out
}

// terminationOf is what a replica's status keeps of a container's end: the
// kubelet's report with the end of its message.
func terminationOf(t *corev1.ContainerStateTerminated) *v1beta1.ContainerTermination {
	out := &v1beta1.ContainerTermination{
		ExitCode: t.ExitCode, Signal: t.Signal, Reason: v1beta1.CutReason(t.Reason), Message: v1beta1.TerminationMessageTail(t.Message),
	}
	if !t.FinishedAt.IsZero() {
		out.FinishedAt = t.FinishedAt.DeepCopy()
	}
	return out
}

// lastTermination is how the named container last ended, as recorded.
func lastTermination(recorded []v1beta1.ContainerStatus, name string) *v1beta1.ContainerTermination {
	for i := range recorded {
		if recorded[i].Name == name && recorded[i].LastTermination != nil {
			return recorded[i].LastTermination.DeepCopy()
		}
	}
	return nil
}

// lastTerminations keeps of recorded containers only how they last ended,
// for a replica that has no pod now.
func lastTerminations(recorded []v1beta1.ContainerStatus) []v1beta1.ContainerStatus {
	var out []v1beta1.ContainerStatus
	for _, c := range recorded {
		if c.LastTermination != nil {
			out = append(out, v1beta1.ContainerStatus{Name: c.Name, LastTermination: c.LastTermination.DeepCopy()})
		}
	}
	return out
}

// initializedCondition is the Initialized condition, until it is True:
// whether every replica has its pod (or succeeded without one).
func initializedCondition(conditions []metav1.Condition, slots []*slot) decision {
	var d decision
	if meta.IsStatusConditionTrue(conditions, v1beta1.ConditionInitialized) {
		return d
	}
	for _, s := range slots {
		if s.pod == nil && !s.succeeded() {
			d.setCondition(v1beta1.ConditionInitialized, metav1.ConditionFalse, ReasonCreatingReplicas, "creating the replicas' pods")
			return d
		}
	}
	d.setCondition(v1beta1.ConditionInitialized, metav1.ConditionTrue, ReasonReplicasCreated, "every replica has its pod")
	return d
}

// activePhase is the phase of an active job: Pending until every replica
// has started (started), then Running, which later restarts do not undo;
// Resuming likewise after a pause.
func activePhase(phase v1beta1.JobPhase, started bool) v1beta1.JobPhase {
	switch {
	case phase == v1beta1.JobRunning:
		return phase
	case started:
		return v1beta1.JobRunning
	case phase == v1beta1.JobResuming:
		return phase
	default:
		return v1beta1.JobPending
	}
}

// replicaFailureCondition sets ReplicaFailure True for a replica failure
// seen in this reconcile (failure), and False again once every replica
// runs.
func replicaFailureCondition(conditions []metav1.Condition, failure string, started bool) decision {
	var d decision
	switch {
	case failure != "":
		d.setCondition(v1beta1.ConditionReplicaFailure, metav1.ConditionTrue, ReasonReplicaFailed, failure)
	case started && meta.IsStatusConditionTrue(conditions, v1beta1.ConditionReplicaFailure):
		d.setCondition(v1beta1.ConditionReplicaFailure, metav1.ConditionFalse, ReasonReplicasHealthy, "every replica is running")
	}
	return d
}

// Reasons of the ReplicaFailure condition, and of the event, of a job beyond
// the limits on replicas (one stored before they existed), and a status too
// large to store; each condition turns False with the second reason of its
// pair once its cause is gone.
const (
	ReasonTooManyReplicas     = "TooManyReplicas"
	ReasonReplicasWithinLimit = "ReplicasWithinLimit"
	ReasonStatusTooLarge      = "StatusTooLarge"
	ReasonStatusStored        = "StatusStored"
)

// resolvedReplicaFailure turns a ReplicaFailure condition that is True for
// the given reason False, once its cause is gone.
func resolvedReplicaFailure(conditions []metav1.Condition, reason, resolvedReason, message string) decision {
	var d decision
	c := meta.FindStatusCondition(conditions, v1beta1.ConditionReplicaFailure)
	if c != nil && c.Status == metav1.ConditionTrue && c.Reason == reason {
		d.setCondition(v1beta1.ConditionReplicaFailure, metav1.ConditionFalse, resolvedReason, message)
	}
	return d
}

// ReasonScaled is the event of an elastic job whose replica count changed.
const ReasonScaled = "Scaled"

// fillElasticStatus reports an elastic job's size as its scale subresource
// shows it, and records a change of size.
func (r *reconciler) fillElasticStatus() {
	st := r.status
	if r.topo.Elastic == nil {
		st.Replicas, st.Selector = nil, ""
		return
	}
	var current int32
	for _, s := range r.slots {
		if s.pod != nil && s.pod.DeletionTimestamp == nil {
			current++
		}
	}
	st.Replicas = &current
	st.Selector = labels.SelectorFromSet(r.jobOwner.Labels()).String()

	var before int32
	for _, t := range r.old.Tasks {
		before += int32(len(t.ReplicaStatus))
	}
	now := int32(len(r.slots))
	// A job that has not started is not scaled: its first admission may
	// still cut its count.
	if r.old.StartTime != nil && before != now && !r.scaleNoted {
		r.scaleNoted = true
		st.LastScaleTime = r.metaNow()
		r.decided.event(corev1.EventTypeNormal, ReasonScaled, "Scaled from %d to %d replicas", before, now)
	}
}

// startBlocker names the first replica whose pod cannot start, and why. It
// returns "" when every pod is only on its way.
func (r *reconciler) startBlocker() (reason, message string) {
	for _, s := range r.slots {
		if why, what := podStartBlocker(s.pod, r.mountFailure); why != "" {
			return why, fmt.Sprintf("replica %s: %s", s.id.Hostname(), what)
		}
	}
	return "", ""
}

// mountFailure is the kubelet's recent FailedMount message for a pod.
func (r *reconciler) mountFailure(p *corev1.Pod) (string, bool) {
	return r.c.mountFailures.recent(p, r.now)
}

// finish ends the job (finishJob) and plans its clean-up, in one decision.
func (r *reconciler) finish(end ending) {
	ended := finishJob(r.status, r.metaNow(), end.phase, end.reason, end.message, r.failure)
	endAttempt(r.status, r.now, end.reason, end.message)
	// A finished job creates no more pods. Replacements decided in this
	// reconcile stay recorded, but nothing is replaced any more: clean-up
	// decides which pods go.
	r.creates, r.decided.deletes = nil, nil
	failedReason := ""
	if end.phase == v1beta1.JobFailed {
		failedReason = end.reason
	}
	r.apply(end.with.and(ended).and(cleanUpFinished(r.finishedJob(failedReason))))
}

// cleanUp plans the clean-up and TTL of a job whose end was written
// (cleanUpFinished).
func (r *reconciler) cleanUp() decision {
	failedReason := ""
	if c := meta.FindStatusCondition(r.status.Conditions, v1beta1.ConditionFailed); c != nil && c.Status == metav1.ConditionTrue {
		failedReason = c.Reason
	}
	return cleanUpFinished(r.finishedJob(failedReason))
}

// finishedJob is what the clean-up reads of this reconcile's finished job.
func (r *reconciler) finishedJob(failedReason string) finishedJob {
	return finishedJob{spec: r.spec, status: r.status, failedReason: failedReason, recorded: r.old.Phase.IsFinished(),
		slots: r.slots, extra: r.extra, now: r.now}
}
