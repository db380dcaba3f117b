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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// stopRunning says whether a stop may remove the job's running pods now;
// when it may, the job's open attempt ends with reason and message.
//
// Without a checkpoint policy, or with no pod running, it may. Otherwise
// the first call asks: it records the request in status.checkpoint and
// marks the running pods with AnnotationCheckpointRequest, which their
// training code reads through the downward API. Later calls hold the stop
// until a checkpoint reported after the request arrives, or
// stopGraceSeconds have passed, whichever is first
// (decideCheckpointStop). A stop that goes ahead while pods run is counted
// as an interruption.
func (r *reconciler) stopRunning(reason, message string) bool {
	if r.stopDecided != nil {
		// One stop per reconcile: a RestartJob for two failed replicas
		// asks once.
		return *r.stopDecided
	}
	var latest *v1beta1.CheckpointRecord
	if c := r.status.Checkpoint; c != nil {
		latest = c.Latest
	}
	d := decideCheckpointStop(checkpointStopInput{
		reason:        reason,
		policy:        r.spec.RunPolicy.Checkpoint,
		request:       r.checkpointRequest(),
		latest:        latest,
		running:       r.runningPods(),
		cacheCaughtUp: r.satisfied,
		now:           r.now,
	})
	switch d.step {
	case stopAsks:
		at := metav1.NewMicroTime(r.now)
		if r.status.Checkpoint == nil {
			r.status.Checkpoint = &v1beta1.CheckpointStatus{}
		}
		r.status.Checkpoint.RequestTime, r.status.Checkpoint.RequestReason = &at, reason
	case stopAfterCheckpoint, stopAfterTimeout:
		r.clearCheckpointRequest()
	}
	r.asks = append(r.asks, d.asks...)
	if d.event != nil {
		r.events = append(r.events, *d.event)
	}
	if !d.comeBack.IsZero() {
		r.requeueAt(d.comeBack)
	}
	if d.interruption {
		r.recordInterruption(reason, r.stoppedReplicas(), d.answered)
	}
	proceed := d.goes()
	r.stopDecided = &proceed
	if proceed {
		r.endAttempt(reason, message)
	}
	return proceed
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

// askForCheckpoint puts the checkpoint request on the pods the plan listed,
// after the status that records the request is stored, and takes a
// called-off request off the pods that keep running.
func (r *reconciler) askForCheckpoint(ctx context.Context) error {
	var errs []error
	if request := r.checkpointRequest(); request != nil && len(r.asks) > 0 {
		value := request.Format(metav1.RFC3339Micro)
		_, err := annotatePods(ctx, r.podClient(), r.logger, r.asks, map[string]any{v1beta1.AnnotationCheckpointRequest: value}, "asking for a checkpoint")
		errs = append(errs, err)
		r.logger.V(2).Info("Asked for a checkpoint", "pods", len(r.asks), "reason", r.status.Checkpoint.RequestReason)
	}
	if len(r.unasks) > 0 {
		_, err := annotatePods(ctx, r.podClient(), r.logger, r.unasks, map[string]any{v1beta1.AnnotationCheckpointRequest: nil}, "calling off a checkpoint request")
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
	_, err := annotatePods(ctx, r.podClient(), r.logger, r.resumeLagging, annotations, "updating the resume point")
	return err
}
