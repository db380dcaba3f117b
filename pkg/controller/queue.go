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
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/kueue"
)

// What the reconcile does for a job queued with Kueue (package kueue keeps
// its Workload): it decides whether the job is queued and in which queue,
// reads the Workload's state, plans a job that may not run like a paused
// one, notes the admission, and acts on the Workload and the admission's
// placements.
//
// Queueing fails closed. A job is queued when it names a queue, when it was
// queued before (its Queued condition says so: removing the queue name does
// not release it), or when Kueue's own settings put a new job that names no
// queue in its namespace's default LocalQueue or make it wait for one
// (kueue.Management). A queued job runs only under an admitted Workload:
// while Kueue is not served, may not be used, or its caches are not yet
// filled (kueue.Gate), such a job waits, unless its queue had admitted it
// already. Only --queueing=none runs jobs that name a queue unqueued.

// setUpQueueing watches the Workloads of every Queue the Gate builds, and
// looks at every job again when Kueue becomes usable or stops being so.
func (c *Controller) setUpQueueing(logger klog.Logger, opts Options) error {
	c.queueing = opts.Queueing
	if c.queueing == nil {
		c.queueing = kueue.DisabledGate("the controller runs with --queueing=none")
	}
	c.kueueManagement = opts.KueueManagement
	c.queueing.OnChange(func(kueue.Availability) { c.enqueueAllJobs(logger) })
	return c.queueing.OnQueue(func(q *kueue.Queue) error {
		// Not among c.synced: the controller starts without Kueue's caches,
		// and the Gate is not usable until they are filled.
		return c.enqueueOwnersOf(logger, "Kueue Workloads", q.Informer())
	})
}

// enqueueAllJobs queues every cached job: what the queueing system allows
// has changed for all of them.
func (c *Controller) enqueueAllJobs(logger klog.Logger) {
	for kind, h := range c.kinds {
		jobs, err := h.list()
		if err != nil {
			logger.Error(err, "Listing jobs to look at again", "kind", kind)
			continue
		}
		for _, job := range jobs {
			c.enqueue(jobKey{Kind: kind, Namespace: job.GetNamespace(), Name: job.GetName()})
		}
	}
}

// readQueue decides whether the job is queued, and in which queue, and
// reads its Workload when Kueue is usable (see the comment at the top).
func (r *reconciler) readQueue(ctx context.Context) error {
	q, availability := r.c.queueing.Current()
	name := kueue.QueueName(r.job)
	if availability.Reason == kueue.ReasonDisabled {
		r.queued.unqueuedWhy = availability.Message
		return nil
	}
	wasQueued := batch.QueueWaiting(r.old.Conditions) || batch.QueueAdmitted(r.old.Conditions)
	if name == "" {
		if !wasQueued && (r.old.StartTime != nil || r.old.Phase.IsFinished()) {
			// It started unqueued: what Kueue decides for new jobs is not
			// for it.
			return nil
		}
		decided, hold, err := r.queueOfUnnamed(ctx, q, availability)
		if err != nil {
			return err
		}
		if decided == "" {
			inQueue, err := r.wasInQueue(q, availability, wasQueued)
			if err != nil {
				return err
			}
			if !inQueue {
				r.queued.hold = hold
				r.queued.neverQueued = wasQueued && hold == nil
				return nil
			}
		}
		// A job queued before stays queued: in the default LocalQueue that
		// took it, else where its Workload is (its name was removed).
		name = decided
	}
	r.queued.name = name
	if q == nil {
		if !batch.QueueAdmitted(r.old.Conditions) {
			r.queued.hold = &queueHold{v1beta1.ReasonQueueingUnavailable, "Kueue cannot be used now: " + availability.Message}
		}
		// An admitted job keeps the admission it had: Kueue cannot take
		// it back while it is gone, and the pods keep their quota.
		return nil
	}
	r.queued.queue = q
	st, err := q.Read(r.jobOwner)
	if err != nil {
		return err
	}
	r.queued.state = st
	if name == "" {
		// The queue name was removed while the job was queued: it stays
		// in the queue its Workload names.
		if st.Workload != nil {
			r.queued.name = string(st.Workload.Spec.QueueName)
		}
		if !st.Admitted {
			r.queued.hold = &queueHold{v1beta1.ReasonQueueNameRemoved, fmt.Sprintf(
				"the job's queue name was removed while it waited; a queued job runs only once admitted, so it waits "+
					"in queue %s (name a queue again to move it)", r.queued.name)}
			if st.Workload == nil {
				r.queued.hold.message = "the job's queue name was removed while it waited; a queued job runs only " +
					"once admitted: name a queue again"
			}
		}
	}
	if st.Unadopted {
		sets, _, err := kueue.PodSets(r.job.GetAnnotations(), r.topo.Groups,
			func(gi int) int32 { return elasticMinCount(r.topo, gi) }, r.job.JobStatus().SuspectNodeNames())
		if err != nil {
			return err
		}
		st.Mismatch = kueue.MatchPodSets(st.Workload.Spec.PodSets, sets)
	}
	return nil
}

