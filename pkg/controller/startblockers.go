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

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// Why a replica cannot start comes from three places: a container's waiting
// reason (the kubelet: ErrImagePull, ImagePullBackOff, ErrImageNeverPull,
// CreateContainerConfigError, ...), the PodScheduled condition (the
// scheduler, and the gang waiting for room), and, for a volume the kubelet
// cannot mount, only the kubelet's FailedMount event (mountfailures.go):
// the pod's status says no more than ContainerCreating then.

// ReasonStartTimeoutExceeded fails a job whose replica did not start within
// runPolicy.startTimeoutSeconds without giving a reason of its own.
const ReasonStartTimeoutExceeded = "StartTimeoutExceeded"

// startingReasons are the waiting reasons of containers on their way.
var startingReasons = map[string]bool{"ContainerCreating": true, "PodInitializing": true}

// startBlocker names the first replica whose pod cannot start, and why. It
// returns "" when every pod is only on its way.
func (r *reconciler) startBlocker() (reason, message string) {
	for _, s := range r.slots {
		if why, what := r.podStartBlocker(s.pod); why != "" {
			return why, fmt.Sprintf("replica %s: %s", s.id.Hostname(), what)
		}
	}
	return "", ""
}

// podStartBlocker says why a pending pod cannot start, as the kubelet or the
// scheduler put it, or "" for a pod that is only on its way or not pending.
func (r *reconciler) podStartBlocker(p *corev1.Pod) (reason, detail string) {
	if !podStarting(p) {
		return "", ""
	}
	for _, statuses := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, c := range statuses {
			if w := c.State.Waiting; w != nil && w.Reason != "" && !startingReasons[w.Reason] {
				return w.Reason, fmt.Sprintf("container %s: %s", c.Name, v1beta1.TerminationMessageTail(w.Reason+": "+w.Message))
			}
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c.Reason, v1beta1.TerminationMessageTail(c.Message)
		}
	}
	if p.Spec.NodeName != "" {
		if message, ok := r.c.mountFailures.recent(p, r.now); ok {
			return ReasonFailedMount, v1beta1.TerminationMessageTail(message)
		}
	}
	return "", ""
}

// starting says whether a pod is still on its way to running: it exists,
// is not being deleted and is Pending.
func podStarting(p *corev1.Pod) bool {
	return p != nil && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodPending
}

// startTimedOut applies runPolicy.startTimeoutSeconds: it returns the reason
// and message to fail the job with when a replica's pod has been pending
// that long since its creation, and otherwise asks to look again when the
// first pending pod is due.
func (r *reconciler) startTimedOut() (reason, message string) {
	limit := r.spec.RunPolicy.StartTimeoutSeconds
	if limit == nil || *limit <= 0 {
		return "", ""
	}
	seconds := min(*limit, batch.MaxStartTimeoutSeconds)
	for _, s := range r.slots {
		p := s.pod
		if !podStarting(p) {
			continue
		}
		due := p.CreationTimestamp.Add(time.Duration(seconds) * time.Second)
		if r.now.Before(due) {
			r.requeueAt(due)
			continue
		}
		why, what := r.podStartBlocker(p)
		if why == "" {
			why, what = ReasonStartTimeoutExceeded, "its pod is still pending"
		}
		return why, fmt.Sprintf("replica %s did not start within startTimeoutSeconds (%ds): %s", s.id.Hostname(), *limit, what)
	}
	return "", ""
}
