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
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// The reconcile of one job, in the order this file states it:
//
//  1. syncJob reads the job from the cache; it skips a job while the cache
//     is behind the last status write, and leaves a job that another
//     controller manages (spec.managedBy).
//  2. observe: whether the expectations are met, the queue's Workload, the
//     job's pods (adopting labelled orphans), sorted into replica slots
//     (plan.go holds this observed state).
//  3. plan: the policies in order (planActive names them), each deciding on
//     a private copy of the status and listing pods to delete, release and
//     create. The plan writes nothing.
//  4. act (act.go): the owned objects, then the status if it changed, then
//     the events it explains, then the queue and, once the cache has caught
//     up, the gang's group and the pod deletes and creates. Decisions that
//     use up restarts are recorded in the status first (the replaced pod's
//     entry turns Deleted with its UID), so a failure is counted once even
//     when the delete that follows fails or the next reconcile runs on a
//     stale cache.

// syncJob reconciles one job. It returns how long to wait before the job
// needs another look (for a deadline or a TTL), or an error to retry.
func (c *Controller) syncJob(ctx context.Context, key jobKey) (requeueAfter time.Duration, err error) {
	h := c.kinds[key.Kind]
	if h == nil {
		return 0, nil
	}
	logger := klog.FromContext(ctx).WithValues("kind", key.Kind, "job", klog.KRef(key.Namespace, key.Name))
	ctx = klog.NewContext(ctx, logger)
	start := c.clock.Now()
	defer func() {
		observeReconcile(key.Kind, c.clock.Since(start), err)
		logger.V(4).Info("Finished syncing job", "duration", c.clock.Since(start), "requeueAfter", requeueAfter, "err", err)
	}()

	cached, err := c.lookUpJob(ctx, h, key)
	if cached == nil && err == nil {
		return 0, nil
	}
	if apierrors.IsNotFound(err) {
		c.expectations.DeleteExpectations(key.String())
		// Its pods are orphans on their way out; no outcome is needed.
		return 0, c.releaseAll(ctx, logger, key, "")
	}
	if err != nil {
		return 0, err
	}
	if c.statusWrites.behind(key, cached.GetResourceVersion()) {
		// The informer's event for the write queues the job again; the
		// requeue is a safety net should that event be lost.
		logger.V(4).Info("The cache is behind the last status write; waiting for it")
		return statusWriteWait, nil
	}
	if cached.GetDeletionTimestamp() != nil {
		// The garbage collector removes what the job owns; the finalizers
		// must not hold it up.
		return 0, c.releaseAll(ctx, logger, key, cached.GetUID())
	}
	if managedBy := cached.CommonSpec().ManagedBy; !batch.ManagedByUs(managedBy) {
		// Another controller runs it (MultiKueue, in a worker cluster) and
		// writes its status: nothing here may act on it but its Workload.
		if batch.DispatchedByMultiKueue(managedBy) {
			return 0, c.syncDispatched(ctx, h, cached, logger)
		}
		logger.V(4).Info("Leaving the job to the controller spec.managedBy names", "managedBy", *managedBy)
		return 0, nil
	}
	// Only the status is edited: copying the spec, pod templates and all, on
	// every reconcile would cost more than the rest of a quiet reconcile.
	job, ok := h.statusCopy(cached)
	if !ok {
		return 0, fmt.Errorf("%T is not a %s", cached, key.Kind)
	}
	r := &reconciler{
		c:        c,
		kind:     h,
		key:      key,
		ekey:     key.String(),
		logger:   logger,
		now:      c.clock.Now(),
		restarts: map[v1beta1.ReplicaType]int32{},
	}
	r.setJob(job)
	r.topo = podbuilder.NewTopology(h.Adapter, job, c.clusterDomain)
	return r.run(ctx)
}

// run reconciles the job in three steps: observe what it has, plan what
// should change, act on the plan.
func (r *reconciler) run(ctx context.Context) (time.Duration, error) {
	if err := r.topo.LimitError(); err != nil {
		r.planOverLimit(err)
		return 0, r.actOverLimit(ctx)
	}
	if err := r.observe(ctx); err != nil {
		return 0, err
	}
	r.plan()
	return r.act(ctx)
}

// observe reads what the job has: whether the cache shows every create and
// delete made for it, its queue's Workload, and its replicas' pods, adopting
// labelled orphans.
func (r *reconciler) observe(ctx context.Context) error {
	r.c.expectations.ForJob(r.ekey, r.job.GetUID())
	r.satisfied = r.c.expectations.SatisfiedExpectations(r.ekey)
	r.cacheBehind = !r.satisfied
	// Before the slots: Kueue may have admitted fewer replicas of an
	// elastic job than it asks for.
	if err := r.readQueue(ctx); err != nil {
		return err
	}
	r.buildSlots()
	pods, err := r.claimPods(ctx, r.old.Phase.IsFinished())
	if err != nil {
		return err
	}
	r.assign(pods)
	r.keepRunningPodsKeys(pods)
	return nil
}

