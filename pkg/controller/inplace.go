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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// In-place restarts: the reconciler's side of inplace_policy.go's rules.
// It gathers what they read from the slots, and records what they decide
// for act.go to write (actOnInPlace).

// ReasonAttemptReleased is the event of an attempt released to the pods;
// the reasons of a restart are those of the RestartedInPlace condition.
const ReasonAttemptReleased = "AttemptReleased"

// inPlaceReplicas is the slots as the in-place rules read them, in order.
func (r *reconciler) inPlaceReplicas() []inPlaceReplica {
	replicas := make([]inPlaceReplica, len(r.slots))
	for i, s := range r.slots {
		replicas[i] = inPlaceReplica{host: s.id.Hostname(), pod: s.pod, replacing: s.replacing}
	}
	return replicas
}

// restartsInPlace decides how a whole-job restart goes: in place, when the
// job asks for it and its pods allow it, after which it opens the next
// attempt and asks every pod for it; otherwise by recreating the pods, and
// a job that asked for InPlace says why.
func (r *reconciler) restartsInPlace() bool {
	if !podbuilder.InPlace(r.spec) {
		return false
	}
	if r.inPlace.decided {
		// Once per reconcile: a restart for two failed replicas decides
		// once.
		return r.inPlace.bump
	}
	r.inPlace.decided = true
	var d decision
	r.inPlace.bump, d = r.restartInPlace()
	r.apply(d)
	return r.inPlace.bump
}

// restartInPlace says whether the job's pods allow an in-place restart and,
// when they do, opens the next attempt. It returns the RestartedInPlace
// condition and event that say how the job restarts.
func (r *reconciler) restartInPlace() (inPlace bool, d decision) {
	if why := inPlaceBlocker(r.inPlaceReplicas()); why != "" {
		if !r.recreatesOnRestart() {
			// The condition keeps saying that the job recreates for good.
			d.setCondition(v1beta1.ConditionRestartedInPlace, metav1.ConditionFalse, v1beta1.ReasonRecreatingInstead, "every pod is recreated: "+why)
		}
		d.event(corev1.EventTypeWarning, v1beta1.ReasonRecreatingInstead, "Restarting every replica by recreating its pod, not in place: %s", why)
		return false, d
	}
	newAttempt(r.status, r.now)
	d.setCondition(v1beta1.ConditionRestartedInPlace, metav1.ConditionTrue, v1beta1.ReasonRestartingInPlace,
		fmt.Sprintf("attempt %d restarts every pod in place", r.status.AttemptCount))
	return true, d
}

// planInPlaceNodes finds the pods that ask to restart in place and cannot
// run anywhere: none of the nodes they may be scheduled on restarts a pod's
// containers in place (inPlaceUnavailable), and the scheduler leaves such a
// pod Pending. The pod is looked at as the API server admitted it, since
// admission may have chosen its nodes. It is replaced at once, without
// counting, by a pod built as under Recreate; from then on the job builds
// and restarts its pods as under Recreate, which the RestartedInPlace
// condition records (recreatesOnRestart) and an event says; it returns
// both.
func (r *reconciler) planInPlaceNodes() (d decision) {
	if !podbuilder.InPlace(r.spec) || r.status.Phase.IsFinished() || pauseEnabled(r.spec) || !r.mayRun() {
		// A paused or queued job's pods go anyway.
		return d
	}
	recreates := r.recreatesOnRestart()
	for _, s := range r.slots {
		p := s.pod
		if p == nil || s.replacing || p.DeletionTimestamp != nil || p.Spec.NodeName != "" || !podbuilder.CanRestartInPlace(p) {
			continue
		}
		why := r.c.nodes.inPlaceUnavailable(r.logger, p)
		if why == "" {
			continue
		}
		if !recreates {
			recreates = true
			d.setCondition(v1beta1.ConditionRestartedInPlace, metav1.ConditionFalse, v1beta1.ReasonNoNodeRestartsInPlace,
				fmt.Sprintf("the job's pods are built and restarted as under Recreate: for pod %s, %s", p.Name, why))
			d.event(corev1.EventTypeWarning, v1beta1.ReasonNoNodeRestartsInPlace,
				"Pods of this job cannot restart in place where they may run, and are made as under Recreate: for pod %s, %s", p.Name, why)
		}
		d.discard(s, "it cannot restart in place on any node it may run on")
	}
	return d
}

// recreatesOnRestart says whether the job found that its pods cannot
// restart in place where they may run (planInPlaceNodes): for the rest of
// its life they are built, and restarted, as under Recreate.
func (r *reconciler) recreatesOnRestart() bool {
	c := meta.FindStatusCondition(r.status.Conditions, v1beta1.ConditionRestartedInPlace)
	return c != nil && c.Reason == v1beta1.ReasonNoNodeRestartsInPlace
}

// planInPlace keeps an in-place restart going (decideInPlaceProgress): it
// lists the pods to ask for the job's attempt and those to release it to,
// and replaces the pods that did not reach their barrier in time.
func (r *reconciler) planInPlace() {
	if !podbuilder.InPlace(r.spec) || r.status.Phase.IsFinished() {
		return
	}
	in := inPlaceProgressInput{
		attempt:  r.status.AttemptCount,
		opened:   r.inPlace.bump,
		settled:  r.satisfied,
		replicas: r.inPlaceReplicas(),
		now:      r.now,
	}
	open := openAttempt(r.status)
	if open != nil {
		in.attemptStart = &open.StartTime.Time
	}
	d := decideInPlaceProgress(in)
	for _, i := range d.recreate {
		s := r.slots[i]
		r.decided.event(corev1.EventTypeWarning, v1beta1.ReasonRecreatingInstead,
			"Pod %s did not restart in place within %s of being asked for attempt %d; recreating it", s.pod.Name, inPlaceGiveUp, open.Number)
		r.decided.discard(s, fmt.Sprintf("it did not restart in place within %s", inPlaceGiveUp))
	}
	for _, i := range d.asks {
		r.inPlace.attemptAsks = append(r.inPlace.attemptAsks, r.slots[i].pod)
	}
	for _, i := range d.releases {
		r.inPlace.attemptReleases = append(r.inPlace.attemptReleases, r.slots[i].pod)
	}
	if !d.requeueAt.IsZero() {
		r.decided.requeueAt(d.requeueAt)
	}
	r.inPlace.waiting = d.waiting
	if len(d.releases) > 0 {
		r.decided.event(corev1.EventTypeNormal, ReasonAttemptReleased, "Every replica has left attempt %d; releasing attempt %d to %d pod(s)",
			in.attempt-1, in.attempt, len(d.releases))
	}
}

// releasedAttempt is the attempt pods made now may start: the job's, or the
// one before it while an in-place restart waits for its replicas.
func (r *reconciler) releasedAttempt() int32 {
	if r.inPlace.waiting && len(r.inPlace.attemptReleases) == 0 {
		return r.status.AttemptCount - 1
	}
	return r.status.AttemptCount
}

// planAgentStops lists the pods whose restart agent is to exit
// (agentStops), so that they can end.
func (r *reconciler) planAgentStops() {
	if !podbuilder.InPlace(r.spec) {
		return
	}
	for _, i := range agentStops(r.inPlaceReplicas(), r.status.Phase.IsFinished()) {
		r.inPlace.agentStops = append(r.inPlace.agentStops, r.slots[i].pod)
	}
}
