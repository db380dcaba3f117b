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
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// The stops that remove running pods: each asks a job with a checkpoint
// policy for a checkpoint first, and each is an interruption the
// accounting counts.
const (
	StopPause      = "Pause"
	StopEvicted    = "Evicted"
	StopResize     = "Resize"
	StopRestartJob = "RestartJob"
	StopStalled    = "Stalled"
)

// Events of the checkpoint a stop asks for.
const (
	ReasonCheckpointRequested = "CheckpointRequested"
	ReasonCheckpointWritten   = "CheckpointWritten"
	ReasonCheckpointTimedOut  = "CheckpointTimedOut"
)

// stopRunning says whether a stop may remove the job's running pods now;
// when it may, the job's open attempt ends with reason and message.
//
// Without a checkpoint policy, or with no pod running, it may. Otherwise
// the first call asks: it records the request in status.checkpoint and
// marks the running pods with AnnotationCheckpointRequest, which their
// training code reads through the downward API. Later calls hold the stop
// until a checkpoint reported after the request arrives, or
// stopGraceSeconds have passed, whichever is first. A stop that goes ahead
// while pods run is counted as an interruption.
func (r *reconciler) stopRunning(reason, message string) bool {
	if r.stopDecided != nil {
		// One stop per reconcile: a RestartJob for two failed replicas
		// asks once.
		return *r.stopDecided
	}
	proceed := r.decideStop(reason)
	r.stopDecided = &proceed
	if proceed {
		r.endAttempt(reason, message)
	}
	return proceed
}

func (r *reconciler) decideStop(reason string) bool {
	running := r.runningPods()
	policy := r.spec.RunPolicy.Checkpoint
	request := r.checkpointRequest()
	if policy == nil || (request == nil && len(running) == 0) {
		if len(running) > 0 && r.satisfied {
			r.recordInterruption(reason, r.stoppedReplicas(), nil)
		}
		return true
	}
	if request == nil {
		if !r.satisfied {
			// Pods deleted a moment ago may still look alive in the cache:
			// ask once it has caught up.
			return false
		}
		at := metav1.NewMicroTime(r.now)
		if r.status.Checkpoint == nil {
			r.status.Checkpoint = &v1beta1.CheckpointStatus{}
		}
		r.status.Checkpoint.RequestTime, r.status.Checkpoint.RequestReason = &at, reason
		r.asks = running
		r.event(corev1.EventTypeNormal, ReasonCheckpointRequested,
			"Asked %d running pod(s) for a checkpoint before the stop (%s); waiting up to %ds", len(running), reason, stopGrace(policy))
		r.requeueAt(r.now.Add(stopGraceDuration(policy)))
		return false
	}
	waited := r.now.Sub(request.Time)
	latest := r.status.Checkpoint.Latest
	answered := latest != nil && latest.ReportTime.Time.After(request.Time)
	switch {
	case answered:
		r.event(corev1.EventTypeNormal, ReasonCheckpointWritten,
			"Checkpoint %s written %.1fs after the request; stopping the pods (%s)", describeCheckpoint(latest), latest.ReportTime.Sub(request.Time).Seconds(), reason)
	case waited >= stopGraceDuration(policy) || len(running) == 0:
		r.event(corev1.EventTypeWarning, ReasonCheckpointTimedOut,
			"No checkpoint arrived %.1fs after the request (grace %ds); stopping the pods (%s)", waited.Seconds(), stopGrace(policy), reason)
	default:
		value := request.Format(metav1.RFC3339Micro)
		for _, p := range running {
			if p.Annotations[v1beta1.AnnotationCheckpointRequest] != value {
				r.asks = append(r.asks, p)
			}
		}
		r.requeueAt(request.Add(stopGraceDuration(policy)))
		return false
	}
	r.clearCheckpointRequest()
	if len(running) > 0 || request != nil {
		r.recordInterruption(reason, r.stoppedReplicas(), &answered)
	}
	return true
}

// stoppedReplicas counts the replicas whose work a stop loses: those
// running now and those whose pod just failed (the replica a RestartJob
// restarts for); a replica that succeeded lost nothing.
func (r *reconciler) stoppedReplicas() int32 {
	n := int32(0)
	for _, s := range r.slots {
		if p := s.pod; p != nil && p.DeletionTimestamp == nil && !s.replacing && podOutcome(p) != corev1.PodSucceeded {
			n++
		}
	}
	return n
}

// holdPods is the replicas' state while a stop waits for its checkpoint:
// every pod as it is, nothing created or deleted.
func (r *reconciler) holdPods() {
	for _, s := range r.slots {
		if s.pod != nil {
			s.phase = podPhase(s.pod)
		} else {
			s.phase = stoppedReplicaPhase(false, s.prev, v1beta1.ReplicaCreating)
		}
	}
}

// checkpointWaitMessage says what a held stop waits for.
func (r *reconciler) checkpointWaitMessage() string {
	return fmt.Sprintf("waiting up to %ds for a checkpoint before the pods go", stopGrace(r.spec.RunPolicy.Checkpoint))
}

