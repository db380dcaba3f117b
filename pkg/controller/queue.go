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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/kueue"
	"tensorstack.dev/training/pkg/podbuilder"
)

// What the reconcile does for a job queued with Kueue (package kueue keeps
// its Workload): it reads the Workload's state, plans a job that may not
// run like a paused one, notes the admission, and acts on the Workload and
// the admission's placements.

// setUpQueueing watches the Workloads when jobs are queued with Kueue.
func (c *Controller) setUpQueueing(logger klog.Logger, opts Options) error {
	c.kueue = opts.Kueue
	if c.kueue == nil {
		c.unqueued = opts.Unqueued
		if c.unqueued == "" {
			c.unqueued = "the controller queues with no system"
		}
		return nil
	}
	return c.watchOwned(logger, "Kueue Workloads", c.kueue.Informer())
}

// readQueue reads the Workload of a job that names a queue, when the
// controller queues with Kueue.
func (r *reconciler) readQueue() error {
	if r.c.kueue == nil || kueue.QueueName(r.job) == "" {
		return nil
	}
	queue, err := r.c.kueue.Read(r.jobOwner)
	if err != nil {
		return err
	}
	r.queue = queue
	return nil
}

// planUnqueued says, on a job that names a queue while the controller
// queues nothing, that it runs unqueued and why: a job must not pass its
// quota in silence.
func (r *reconciler) planUnqueued() {
	queue := kueue.QueueName(r.job)
	if r.c.kueue != nil || queue == "" || r.status.Phase.IsFinished() {
		return
	}
	message := fmt.Sprintf("the job names queue %s but runs unqueued: %s", queue, r.c.unqueued)
	if c := meta.FindStatusCondition(r.status.Conditions, v1beta1.ConditionQueued); c == nil || c.Reason != v1beta1.ReasonUnqueued {
		r.event(corev1.EventTypeWarning, v1beta1.ReasonUnqueued, "Runs unqueued: %s", message)
		unqueuedJobs.WithLabelValues(r.kind.Kind()).Inc()
	}
	r.setCondition(v1beta1.ConditionQueued, metav1.ConditionFalse, v1beta1.ReasonUnqueued, message)
}

// podSetCount is how many pod sets the job's Workload has.
func (r *reconciler) podSetCount() int {
	n := 0
	for _, g := range r.topo.Groups {
		if g.Replicas > 0 {
			n++
		}
	}
	return n
}

// planQueued is the plan of a queued job that may not run: like a pause,
// every pod goes; the job is Pending until it was first admitted, Paused
// after an eviction.
func (r *reconciler) planQueued() {
	q, st := r.queue, r.status
	reason, message := v1beta1.ReasonWaitingForAdmission, ""
	switch {
	case q.Evicted != nil:
		reason, message = q.Evicted.Reason, "evicted by Kueue: "+q.Evicted.Message
	case q.Workload == nil && r.podSetCount() > kueue.MaxPodSets:
		reason = ReasonTooManyPodSets
		message = fmt.Sprintf("Kueue admits at most %d pod sets, and the job has %d replica types with replicas",
			kueue.MaxPodSets, r.podSetCount())
	case q.Workload == nil:
		message = fmt.Sprintf("waiting for its Workload in queue %s", kueue.QueueName(r.job))
	case q.Waiting != nil:
		message = fmt.Sprintf("waiting for admission in queue %s: %s", kueue.QueueName(r.job), q.Waiting.Message)
		if levels := kueue.RequestedLevels(q.Workload); len(levels) > 0 {
			message += fmt.Sprintf(" (the job asks for topology level %s)", strings.Join(levels, ", "))
		}
	default:
		message = fmt.Sprintf("quota reserved in queue %s; waiting for admission checks", kueue.QueueName(r.job))
	}
	if c := meta.FindStatusCondition(st.Conditions, v1beta1.ConditionQueued); c == nil || c.Status != metav1.ConditionTrue || c.Reason != reason {
		if q.Evicted != nil {
			r.event(corev1.EventTypeWarning, reason, "Evicted by Kueue: %s", q.Evicted.Message)
		}
	}
	if !r.stopRunning(StopEvicted) {
		r.holdPods()
		r.setCondition(v1beta1.ConditionQueued, metav1.ConditionTrue, reason, message+"; "+r.checkpointWaitMessage())
		return
	}
	remaining := r.stopPods("the job is no longer admitted by Kueue", v1beta1.ReplicaCreating)
	r.setCondition(v1beta1.ConditionQueued, metav1.ConditionTrue, reason, message)
	if remaining > 0 {
		return
	}
	r.queueStopped = true
	if st.StartTime == nil {
		if st.Phase == "" {
			st.Phase = v1beta1.JobPending
		}
		return
	}
	// It ran before: it is paused by the system until admitted again, and
	// resumes as after a pause.
	r.setCondition(v1beta1.ConditionPaused, metav1.ConditionTrue, reason, message)
	if st.Phase != v1beta1.JobPaused {
		st.Phase = v1beta1.JobPaused
		r.event(corev1.EventTypeNormal, ReasonPaused, "Paused: every pod of the job is gone until Kueue admits it again")
	}
}

