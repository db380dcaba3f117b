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
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// In-place restarts (restartStrategy InPlace; the pod side is in
// podbuilder/inplace.go). A whole-job restart opens the next attempt and
// asks every pod for it (AnnotationAttempt); each pod's agent exits and the
// kubelet restarts all of the pod's containers, which then wait at their
// barrier. Once every replica waits there, none runs the old attempt, and
// the controller releases the new one (AnnotationAttemptReleased) with the
// latest resume point. Everything the restart needs to go on after a
// controller restart is on the pods and in status.attemptCount.

// How long a pod asked for a new attempt may take to reach its barrier: it
// is asked again after inPlaceAskAgain, and recreated (waiting at its
// barrier from the start) after inPlaceGiveUp. A kubelet has been seen to
// take 90 s to refresh a pod's annotation files, against about a second
// usually; the job waits on its slowest pod.
const (
	inPlaceAskAgain = 5 * time.Second
	inPlaceGiveUp   = 20 * time.Second
)

// ReasonAttemptReleased is the event of an attempt released to the pods;
// the reasons of a restart are those of the RestartedInPlace condition.
const ReasonAttemptReleased = "AttemptReleased"

// inPlaceBlocker says why the job's pods cannot be restarted in place now,
// or "" when they can: every replica has a pod that is not going away, on
// a node that is not lost, which carries the agent's restart rule.
func (r *reconciler) inPlaceBlocker() string {
	for _, s := range r.slots {
		p, host := s.pod, s.id.Hostname()
		switch {
		case p == nil:
			return fmt.Sprintf("replica %s has no pod", host)
		case p.DeletionTimestamp != nil:
			return fmt.Sprintf("pod %s is being deleted", p.Name)
		case !podbuilder.CanRestartInPlace(p):
			return fmt.Sprintf("pod %s has no in-place restart rule: no node it may run on restarts containers in place, the cluster dropped the rule, or the pod predates restartStrategy InPlace", p.Name)
		case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
			return fmt.Sprintf("pod %s has ended (%s)", p.Name, p.Status.Phase)
		case p.Status.Phase == corev1.PodUnknown || disrupted(p):
			return fmt.Sprintf("the node of pod %s is lost (%s)", p.Name, p.Spec.NodeName)
		}
	}
	return ""
}

