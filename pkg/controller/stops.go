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

// The stops of a job's running pods, carried out on the status copy: a
// pause, a queue that takes its admission back, a resize, a whole-job
// restart and a stall each stop the pods (stopRunning, after the checkpoint
// the stop may ask for: checkpointstop_policy.go), and a resume starts them
// again. Each stop that interrupts work is counted in the accounting.

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
	if r.stop.decided != nil {
		// One stop per reconcile: a RestartJob for two failed replicas
		// asks once.
		return *r.stop.decided
	}
	d := decideCheckpointStop(checkpointStopInput{
		reason:        reason,
		policy:        r.spec.RunPolicy.Checkpoint,
		request:       r.checkpointRequest(),
		latest:        r.latestCheckpoint(),
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
	r.stop.asks = append(r.stop.asks, d.asks...)
	if d.event != nil {
		r.decided.events = append(r.decided.events, *d.event)
	}
	if !d.comeBack.IsZero() {
		r.decided.requeueAt(d.comeBack)
	}
	if d.interruption {
		r.recordInterruption(reason, r.stoppedReplicas(), d.answered)
	}
	proceed := d.goes()
	r.stop.decided = &proceed
	if proceed {
		endAttempt(r.status, r.now, reason, message)
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

// latestCheckpoint is the job's latest checkpoint; nil before the first.
func (r *reconciler) latestCheckpoint() *v1beta1.CheckpointRecord {
	if c := r.status.Checkpoint; c != nil {
		return c.Latest
	}
	return nil
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
	if r.stop.decided != nil {
		return
	}
	if r.checkpointRequest() != nil {
		r.clearCheckpointRequest()
	}
	// Pods that keep running after a stop was called off must not go on
	// seeing its request.
	for _, p := range r.runningPods() {
		if _, asked := p.Annotations[v1beta1.AnnotationCheckpointRequest]; asked {
			r.stop.unasks = append(r.stop.unasks, p)
		}
	}
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
				r.stop.resumeLagging = append(r.stop.resumeLagging, p)
				break
			}
		}
	}
}

// recordInterruption counts a stop of running replicas (addInterruption).
// answered says, for a stop that asked for a checkpoint, whether one came.
func (r *reconciler) recordInterruption(reason string, replicas int32, answered *bool) {
	r.status.Accounting = addInterruption(r.status.Accounting, interruptionInput{
		reason:        reason,
		replicas:      replicas,
		answered:      answered,
		trainingSince: r.runStart(),
		latest:        r.latestCheckpoint(),
		progress:      r.status.Progress,
		now:           r.now,
	})
}

// planPause deletes every pod; the job is Paused once none is left. It
// returns the pause's conditions and event, or how the job ended when it
// succeeded before the pause.
func (r *reconciler) planPause() (d decision, end *ending) {
	if end := r.succeededBeforeStop("the pause"); end != nil {
		return d, end
	}
	if !r.stopRunning(StopPause, "the job was paused") {
		r.holdPods()
		d.setCondition(v1beta1.ConditionPaused, metav1.ConditionTrue, ReasonPausing, r.checkpointWaitMessage())
		return d, nil
	}
	reason, message, paused := pauseState(r.stopPods("the job is paused", v1beta1.ReplicaDeleted))
	d.setCondition(v1beta1.ConditionPaused, metav1.ConditionTrue, reason, message)
	if !paused {
		return d, nil
	}
	// A queued job's Workload is inactive while paused; once the pods are
	// gone, Kueue's quota can go back.
	r.queued.stopped = true
	if r.status.Phase != v1beta1.JobPaused {
		r.status.Phase = v1beta1.JobPaused
		d.event(corev1.EventTypeNormal, ReasonPaused, "Paused: every pod of the job is gone")
	}
	return d, nil
}

// succeededBeforeStop ends a job, not yet paused, whose pods already meet
// its success policy when a stop comes to remove them (a pause, or its
// queue taking the admission back): the training ended before the stop
// came, or while it waited for a checkpoint. Stopping it would throw the
// finished work away and run it again on resume. stop names the stop in
// the job's message. It returns nil when the job goes on.
func (r *reconciler) succeededBeforeStop(stop string) *ending {
	if r.status.Phase == v1beta1.JobPaused {
		return nil
	}
	for _, s := range r.slots {
		s.phase = phaseBeforeStop(s.pod, s.prev)
	}
	if !r.succeeded(podbuilder.DebugEnabled(r.spec)) {
		return nil
	}
	end := &ending{phase: v1beta1.JobSucceeded, reason: ReasonSucceeded,
		message: fmt.Sprintf("the job succeeded before %s took effect", stop)}
	// The condition of the stop that waited no longer holds.
	for _, typ := range []string{v1beta1.ConditionPaused, v1beta1.ConditionQueued} {
		if meta.IsStatusConditionTrue(r.status.Conditions, typ) {
			end.with.setCondition(typ, metav1.ConditionFalse, ReasonSucceeded, end.message)
		}
	}
	return end
}

// hasBeenPaused says whether the job was paused at some point: its Paused
// condition was True, and is still, or was turned False by a resume.
func (r *reconciler) hasBeenPaused() bool {
	c := meta.FindStatusCondition(r.status.Conditions, v1beta1.ConditionPaused)
	return c != nil && (c.Status == metav1.ConditionTrue || c.Reason == ReasonResumed)
}

// resume starts a job again that was paused, with a fresh deadline.
func (r *reconciler) resume() {
	st := r.status
	if c := meta.FindStatusCondition(st.Conditions, v1beta1.ConditionPaused); c != nil && c.Status == metav1.ConditionTrue {
		r.setCondition(v1beta1.ConditionPaused, metav1.ConditionFalse, ReasonResumed, "the job was resumed")
	}
	if st.Phase == v1beta1.JobPaused {
		st.Phase = v1beta1.JobResuming
		st.StartTime = r.metaNow()
		r.decided.event(corev1.EventTypeNormal, ReasonResumed, "Resuming: creating the job's pods again")
	}
	if st.StartTime == nil {
		st.StartTime = r.metaNow()
	}
}

// stopPods deletes every pod of the job, for a pause or while Kueue does not
// admit it, and returns how many are left. Each is recorded Deleted, with
// its UID, so that a resume before the pod is gone sees a replacement, not
// a vanished replica; a replica without a pod is Deleted when it had one,
// else podless.
func (r *reconciler) stopPods(why string, podless v1beta1.ReplicaPhase) int {
	remaining := len(r.extra)
	for _, s := range r.slots {
		s.phase = stoppedReplicaPhase(s.pod != nil, s.prev, podless)
		if s.pod == nil {
			continue
		}
		remaining++
		if s.pod.DeletionTimestamp == nil {
			r.decided.delete(s.pod, why)
		}
	}
	return remaining
}