// plan decides, without writing anything: it applies the job-level
// policies to a private copy of the status, and lists the pods to create,
// delete and release.
func (r *reconciler) plan() {
	// A job back within the limits on replicas says so (planOverLimit).
	r.apply(resolvedReplicaFailure(r.status.Conditions, ReasonTooManyReplicas, ReasonReplicasWithinLimit,
		"the job is within the limits on replicas"))

	// The job's outcome and its pods: a finished job's clean-up and TTL
	// (finish.go), or the policies of an active one in their order
	// (planActive), its startup gates and its queue.
	if r.old.Phase.IsFinished() {
		r.apply(r.cleanUp())
	} else {
		r.planActive()
		r.planStartupGates()
		queueAndNodes := r.planUnqueued()
		r.planInPlace()
		r.apply(queueAndNodes.and(r.planInPlaceNodes()))
	}
	r.planAgentStops()

	// What the running pods are told: a checkpoint request no stop needs
	// any more is called off, and lagging resume points are brought up to
	// the latest checkpoint (stops.go).
	r.planCheckpointRequest()
	r.planResumeAnnotations()

	// The status that follows: replicas, phase and conditions
	// (statusderive.go), the time spent in each state (accounting_policy.go),
	// the gang (gang.go).
	derived := r.fillStatus()
	r.status.Accounting = accountState(r.status.Accounting, accountingState(r.status), r.now)
	derived = derived.and(r.planGang())
	derived = derived.and(resolvedReplicaFailure(r.status.Conditions, ReasonStatusTooLarge, ReasonStatusStored,
		"the job's status is stored again"))
	r.apply(derived)
	r.firstPods = r.firstPodsOnly()
}

// planActive plans a job that has not finished: one policy after another,
// each seeing what the ones before it decided. This order is the contract.
// A step that ends the job says how (an ending), and the job finishes once,
// here.
func (r *reconciler) planActive() {
	r.planResize()
	if end := r.planUntilEnd(); end != nil {
		r.finish(*end)
	}
}

// planUntilEnd runs steps 2 to 5, and returns how the job ended when one of
// them ended it.
func (r *reconciler) planUntilEnd() *ending {
	if mayRun, end := r.planAdmission(); !mayRun {
		return end
	}
	debug := podbuilder.DebugEnabled(r.spec)
	r.planReplicaStates(debug)
	if end := r.planOutcome(debug); end != nil {
		return end
	}
	r.planRunOn()
	return nil
}

// planResize is step 1, a resize (elastic_policy.go): pods made for other
// replica counts go, once a checkpoint is written
// (checkpointstop_policy.go); pods beyond the replicas go unless the
// resize waits for it.
func (r *reconciler) planResize() {
	if !pauseEnabled(r.spec) && r.mayRun() && r.resizing() {
		r.stop.holdResize = !r.stopRunning(StopResize, fmt.Sprintf("the job's replicas change to %s", r.topo.Shape()))
	}
	for _, p := range r.extra {
		if p.DeletionTimestamp == nil && !r.stop.holdResize {
			r.decided.delete(p, "it belongs to no replica of the job")
		}
	}
}

// planAdmission is step 2: a paused job (stops.go) and a job its queue has
// not admitted (queue.go) run nothing. It says whether the job may run, and
// how it ended when its pods met the success policy before the stop.
func (r *reconciler) planAdmission() (mayRun bool, end *ending) {
	var d decision
	switch {
	case pauseEnabled(r.spec):
		d, end = r.planPause()
	case !r.mayRun():
		d, end = r.planQueued()
	default:
		mayRun = true
		if r.queued.state != nil {
			d = r.admitted()
		}
	}
	r.apply(d)
	return mayRun, end
}

// planReplicaStates is step 3, what each replica does now: a resume ends a
// pause (stops.go), a whole-job restart waits for its old pods
// (restarts.go), and each replica's exit is noted for step 4.
func (r *reconciler) planReplicaStates(debug bool) {
	r.resume()
	r.planJobRestartDrain()
	for _, s := range r.slots {
		r.observeReplica(s, debug)
	}
}

