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
	"time"

	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/pkg/podbuilder"
)

// The in-place restart rules (restartStrategy InPlace; the pod side is in
// podbuilder/inplace.go), over API types alone. A whole-job restart opens
// the next attempt and asks every pod for it (AnnotationAttempt); each
// pod's agent exits and the kubelet restarts all of the pod's containers,
// which then wait at their barrier. Once every replica waits there, none
// runs the old attempt, and the attempt is released to them all
// (AnnotationAttemptReleased) with the latest resume point. Everything a
// restart needs to go on after a controller restart is on the pods and in
// status.attemptCount. inplace.go applies what these rules decide.

// How long a pod asked for a new attempt may take to reach its barrier: it
// is asked again after inPlaceAskAgain, and recreated (waiting at its
// barrier from the start) after inPlaceGiveUp. A kubelet has been seen to
// take 90 s to refresh a pod's annotation files, against about a second
// usually; the job waits on its slowest pod.
const (
	inPlaceAskAgain = 5 * time.Second
	inPlaceGiveUp   = 20 * time.Second
)

// inPlaceReplica is what the in-place rules read of one replica.
type inPlaceReplica struct {
	// host names the replica in messages.
	host string
	// pod is the replica's pod, nil when it has none.
	pod *corev1.Pod
	// replacing says this reconcile already replaces the pod.
	replacing bool
}

// inPlaceBlocker says why the replicas cannot be restarted in place now,
// or "" when they can: every replica has a pod that is not going away, on
// a node that is not lost, which carries the agent's restart rule.
func inPlaceBlocker(replicas []inPlaceReplica) string {
	for _, rep := range replicas {
		p := rep.pod
		switch {
		case p == nil:
			return fmt.Sprintf("replica %s has no pod", rep.host)
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

// inPlaceProgressInput is what the progress of an in-place restart is
// decided on.
type inPlaceProgressInput struct {
	// attempt is the job's attempt, the one the pods are to run.
	attempt int32
	// attemptStart is when the open attempt began; nil when none is open.
	attemptStart *time.Time
	// opened says this reconcile opened the attempt: the pods are asked for
	// it once its status is written, and nothing is released yet.
	opened bool
	// settled says the informer caches hold what this controller wrote.
	settled  bool
	replicas []inPlaceReplica
	now      time.Time
}

// inPlaceProgress is what an in-place restart does next. The slices hold
// indices into the input's replicas.
type inPlaceProgress struct {
	// asks are the pods to ask (again) for the attempt; releases the pods
	// to release it to, set only when every replica waits at its barrier.
	asks, releases []int
	// recreate are the pods that did not reach their barrier within
	// inPlaceGiveUp of the attempt's start.
	recreate []int
	// waiting says pods wait for the attempt to be released: those made now
	// must not start it either.
	waiting bool
	// requeueAt is when to look again (a pod to ask again or give up on);
	// zero when nothing waits on time.
	requeueAt time.Time
}

// decideInPlaceProgress keeps an in-place restart going: pods that do not
// yet know the job's attempt are asked for it, those that were asked and
// have not reached their barrier are asked again, then given up on; once
// every replica's pod waits at its barrier, the attempt is released to all
// of them that do not have it.
func decideInPlaceProgress(in inPlaceProgressInput) inPlaceProgress {
	var out inPlaceProgress
	everyParked := len(in.replicas) > 0
	for i, rep := range in.replicas {
		p := rep.pod
		if p == nil || p.DeletionTimestamp != nil || rep.replacing {
			everyParked = false
			continue
		}
		a, ok := podbuilder.PodAttempt(p)
		if !ok {
			everyParked = false
			continue
		}
		if a < in.attempt {
			out.asks = append(out.asks, i)
			everyParked = false
			continue
		}
		rel, _ := podbuilder.PodAttemptReleased(p)
		if rel < in.attempt {
			out.waiting = true
			out.releases = append(out.releases, i)
		}
		if !podbuilder.ParkedAtBarrier(p) {
			everyParked = false
			if rel < in.attempt {
				out.chase(in, i)
			}
		}
	}
	if in.opened {
		out.waiting, out.releases = true, nil
		return out
	}
	if !out.waiting || !everyParked || !in.settled {
		out.releases = nil
	}
	return out
}

// chase decides for a pod that was asked for the attempt and has not
// reached its barrier: it is asked again every inPlaceAskAgain, and
// recreated once inPlaceGiveUp has passed since the attempt began.
func (out *inPlaceProgress) chase(in inPlaceProgressInput, i int) {
	if in.attemptStart == nil {
		return
	}
	giveUp := in.attemptStart.Add(inPlaceGiveUp)
	if !in.now.Before(giveUp) {
		out.recreate = append(out.recreate, i)
		return
	}
	out.requeue(giveUp)
	asked, err := time.Parse(time.RFC3339, in.replicas[i].pod.Annotations[podbuilder.AnnotationAttemptAsked])
	if err != nil || !in.now.Before(asked.Add(inPlaceAskAgain)) {
		out.asks = append(out.asks, i)
		return
	}
	out.requeue(asked.Add(inPlaceAskAgain))
}

func (out *inPlaceProgress) requeue(at time.Time) {
	if out.requeueAt.IsZero() || at.Before(out.requeueAt) {
		out.requeueAt = at
	}
}

// agentStops lists the replicas whose restart agent is to exit, so that
// their pods can end: those whose pod succeeded and, once the job has
// finished, every pod that still runs one (a pod waiting at its barrier
// then fails there instead of training).
func agentStops(replicas []inPlaceReplica, finished bool) []int {
	var stops []int
	for i, rep := range replicas {
		p := rep.pod
		if p == nil || p.DeletionTimestamp != nil || p.Annotations[podbuilder.AnnotationRestartAgent] == podbuilder.RestartAgentStop {
			continue
		}
		if _, ok := podbuilder.PodAttempt(p); !ok || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if finished || podOutcome(p) == corev1.PodSucceeded {
			stops = append(stops, i)
		}
	}
	return stops
}

// inPlaceFailed says whether a pod that restarts in place has a regular
// container, other than the agent, that failed in the job's attempt, once
// released: the pod runs on (its agent keeps it), waiting for the
// controller to decide.
func inPlaceFailed(p *corev1.Pod, attempt int32) bool {
	a, ok := podbuilder.PodAttempt(p)
	if !ok || a != attempt {
		return false
	}
	rel, _ := podbuilder.PodAttemptReleased(p)
	return rel == a && containerFailedBesideAgent(p)
}
