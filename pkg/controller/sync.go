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
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/gang"
	"tensorstack.dev/training/pkg/controller/kueue"
	"tensorstack.dev/training/pkg/controller/owner"
	"tensorstack.dev/training/pkg/podbuilder"
)

// The reconcile of one job (reconciler.run):
//
//  1. Read the job from the cache; skip it while the cache is behind the
//     last status write.
//  2. observe: note whether the expectations are met, read the queue's
//     Workload, claim the job's pods (adopting labelled orphans).
//  3. plan: observe every replica, apply the outcome rules, the deadline,
//     the restart policies and backoff, pause and debug, clean-up and TTL,
//     the startup order and the gang. The plan edits a private copy of the
//     status and lists pods to delete, release and create; it writes
//     nothing.
//  4. act: keep the owned objects (Service, TensorBoard), write the status
//     if it changed, then record the events. Decisions that use up
//     restarts are recorded in the status first (the replaced pod's entry
//     turns Deleted with its UID), so a failure is counted once even when
//     the delete that follows fails or the next reconcile runs on a stale
//     cache. Then the queue, and only if the expectations were met, the
//     gang's group and the pod deletes and creates.

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
	r.topo = podbuilder.NewTopology(h, job, c.clusterDomain)
	return r.run(ctx)
}

// reconciler is one reconcile of one job.
type reconciler struct {
	c      *Controller
	kind   *kindHandler
	key    jobKey
	ekey   string
	logger klog.Logger
	now    time.Time

	job v1beta1.TrainingJob
	// jobOwner is the job as the owner of objects, reporting to the
	// controller's recorder; it follows job.
	jobOwner *owner.Job
	spec     *v1beta1.TrainingJobSpec
	status   *v1beta1.TrainingJobStatus // the copy's status, edited by the plan
	old      *v1beta1.TrainingJobStatus // the status as read
	topo     *podbuilder.Topology

	slots  []*slot
	byName map[string]*slot
	extra  []*corev1.Pod // owned pods that belong to no replica
	stale  []*corev1.Pod // pods of an earlier job of the same name
	gang   *gang.Group   // the group the pods join, when the job asks for one
	// queue is the job's Workload, for a job queued with Kueue while Kueue
	// is usable; nil otherwise. kueue is the Queue it was read from.
	queue *kueue.State
	kueue *kueue.Queue
	// queueName is the queue the job waits or runs in, when it is queued.
	queueName string
	// queueHold, on a queued job, is why it waits regardless of its
	// Workload: Kueue unusable, its queue name required or removed.
	queueHold *queueHold
	// unqueuedWhy, under --queueing=none, is why a job that names a queue
	// runs unqueued.
	unqueuedWhy string
	// queueStopped: a queued job not admitted has no pods left.
	queueStopped bool
	// placements are what Kueue's admission asks of each pod set's pods.
	placements map[v1beta1.ReplicaType]*podbuilder.Placement

	// satisfied: the caches show every create and delete the controller
	// made for the job, so pods may be created and deleted now.
	satisfied bool
	// cacheBehind (!satisfied): a pod missing from the cache may exist.
	cacheBehind bool
	// firstPods: this reconcile only creates a new job's first pods, and
	// writes its status after them (firstPodsOnly).
	firstPods bool

	// scaleNoted: the Scaled event of this reconcile is recorded.
	scaleNoted bool

	// stopDecided, once a stop that removes running pods was decided or
	// held now, is whether it goes ahead (stopRunning); asks are the pods
	// to ask for a checkpoint, unasks those to take a called-off request
	// from, holdResize a resize held for one.
	stopDecided *bool
	asks        []*corev1.Pod
	unasks      []*corev1.Pod
	holdResize  bool
	// resumeLagging are running pods whose resume annotations lag behind
	// the latest checkpoint.
	resumeLagging []*corev1.Pod
	// jobRestartDraining: a whole-job restart waits for old pods to go.
	jobRestartDraining bool
	// stallLogs: the job stalled and acts on it; its pods' last log lines
	// are read into status.stall before the status is written.
	stallLogs bool
	// attemptLogReads are failed replicas whose log tails go into
	// status.attempts before the status is written (attempts.go).
	attemptLogReads []attemptLogRead

	restarts      map[v1beta1.ReplicaType]int32 // replacements decided now, per type
	restartingJob bool                          // a RestartJob decided now
	failure       string                        // a replica failure seen now, for ReplicaFailure

	creates []*slot
	deletes []deletion
	// opens are waiting pods to release (startorder.go); gatesOpen says
	// whether pods created now start released.
	opens     []*corev1.Pod
	gatesOpen bool
	events    []pendingEvent
	requeue   time.Duration
	deleteJob bool
}