// resizing says whether the job's replicas changed under running pods: a
// pod beyond the new count, or one made for the old shape, must go.
func (r *reconciler) resizing() bool {
	for _, p := range r.extra {
		if p.DeletionTimestamp == nil {
			return true
		}
	}
	want := r.topo.Shape()
	for _, s := range r.slots {
		if p := s.pod; p != nil && p.DeletionTimestamp == nil && !isTerminated(p) && madeForOtherShape(p, want) {
			return true
		}
	}
	return false
}

// madeForOtherShape says whether a pod was built for other replica counts
// than want (Topology.Shape). Pods that predate the annotation are kept.
func madeForOtherShape(p *corev1.Pod, want string) bool {
	made := p.Annotations[podbuilder.AnnotationTopology]
	return made != "" && made != want
}

// runningPods are the job's pods that run and are not on their way out:
// the ones that could still write a checkpoint.
func (r *reconciler) runningPods() []*corev1.Pod {
	var pods []*corev1.Pod
	for _, s := range r.slots {
		if p := s.pod; p != nil && p.DeletionTimestamp == nil && !s.replacing && podOutcome(p) == corev1.PodRunning {
			pods = append(pods, p)
		}
	}
	return pods
}

func (r *reconciler) checkpointRequest() *metav1.MicroTime {
	if c := r.status.Checkpoint; c != nil {
		return c.RequestTime
	}
	return nil
}

// clearCheckpointRequest ends a request: its stop went ahead, or no stop
// needs it any more.
func (r *reconciler) clearCheckpointRequest() {
	c := r.status.Checkpoint
	if c == nil {
		return
	}
	c.RequestTime, c.RequestReason = nil, ""
	if c.Latest == nil && len(c.History) == 0 {
		r.status.Checkpoint = nil
	}
}

// planCheckpointRequest drops a request no stop asked for in this
// reconcile: the stop was called off (a resume before the pods went, a
// readmission) or is done.
func (r *reconciler) planCheckpointRequest() {
	if r.stopDecided != nil {
		return
	}
	if r.checkpointRequest() != nil {
		r.clearCheckpointRequest()
	}
	// Pods that keep running after a stop was called off must not go on
	// seeing its request.
	for _, p := range r.runningPods() {
		if _, asked := p.Annotations[v1beta1.AnnotationCheckpointRequest]; asked {
			r.unasks = append(r.unasks, p)
		}
	}
}

func stopGrace(policy *v1beta1.CheckpointPolicy) int32 {
	if policy.StopGraceSeconds == nil {
		return 1
	}
	return max(*policy.StopGraceSeconds, 1)
}

func stopGraceDuration(policy *v1beta1.CheckpointPolicy) time.Duration {
	return time.Duration(stopGrace(policy)) * time.Second
}

func describeCheckpoint(c *v1beta1.CheckpointRecord) string {
	if c.Step != nil {
		return fmt.Sprintf("at step %d (%s)", *c.Step, c.Path)
	}
	return c.Path
}

// askForCheckpoint puts the checkpoint request on the pods the plan listed,
// after the status that records the request is stored, and takes a
// called-off request off the pods that keep running.
func (r *reconciler) askForCheckpoint(ctx context.Context) error {
	var errs []error
	if request := r.checkpointRequest(); request != nil && len(r.asks) > 0 {
		value := request.Format(metav1.RFC3339Micro)
		_, err := r.annotatePods(ctx, r.asks, map[string]any{v1beta1.AnnotationCheckpointRequest: value}, "asking for a checkpoint")
		errs = append(errs, err)
		r.logger.V(2).Info("Asked for a checkpoint", "pods", len(r.asks), "reason", r.status.Checkpoint.RequestReason)
	}
	if len(r.unasks) > 0 {
		_, err := r.annotatePods(ctx, r.unasks, map[string]any{v1beta1.AnnotationCheckpointRequest: nil}, "calling off a checkpoint request")
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// planResumeAnnotations lists the running pods whose resume annotations lag
// behind the job's latest checkpoint.
func (r *reconciler) planResumeAnnotations() {
	if r.spec.RunPolicy.Checkpoint == nil {
		return
	}
	want := podbuilder.ResumeAnnotations(r.status.Checkpoint)
	if len(want) == 0 {
		return
	}
	for _, p := range r.runningPods() {
		for k, v := range want {
			if p.Annotations[k] != v {
				r.resumeLagging = append(r.resumeLagging, p)
				break
			}
		}
	}
}

// updateResumeAnnotations brings the lagging pods' resume annotations up to
// the latest checkpoint.
func (r *reconciler) updateResumeAnnotations(ctx context.Context) error {
	if len(r.resumeLagging) == 0 {
		return nil
	}
	annotations := map[string]any{}
	for k, v := range podbuilder.ResumeAnnotations(r.status.Checkpoint) {
		annotations[k] = v
	}
	_, err := r.annotatePods(ctx, r.resumeLagging, annotations, "updating the resume point")
	return err
}