// planOutcome is step 4, the outcome rules in order; the first that ends
// the job wins: success (success_policy.go), the active deadline
// (deadline_policy.go), each replica's exit (failurerules_policy.go,
// backoff_policy.go, restarts.go; the node it blames:
// suspectnodes_policy.go), the start timeout (startblockers_policy.go), a
// stall (stall_policy.go). It returns how the job ended, if it did.
func (r *reconciler) planOutcome(debug bool) *ending {
	if r.succeeded(debug) {
		return &ending{phase: v1beta1.JobSucceeded, reason: ReasonSucceeded, message: "the job succeeded"}
	}
	if d := decideDeadline(r.spec, r.status.StartTime, r.now); d.exceeded {
		return jobFailed(ReasonDeadlineExceeded, d.message)
	} else if !d.comeBack.IsZero() {
		r.decided.requeueAt(d.comeBack)
	}
	for _, s := range r.slots {
		if !debug {
			r.noteFailedReplica(s)
			s.newSuspect = r.noteSuspectNode(s)
		}
		if reason, message := r.handleExit(s, debug); reason != "" {
			r.failure = message
			return jobFailed(reason, message)
		}
	}
	if end := r.planStartTimeout(); end != nil {
		return end
	}
	stall, end := r.planStall(debug)
	if end != nil {
		end.with = stall
		return end
	}
	r.apply(stall)
	return nil
}

// planStartTimeout fails a job whose replicas did not all start within its
// start timeout (decideStartTimeout).
func (r *reconciler) planStartTimeout() *ending {
	var replicas []startingReplica
	if r.spec.RunPolicy.StartTimeoutSeconds != nil {
		// Only a job with a start timeout pays for the list, on every
		// reconcile of every active job.
		replicas = make([]startingReplica, len(r.slots))
		for i, s := range r.slots {
			replicas[i] = startingReplica{host: s.id.Hostname(), pod: s.pod}
		}
	}
	blocker := func(p *corev1.Pod) (string, string) { return podStartBlocker(p, r.mountFailure) }
	timeout := decideStartTimeout(r.spec.RunPolicy.StartTimeoutSeconds, replicas, r.now, blocker)
	if !timeout.comeBack.IsZero() {
		r.decided.requeueAt(timeout.comeBack)
	}
	if timeout.reason == "" {
		return nil
	}
	r.failure = timeout.message
	return jobFailed(timeout.reason, timeout.message)
}

// planRunOn is step 5, the job runs on: the replicas without a pod get one,
// a new attempt opens when pods are made for a job that had none
// (attempts.go), and the phase and conditions follow (statusderive.go).
func (r *reconciler) planRunOn() {
	started := r.topo.Total > 0
	for _, s := range r.slots {
		if s.pod == nil && s.phase == v1beta1.ReplicaCreating && !r.stop.holdResize {
			r.creates = append(r.creates, s)
		}
		if s.phase != v1beta1.ReplicaRunning && s.phase != v1beta1.ReplicaSucceeded {
			started = false
		}
	}
	r.beginAttempt()
	r.status.Phase = activePhase(r.status.Phase, started)
	r.apply(initializedCondition(r.status.Conditions, r.slots).and(
		replicaFailureCondition(r.status.Conditions, r.failure, started)))
}

// planOverLimit plans a job beyond the limits every job keeps (see
// Topology.limitError): no slot, pod or replica status is built for it, and
// no pod is created or deleted. The job says why in its ReplicaFailure
// condition (reason TooManyReplicas) and a Warning event, keeps its phase
// (Pending if it had none), and waits for its spec to change.
func (r *reconciler) planOverLimit(why error) {
	message := fmt.Sprintf("%v: the controller creates no pods for it until spec.replicaSpecs is within the limits", why)
	r.logger.V(2).Info("Not acting on a job beyond the limits", "reason", why)
	if c := meta.FindStatusCondition(r.status.Conditions, v1beta1.ConditionReplicaFailure); c == nil ||
		c.Status != metav1.ConditionTrue || c.Reason != ReasonTooManyReplicas || c.Message != message {
		r.decided.event(corev1.EventTypeWarning, ReasonTooManyReplicas, "%s", message)
	}
	r.setCondition(v1beta1.ConditionReplicaFailure, metav1.ConditionTrue, ReasonTooManyReplicas, message)
	if r.status.Phase == "" {
		r.status.Phase = v1beta1.JobPending
	}
	r.status.ObservedGeneration = r.job.GetGeneration()
}

// planStartupGates lists the waiting pods to release, once every leader is
// Ready (decideStartGates).
func (r *reconciler) planStartupGates() {
	if !podbuilder.InOrder(r.spec) || r.status.Phase.IsFinished() {
		return
	}
	in := startGatesInput{}
	for _, id := range r.kind.Leaders(r.topo) {
		var p *corev1.Pod
		if s := r.byName[podbuilder.PodName(r.job.GetName(), id)]; s != nil {
			p = s.pod
		}
		in.leaders = append(in.leaders, p)
	}
	for _, s := range r.slots {
		if s.pod != nil {
			in.pods = append(in.pods, s.pod)
		}
	}
	d := decideStartGates(in)
	r.gatesOpen, r.opens = d.open, d.release
}