// slot is one replica of the job and the pod that currently runs it.
type slot struct {
	id    podbuilder.ReplicaID
	group *podbuilder.ReplicaGroup
	name  string
	pod   *corev1.Pod
	prev  *v1beta1.ReplicaStatus
	phase v1beta1.ReplicaPhase
	// replacing: the pod is being deleted to be created anew.
	replacing bool
	// exit is how the replica's pod ended, while that awaits a decision.
	exit *replicaExit
	// created is the pod this reconcile created for the replica; only its
	// own goroutine writes it (createPod).
	created *corev1.Pod
	// The restart bookkeeping the replica's status carries.
	restartCount int32
	restartAt    *metav1.Time
	reason       string
	// keepRecord: the replica's status stays as recorded (prev).
	keepRecord bool
	// newSuspect: the replica's failure made its node suspect just now.
	newSuspect bool
}

type deletion struct {
	pod *corev1.Pod
	why string
}

type pendingEvent struct {
	eventType, reason, message string
}

func (r *reconciler) setJob(job v1beta1.TrainingJob) {
	// Events need the kind, which objects from the cache may lack.
	job.GetObjectKind().SetGroupVersionKind(r.kind.gvk)
	r.job = job
	r.spec = job.CommonSpec()
	r.status = job.JobStatus()
	r.old = r.status.DeepCopy()
	r.jobOwner = &owner.Job{Object: job, Kind: r.kind.Kind(), Recorder: r.c.recorder, Logger: r.logger}
}

func (r *reconciler) metaNow() *metav1.Time {
	t := metav1.NewTime(r.now).Rfc3339Copy()
	return &t
}

func (r *reconciler) event(eventType, reason, format string, args ...any) {
	r.events = append(r.events, pendingEvent{eventType, reason, fmt.Sprintf(format, args...)})
}

func (r *reconciler) requeueAt(t time.Time) {
	d := t.Sub(r.now)
	if d <= 0 {
		d = time.Millisecond
	}
	if r.requeue == 0 || d < r.requeue {
		r.requeue = d
	}
}

func (r *reconciler) delete(pod *corev1.Pod, why string) {
	r.deletes = append(r.deletes, deletion{pod: pod, why: why})
}

func (r *reconciler) setCondition(typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&r.status.Conditions, metav1.Condition{
		Type:               typ,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: r.job.GetGeneration(),
		LastTransitionTime: *r.metaNow(),
	})
}