// markAdmitted notes, on a queued job allowed to run, that it is admitted.
func (r *reconciler) markAdmitted() {
	message := "admitted by ClusterQueue " + string(r.queue.Workload.Status.Admission.ClusterQueue)
	if last := len(r.topo.Groups) - 1; last >= 0 {
		if g, n := &r.topo.Groups[last], r.admittedReplicas(last); n < g.Replicas {
			message += fmt.Sprintf("; %d of the %d %s replicas, the others wait until the job is admitted again", n, g.Replicas, g.Type)
		}
	}
	r.setCondition(v1beta1.ConditionQueued, metav1.ConditionFalse, v1beta1.ReasonAdmitted, message)
}

// actOnQueue keeps the job's Kueue Workload and, before an admitted job's
// pods are created, reads where the admission places them.
func (r *reconciler) actOnQueue(ctx context.Context) error {
	if r.queue == nil {
		return nil
	}
	want, err := queueWant(r.job, r.topo, kueue.Want{Stopped: r.queueStopped, PodsReady: r.podsReady(),
		Phase: r.status.Phase, Now: r.now})
	if err != nil {
		return err
	}
	if err := r.c.kueue.Sync(ctx, r.jobOwner, r.queue, want); err != nil {
		return err
	}
	if len(r.creates) > 0 && r.queue.Admitted {
		placements, err := r.c.kueue.Placements(ctx, r.queue.Workload)
		if err != nil {
			r.creates = nil
			return err
		}
		r.placements = placements
	}
	return nil
}

// queueWant completes what a queued job asks of its Workload (want, with
// what only the caller knows): its activity, which follows pause, and,
// unless it has finished, its pod sets.
func queueWant(job v1beta1.TrainingJob, topo *podbuilder.Topology, want kueue.Want) (kueue.Want, error) {
	want.Active = !pauseEnabled(job.CommonSpec())
	if want.Phase.IsFinished() {
		return want, nil
	}
	var err error
	want.PodSets, want.Digest, err = kueue.PodSets(job.GetAnnotations(), topo.Groups,
		func(gi int) int32 { return elasticMinCount(topo, gi) })
	return want, err
}

// podsReady says whether every pod the admission allows is Ready or its
// replica has succeeded: Kueue's PodsReady (kueue.PodsReadyCondition).
func (r *reconciler) podsReady() bool {
	if len(r.slots) == 0 {
		return false
	}
	for _, s := range r.slots {
		switch {
		case s.phase == v1beta1.ReplicaSucceeded:
		case s.pod == nil || s.pod.DeletionTimestamp != nil || s.replacing ||
			s.pod.Status.Phase != corev1.PodRunning || !podReady(s.pod):
			return false
		}
	}
	return true
}