// disrupted says whether a pod is about to go: its node is lost, or it is
// being evicted or preempted.
func disrupted(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// restartsInPlace decides how a whole-job restart goes: in place, when the
// job asks for it and its pods allow it, after which it opens the next
// attempt and asks every pod for it; otherwise by recreating the pods, and
// a job that asked for InPlace says why.
func (r *reconciler) restartsInPlace() bool {
	if !podbuilder.InPlace(r.spec) {
		return false
	}
	if r.inPlaceDecided {
		// Once per reconcile: a restart for two failed replicas decides
		// once.
		return r.inPlaceBump
	}
	r.inPlaceDecided = true
	if why := r.inPlaceBlocker(); why != "" {
		if !r.recreatesOnRestart() {
			// The condition keeps saying that the job recreates for good.
			r.setCondition(v1beta1.ConditionRestartedInPlace, metav1.ConditionFalse, v1beta1.ReasonRecreatingInstead, "every pod is recreated: "+why)
		}
		r.event(corev1.EventTypeWarning, v1beta1.ReasonRecreatingInstead, "Restarting every replica by recreating its pod, not in place: %s", why)
		return false
	}
	r.inPlaceBump = true
	r.newAttempt()
	n := r.status.AttemptCount
	r.setCondition(v1beta1.ConditionRestartedInPlace, metav1.ConditionTrue, v1beta1.ReasonRestartingInPlace,
		fmt.Sprintf("attempt %d restarts every pod in place", n))
	return true
}

// planInPlaceNodes finds the pods that ask to restart in place and cannot
// run anywhere: none of the nodes they may be scheduled on restarts a pod's
// containers in place (inPlaceUnavailable), and the scheduler leaves such a
// pod Pending. The pod is looked at as the API server admitted it, since
// admission may have chosen its nodes. It is replaced at once, without
// counting, by a pod built as under Recreate; from then on the job builds
// and restarts its pods as under Recreate, which the RestartedInPlace
// condition records (recreatesOnRestart) and an event says.
func (r *reconciler) planInPlaceNodes() {
	if !podbuilder.InPlace(r.spec) || r.status.Phase.IsFinished() || pauseEnabled(r.spec) || !r.mayRun() {
		// A paused or queued job's pods go anyway.
		return
	}
	for _, s := range r.slots {
		p := s.pod
		if p == nil || s.replacing || p.DeletionTimestamp != nil || p.Spec.NodeName != "" || !podbuilder.CanRestartInPlace(p) {
			continue
		}
		why := r.c.nodes.inPlaceUnavailable(r.logger, p)
		if why == "" {
			continue
		}
		if !r.recreatesOnRestart() {
			r.setCondition(v1beta1.ConditionRestartedInPlace, metav1.ConditionFalse, v1beta1.ReasonNoNodeRestartsInPlace,
				fmt.Sprintf("the job's pods are built and restarted as under Recreate: for pod %s, %s", p.Name, why))
			r.event(corev1.EventTypeWarning, v1beta1.ReasonNoNodeRestartsInPlace,
				"Pods of this job cannot restart in place where they may run, and are made as under Recreate: for pod %s, %s", p.Name, why)
		}
		r.discard(s, "it cannot restart in place on any node it may run on")
	}
}

// recreatesOnRestart says whether the job found that its pods cannot
// restart in place where they may run (planInPlaceNodes): for the rest of
// its life they are built, and restarted, as under Recreate.
func (r *reconciler) recreatesOnRestart() bool {
	c := meta.FindStatusCondition(r.status.Conditions, v1beta1.ConditionRestartedInPlace)
	return c != nil && c.Reason == v1beta1.ReasonNoNodeRestartsInPlace
}

// planInPlace keeps an in-place restart going: pods that do not yet know
// the job's attempt are asked for it, and once every replica's pod waits
// at its barrier for it, the attempt is released to them all. A pod made
// meanwhile (one that was gone) is created to wait with the others.
func (r *reconciler) planInPlace() {
	if !podbuilder.InPlace(r.spec) || r.status.Phase.IsFinished() {
		return
	}
	n := r.status.AttemptCount
	everyParked := len(r.slots) > 0
	for _, s := range r.slots {
		p := s.pod
		if p == nil || p.DeletionTimestamp != nil || s.replacing {
			everyParked = false
			continue
		}
		a, ok := podbuilder.PodAttempt(p)
		if !ok {
			everyParked = false
			continue
		}
		if a < n {
			r.attemptAsks = append(r.attemptAsks, p)
			everyParked = false
			continue
		}
		rel, _ := podbuilder.PodAttemptReleased(p)
		if rel < n {
			r.inPlaceWaiting = true
			r.attemptReleases = append(r.attemptReleases, p)
		}
		if !podbuilder.ParkedAtBarrier(p) {
			everyParked = false
			if rel < n {
				r.chaseAttempt(s)
			}
		}
	}
	if r.inPlaceBump {
		r.inPlaceWaiting = true
		return
	}
	if !r.inPlaceWaiting {
		return
	}
	if !everyParked || len(r.attemptReleases) == 0 || !r.satisfied {
		r.attemptReleases = nil
		return
	}
	r.event(corev1.EventTypeNormal, ReasonAttemptReleased, "Every replica has left attempt %d; releasing attempt %d to %d pod(s)",
		n-1, n, len(r.attemptReleases))
}

// chaseAttempt deals with a pod that was asked for the job's attempt and
// has not reached its barrier: it is asked again every inPlaceAskAgain, and
// recreated once inPlaceGiveUp has passed since the attempt began.
func (r *reconciler) chaseAttempt(s *slot) {
	a := r.openAttempt()
	if a == nil {
		return
	}
	p := s.pod
	waited := r.now.Sub(a.StartTime.Time)
	if waited >= inPlaceGiveUp {
		r.event(corev1.EventTypeWarning, v1beta1.ReasonRecreatingInstead,
			"Pod %s did not restart in place within %s of being asked for attempt %d; recreating it", p.Name, inPlaceGiveUp, a.Number)
		r.discard(s, fmt.Sprintf("it did not restart in place within %s", inPlaceGiveUp))
		return
	}
	r.requeueAt(a.StartTime.Add(inPlaceGiveUp))
	asked, err := time.Parse(time.RFC3339, p.Annotations[podbuilder.AnnotationAttemptAsked])
	if err != nil || !r.now.Before(asked.Add(inPlaceAskAgain)) {
		r.attemptAsks = append(r.attemptAsks, p)
		return
	}
	r.requeueAt(asked.Add(inPlaceAskAgain))
}

// releasedAttempt is the attempt pods made now may start: the job's, or the
// one before it while an in-place restart waits for its replicas.
func (r *reconciler) releasedAttempt() int32 {
	if r.inPlaceWaiting && len(r.attemptReleases) == 0 {
		return r.status.AttemptCount - 1
	}
	return r.status.AttemptCount
}

// planAgentStops lists the pods whose restart agent is to exit, so that
// they can end: those whose replica succeeded, and, once the job has
// finished, every pod that still runs one (a pod waiting at its barrier
// then fails there instead of training).
func (r *reconciler) planAgentStops() {
	if !podbuilder.InPlace(r.spec) {
		return
	}
	finished := r.status.Phase.IsFinished()
	for _, s := range r.slots {
		p := s.pod
		if p == nil || p.DeletionTimestamp != nil || p.Annotations[podbuilder.AnnotationRestartAgent] == podbuilder.RestartAgentStop {
			continue
		}
		if _, ok := podbuilder.PodAttempt(p); !ok || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if finished || podOutcome(p) == corev1.PodSucceeded {
			r.agentStops = append(r.agentStops, p)
		}
	}
}

// inPlaceFailed says whether a pod that restarts in place has a regular
// container, other than the agent, that failed in the job's current,
// released attempt: the pod runs on (its agent keeps it), waiting for the
// controller to decide.
func (r *reconciler) inPlaceFailed(p *corev1.Pod) bool {
	a, ok := podbuilder.PodAttempt(p)
	if !ok || a != r.status.AttemptCount {
		return false
	}
	rel, _ := podbuilder.PodAttemptReleased(p)
	return rel == a && containerFailedBesideAgent(p)
}

// actOnInPlace writes what planInPlace and planAgentStops decided, after
// the status that records the attempt: the attempt asked of each pod, the
// release with the latest resume point, and the agents' stops.
func (r *reconciler) actOnInPlace(ctx context.Context) error {
	var errs []error
	n := strconv.Itoa(int(r.status.AttemptCount))
	if len(r.attemptAsks) > 0 {
		_, err := annotatePods(ctx, r.podClient(), r.logger, r.attemptAsks,
			map[string]any{podbuilder.AnnotationAttempt: n, podbuilder.AnnotationAttemptAsked: r.now.UTC().Format(time.RFC3339)},
			"asking for attempt "+n)
		errs = append(errs, err)
	}
	if len(r.attemptReleases) > 0 {
		annotations := map[string]any{podbuilder.AnnotationAttemptReleased: n}
		for k, v := range podbuilder.ResumeAnnotations(r.status.Checkpoint) {
			annotations[k] = v
		}
		_, err := annotatePods(ctx, r.podClient(), r.logger, r.attemptReleases, annotations, "releasing attempt "+n)
		errs = append(errs, err)
	}
	if len(r.agentStops) > 0 {
		_, err := annotatePods(ctx, r.podClient(), r.logger, r.agentStops,
			map[string]any{podbuilder.AnnotationRestartAgent: podbuilder.RestartAgentStop}, "stopping the restart agent")
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