// run reconciles the job in three steps: observe what it has, plan what
// should change, act on the plan.
func (r *reconciler) run(ctx context.Context) (time.Duration, error) {
	if err := r.topo.LimitError(); err != nil {
		return 0, r.refuseOverLimit(ctx, err)
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
	return nil
}

// plan decides, without writing anything: it applies the job-level
// policies (outcome, deadline, restarts and backoff, pause and debug,
// clean-up and TTL, startup order, gang) to a private copy of the status,
// and lists the pods to create, delete and release.
func (r *reconciler) plan() {
	r.resolveReplicaFailure(ReasonTooManyReplicas, ReasonReplicasWithinLimit, "the job is within the limits on replicas")
	if r.old.Phase.IsFinished() {
		r.planFinished()
	} else {
		r.planActive()
		r.planStartupGates()
		r.planUnqueued()
	}
	r.planCheckpointRequest()
	r.planResumeAnnotations()
	r.fillStatus()
	r.planAccounting()
	r.planGang()
	r.resolveReplicaFailure(ReasonStatusTooLarge, ReasonStatusStored, "the job's status is stored again")
	r.firstPods = r.firstPodsOnly()
}

// act carries the plan out, in the order that keeps decisions durable:
//
//  1. The objects the job owns by name: its Service and TensorBoard.
//  2. The status, unless it describes only the first pods (written after
//     they exist) or only starts that may settle first; then the events
//     that the status explains.
//  3. The pods whose outcome the status now holds lose their finalizer;
//     the queue's Workload follows the job; an expired job is deleted.
//  4. Only once the cache has caught up: the gang's group, then the pod
//     deletes and creates.
func (r *reconciler) act(ctx context.Context) (time.Duration, error) {
	var errs []error
	if err := r.syncOwnedObjects(ctx); err != nil {
		errs = append(errs, err)
	}
	if r.stallLogs {
		r.readStallLogs(ctx)
	}
	r.readAttemptLogs(ctx)
	if !r.firstPods && !r.holdStarts() {
		if err := r.writeStatus(ctx); err != nil {
			return 0, err
		}
	}
	r.flushEvents()
	if err := r.askForCheckpoint(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := r.updateResumeAnnotations(ctx); err != nil {
		errs = append(errs, err)
	}
	// The status holds the outcomes now: the pods may go.
	if err := r.releaseRecorded(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := r.actOnQueue(ctx); err != nil {
		errs = append(errs, err)
	}
	if r.deleteJob {
		return 0, r.deleteExpiredJob(ctx)
	}
	if !r.satisfied {
		// The cache is behind what we did; the events that catch it up
		// requeue the job. Should they never come, look again once the
		// expectations have expired.
		c, d := r.c.expectations.Pending(r.ekey)
		r.logger.V(4).Info("Waiting for the cache to catch up", "creations", c, "deletions", d)
		r.requeueAt(r.now.Add(r.c.expectations.ttl))
		return r.requeue, errors.Join(errs...)
	}
	if err := r.actOnPods(ctx); err != nil {
		errs = append(errs, err)
	}
	return r.requeue, errors.Join(errs...)
}

// syncOwnedObjects keeps the job's Service (while it runs) and its
// TensorBoard.
func (r *reconciler) syncOwnedObjects(ctx context.Context) error {
	var errs []error
	if !r.old.Phase.IsFinished() {
		errs = append(errs, r.ensureService(ctx))
	}
	tb, err := r.c.tensorBoard.Sync(ctx, r.jobOwner, r.spec.TensorboardSpec, r.old.Tensorboard)
	r.status.Tensorboard = tb
	errs = append(errs, err)
	return errors.Join(errs...)
}

// actOnPods makes the gang's group exist before the pods that join it, then
// deletes and creates pods; a first status is written once they exist.
func (r *reconciler) actOnPods(ctx context.Context) error {
	var errs []error
	ready, err := r.syncGang(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	if !ready {
		r.creates = nil
	}
	if err := r.execute(ctx); err != nil {
		errs = append(errs, err)
	}
	if r.firstPods {
		// The first status describes the pods just created.
		for _, s := range r.slots {
			if s.created != nil {
				s.pod, s.phase = s.created, podPhase(s.created)
			}
		}
		r.fillStatus()
		r.markInitialized()
		if err := r.writeStatus(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// firstPodsMaxReplicas bounds the jobs whose first status is written after
// their pods are created; its status is far below any size limit.
const firstPodsMaxReplicas = 64

// firstPodsOnly says whether this reconcile only creates a new job's first
// pods: it records no decision, so its status need not be written before
// the creates; written after them, it holds the pods' UIDs, and the pods'
// own events find nothing left to write. One status write fewer per job.
// A job waiting for its gang group or its queue, which may create nothing
// now, writes first as any other.
func (r *reconciler) firstPodsOnly() bool {
	// A job with many replicas writes first: its status could outgrow what
	// etcd stores, and then no pod may be made (reportStatusTooLarge).
	return r.old.Phase == "" && r.satisfied && r.topo.Total <= firstPodsMaxReplicas &&
		len(r.creates) > 0 && len(r.deletes) == 0 &&
		r.gang == nil && r.queue == nil && !r.deleteJob && !r.status.Phase.IsFinished()
}

// flushEvents records the events the plan collected; called once the
// status that explains them is written.
func (r *reconciler) flushEvents() {
	for _, e := range r.events {
		r.c.recorder.Event(r.job, e.eventType, e.reason, e.message)
	}
	r.events = nil
}

// writeStatus sends the status to the apiserver when it changed.
func (r *reconciler) writeStatus(ctx context.Context) error {
	if equality.Semantic.DeepEqual(r.old, r.status) {
		return nil
	}
	updated, err := r.patchStatus(ctx)
	if err != nil {
		err = fmt.Errorf("updating status of %s %s/%s: %w", r.key.Kind, r.key.Namespace, r.key.Name, err)
		if isTooLarge(err) {
			return r.reportStatusTooLarge(ctx, err)
		}
		return err
	}
	r.logger.V(4).Info("Updated job status", "phase", r.status.Phase)
	r.c.statusWrites.wrote(r.key, updated.GetResourceVersion())
	if !r.old.Phase.IsFinished() && r.status.Phase.IsFinished() {
		observeFinished(r.key.Kind, updated)
	}
	observeAccounting(updated, r.old.Accounting, r.status.Accounting)
	r.setJob(updated)
	return nil
}

// patchStatus stores r.status, changed from r.old, and returns the job as
// stored.
func (r *reconciler) patchStatus(ctx context.Context) (v1beta1.TrainingJob, error) {
	patch, err := statusPatch(r.job.GetUID(), r.old, r.status)
	if err != nil {
		return nil, fmt.Errorf("encoding the status patch: %w", err)
	}
	r.logger.V(5).Info("Patching job status", "patch", string(patch))
	return r.kind.patchStatus(ctx, r.job, patch)
}