// wasInQueue says whether a job that names no queue now was in a Kueue
// queue: it waited or was admitted, and, where Kueue can be used to tell,
// it has a Workload or an admission. A job that waited only while the
// controller could not tell (queueOfUnnamed) was in none, nor was any job
// of a cluster that serves no Kueue at all, where no Workload can be.
func (r *reconciler) wasInQueue(q *kueue.Queue, availability kueue.Availability, wasQueued bool) (bool, error) {
	if !wasQueued || batch.QueueAdmitted(r.old.Conditions) {
		return wasQueued, nil
	}
	if q == nil {
		// It stays where it waited until Kueue can tell.
		return availability.Reason != kueue.ReasonNotInstalled, nil
	}
	st, err := q.Read(r.jobOwner)
	if err != nil {
		return false, err
	}
	return st.Workload != nil || st.Admitted, nil
}

// queueOfUnnamed is the queue Kueue's settings put a job that names no
// queue in: the namespace's default LocalQueue, or none, with the hold of
// a job that must name one. The job runs unqueued only when the controller
// can tell it would not be queued: while Kueue is installed but cannot be
// used, whether the namespace has a default LocalQueue is unknown, and a job
// Kueue may manage waits as one that names a queue does.
func (r *reconciler) queueOfUnnamed(ctx context.Context, q *kueue.Queue, availability kueue.Availability) (string, *queueHold, error) {
	namespace := r.job.GetNamespace()
	var namespaceLabels map[string]string
	readLabels := func() (map[string]string, error) {
		if namespaceLabels == nil {
			ns, err := r.c.kubeClient.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("reading namespace %s for Kueue's managedJobsNamespaceSelector: %w", namespace, err)
			}
			namespaceLabels = ns.Labels
			if namespaceLabels == nil {
				namespaceLabels = map[string]string{}
			}
		}
		return namespaceLabels, nil
	}
	hasDefault := false
	// Without Kueue there is no LocalQueue either.
	if q != nil || availability.Reason != kueue.ReasonNotInstalled {
		unknown := &queueHold{v1beta1.ReasonQueueingUnavailable, fmt.Sprintf(
			"Kueue cannot be used now, and it may queue the jobs in namespace %s that name no queue (in a LocalQueue named %s, "+
				"or by manageJobsWithoutQueueName): the job waits until the controller can tell. %s",
			namespace, kueue.DefaultLocalQueue, availability.Message)}
		if q == nil && availability.Reason == kueue.ReasonForbidden {
			// The rights to read a namespace's labels come with Kueue's
			// (artifacts/deploy/components/kueue): asking would be refused.
			return "", unknown, nil
		}
		// Where Kueue would leave the job alone even beside a default
		// LocalQueue, whether there is one does not matter.
		if decision, err := r.c.kueueManagement.DecideUnnamed(true, readLabels); err != nil || decision == kueue.UnnamedRuns {
			return "", nil, err
		}
		if q == nil {
			return "", unknown, nil
		}
		var err error
		if hasDefault, err = q.HasDefaultLocalQueue(ctx, namespace); err != nil {
			return "", nil, err
		}
	}
	decision, err := r.c.kueueManagement.DecideUnnamed(hasDefault, readLabels)
	switch {
	case err != nil:
		return "", nil, err
	case decision == kueue.UnnamedInDefaultQueue:
		return kueue.DefaultLocalQueue, nil, nil
	case decision == kueue.UnnamedNeedsQueue:
		return "", &queueHold{v1beta1.ReasonQueueNameRequired, fmt.Sprintf(
			"Kueue manages the jobs that name no queue in namespace %s (manageJobsWithoutQueueName): the job waits until "+
				"it names one (the label %s)", namespace, kueue.LabelQueueName)}, nil
	}
	return "", nil, nil
}

// planUnqueued says, on a job that names a queue while the controller
// queues nothing (--queueing=none), that it runs unqueued and why: a job
// must not pass its quota in silence. A job that waited only until the
// controller could tell that Kueue leaves it alone loses its Queued
// condition. It returns the Queued condition and event it decided.
func (r *reconciler) planUnqueued() (d decision) {
	if r.queued.neverQueued {
		meta.RemoveStatusCondition(&r.status.Conditions, v1beta1.ConditionQueued)
	}
	queue := kueue.QueueName(r.job)
	if r.queued.unqueuedWhy == "" || queue == "" || r.status.Phase.IsFinished() {
		return d
	}
	message := fmt.Sprintf("the job names queue %s but runs unqueued: %s", queue, r.queued.unqueuedWhy)
	if c := meta.FindStatusCondition(r.status.Conditions, v1beta1.ConditionQueued); c == nil || c.Reason != v1beta1.ReasonUnqueued {
		d.event(corev1.EventTypeWarning, v1beta1.ReasonUnqueued, "Runs unqueued: %s", message)
		unqueuedJobs.WithLabelValues(r.kind.Kind()).Inc()
	}
	d.setCondition(v1beta1.ConditionQueued, metav1.ConditionFalse, v1beta1.ReasonUnqueued, message)
	return d
}

