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

// starting says whether a pod is still on its way to running: it exists,
// is not being deleted and is Pending.
func podStarting(p *corev1.Pod) bool {
	return p != nil && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodPending
}

// podStartBlocker says why a pending pod cannot start, as the kubelet or the
// scheduler put it, or "" for a pod that is only on its way or not pending.
// mountFailure is the kubelet's recent FailedMount message for a pod, if any
// (mountfailures.go).
func podStartBlocker(p *corev1.Pod, mountFailure func(*corev1.Pod) (string, bool)) (reason, detail string) {
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
		if message, ok := mountFailure(p); ok {
			return ReasonFailedMount, v1beta1.TerminationMessageTail(message)
		}
	}
	return "", ""
}

// startingReplica is a replica's pod, with the name messages give it.
type startingReplica struct {
	host string
	pod  *corev1.Pod
}

// startTimeout is what runPolicy.startTimeoutSeconds decides.
type startTimeout struct {
	// reason and message fail the job; empty while none is due.
	reason, message string
	// comeBack is when the first pending pod not yet due will be.
	comeBack time.Time
}

// decideStartTimeout applies runPolicy.startTimeoutSeconds (limit): the job
// fails once a replica's pod has been pending that long since its
// creation, with why it could not start (blocker); until then the job is
// looked at again when the first pending pod is due.
func decideStartTimeout(limit *int64, replicas []startingReplica, now time.Time,
	blocker func(*corev1.Pod) (reason, detail string)) startTimeout {
	var d startTimeout
	if limit == nil || *limit <= 0 {
		return d
	}
	seconds := min(*limit, batch.MaxStartTimeoutSeconds)
	for _, rep := range replicas {
		p := rep.pod
		if !podStarting(p) {
			continue
		}
		due := p.CreationTimestamp.Add(time.Duration(seconds) * time.Second)
		if now.Before(due) {
			if d.comeBack.IsZero() || due.Before(d.comeBack) {
				d.comeBack = due
			}
			continue
		}
		why, what := blocker(p)
		if why == "" {
			why, what = ReasonStartTimeoutExceeded, "its pod is still pending"
		}
		d.reason = why
		d.message = fmt.Sprintf("replica %s did not start within startTimeoutSeconds (%ds): %s", rep.host, *limit, what)
		return d
	}
	return d
}
