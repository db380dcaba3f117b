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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/kueue"
)

// What the reconcile does for a job queued with Kueue (package kueue keeps
// its Workload): it reads the Workload's state, plans a job that may not
// run like a paused one, notes the admission, and acts on the Workload and
// the admission's placements.

// setUpQueueing watches the Workloads when jobs are queued with Kueue.
func (c *Controller) setUpQueueing(logger klog.Logger, opts Options) error {
	c.kueue = opts.Kueue
	if c.kueue == nil {
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
	remaining := r.stopPods("the job is no longer admitted by Kueue", v1beta1.ReplicaCreating)
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
	default:
		message = fmt.Sprintf("quota reserved in queue %s; waiting for admission checks", kueue.QueueName(r.job))
	}
	if c := meta.FindStatusCondition(st.Conditions, v1beta1.ConditionQueued); c == nil || c.Status != metav1.ConditionTrue || c.Reason != reason {
		if q.Evicted != nil {
			r.event(corev1.EventTypeWarning, reason, "Evicted by Kueue: %s", q.Evicted.Message)
		}
	}
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
	cq, _, _ := unstructured.NestedString(r.queue.Workload.Object, "status", "admission", "clusterQueue")
	message := "admitted by ClusterQueue " + cq
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
	want := kueue.Want{Active: !pauseEnabled(r.spec), Stopped: r.queueStopped, Phase: r.status.Phase, Now: r.now}
	if !want.Phase.IsFinished() {
		var err error
		if want.PodSets, want.Digest, err = kueue.PodSets(r.topo.Groups, r.elasticMinCount); err != nil {
			return err
		}
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