// mayRun says whether a queued job may run now: it is not queued, or its
// queue admitted it (now, or before Kueue became unusable).
func (r *reconciler) mayRun() bool {
	if r.queued.hold != nil {
		return false
	}
	return r.queued.state == nil || r.queued.state.Admitted
}

// planQueued is the plan of a queued job that may not run: like a pause,
// every pod goes; the job is Pending until it was first admitted, Paused
// after an eviction. It returns the queue's conditions and events, or how
// the job ended when it succeeded before the stop.
func (r *reconciler) planQueued() (d decision, end *ending) {
	if end := r.succeededBeforeStop("its queue's stop"); end != nil {
		return d, end
	}
	st := r.status
	reason, message := queueWait(r.queued.hold, r.queued.state, r.queued.name, podSetCount(r.topo))
	if c := meta.FindStatusCondition(st.Conditions, v1beta1.ConditionQueued); c == nil || c.Status != metav1.ConditionTrue || c.Reason != reason {
		switch {
		case r.queued.hold != nil:
			d.event(corev1.EventTypeWarning, reason, "Waits: %s", message)
			heldJobs.WithLabelValues(r.kind.Kind(), reason).Inc()
		case r.queued.state.Evicted != nil:
			d.event(corev1.EventTypeWarning, reason, "Evicted by Kueue: %s", r.queued.state.Evicted.Message)
		case r.queued.state.Mismatch != "":
			d.event(corev1.EventTypeWarning, reason, "Not taking Workload %s: %s", r.queued.state.Workload.Name, r.queued.state.Mismatch)
			heldJobs.WithLabelValues(r.kind.Kind(), reason).Inc()
		}
	}
	if !r.stopRunning(StopEvicted, message) {
		r.holdPods()
		d.setCondition(v1beta1.ConditionQueued, metav1.ConditionTrue, reason, message+"; "+r.checkpointWaitMessage())
		return d, nil
	}
	remaining := r.stopPods("the job is not admitted by its queue", v1beta1.ReplicaCreating)
	d.setCondition(v1beta1.ConditionQueued, metav1.ConditionTrue, reason, message)
	if remaining > 0 {
		return d, nil
	}
	r.queued.stopped = true
	if st.StartTime == nil {
		if st.Phase == "" {
			st.Phase = v1beta1.JobPending
		}
		return d, nil
	}
	// It ran before: it is paused by the system until admitted again, and
	// resumes as after a pause.
	d.setCondition(v1beta1.ConditionPaused, metav1.ConditionTrue, reason, message)
	if st.Phase != v1beta1.JobPaused {
		st.Phase = v1beta1.JobPaused
		d.event(corev1.EventTypeNormal, ReasonPaused, "Paused: every pod of the job is gone until its queue admits it again")
	}
	return d, nil
}

// admitted notes, on a queued job allowed to run, that it is admitted.
func (r *reconciler) admitted() (d decision) {
	d.setCondition(v1beta1.ConditionQueued, metav1.ConditionFalse, v1beta1.ReasonAdmitted, admittedMessage(r.topo, r.queued.state))
	return d
}

// actOnQueue keeps the job's Kueue Workload and, before an admitted job's
// pods are created, reads where the admission places them.
func (r *reconciler) actOnQueue(ctx context.Context) error {
	if r.queued.state == nil {
		return nil
	}
	want, err := queueWant(r.job, r.topo, kueue.Want{QueueName: r.queued.name, Stopped: r.queued.stopped,
		PodsReady: r.podsReady(), Phase: r.status.Phase, AvoidNodes: r.status.SuspectNodeNames(), Now: r.now})
	if err != nil {
		return err
	}
	if r.queued.name == "" && r.queued.state.Workload == nil {
		// Its queue name is gone, and with it the queue to create a
		// Workload in: the job waits (QueueNameRemoved).
		return nil
	}
	if err := r.queued.queue.Sync(ctx, r.jobOwner, r.queued.state, want); err != nil {
		return err
	}
	if len(r.creates) > 0 && r.queued.state.Admitted {
		placements, err := r.queued.queue.Placements(ctx, r.queued.state.Workload)
		if err != nil {
			r.creates = nil
			return err
		}
		r.queued.placements = placements
	}
	return nil
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
