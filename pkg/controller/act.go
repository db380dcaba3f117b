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
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/owner"
	"tensorstack.dev/training/pkg/podbuilder"
)

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
	if !r.readLogTails(ctx) {
		// Nothing is written until the tails are: the pods they come from
		// go once the status holds them. Each read that ends queues the
		// job again; the requeue is a safety net.
		r.logger.V(4).Info("Waiting for the log tails of replicas")
		return logTailTimeout, errors.Join(errs...)
	}
	if !r.firstPods && !r.holdStarts() {
		if err := r.writeStatus(ctx); err != nil {
			return 0, err
		}
	}
	r.flushEvents()
	if err := askForCheckpoint(ctx, r.podClient(), r.logger, r.status.Checkpoint, r.stop.asks, r.stop.unasks); err != nil {
		errs = append(errs, err)
	}
	if err := updateResumeAnnotations(ctx, r.podClient(), r.logger, r.status.Checkpoint, r.stop.resumeLagging); err != nil {
		errs = append(errs, err)
	}
	if err := r.actOnInPlace(ctx); err != nil {
		errs = append(errs, err)
	}
	// The status holds the outcomes now: the pods may go.
	if err := r.releaseRecorded(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := r.actOnQueue(ctx); err != nil {
		errs = append(errs, err)
	}
	if r.decided.deleteJob {
		return 0, r.deleteExpiredJob(ctx)
	}
	if !r.satisfied {
		// The cache is behind what we did; the events that catch it up
		// requeue the job. Should they never come, look again once the
		// expectations have expired.
		c, d := r.c.expectations.Pending(r.ekey)
		r.logger.V(4).Info("Waiting for the cache to catch up", "creations", c, "deletions", d)
		r.decided.requeueAt(r.now.Add(r.c.expectations.ttl))
		return r.decided.after(r.now), errors.Join(errs...)
	}
	if err := r.actOnPods(ctx); err != nil {
		errs = append(errs, err)
	}
	return r.decided.after(r.now), errors.Join(errs...)
}

// syncOwnedObjects keeps the job's Service (while it runs) and its
// TensorBoard.
func (r *reconciler) syncOwnedObjects(ctx context.Context) error {
	var errs []error
	if !r.old.Phase.IsFinished() {
		errs = append(errs, r.ensureService(ctx), r.ensureSSHKeys(ctx))
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
	createErr, err := r.execute(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	if createErr != nil {
		r.setCondition(v1beta1.ConditionReplicaFailure, metav1.ConditionTrue, owner.ReasonFailedCreate, createErr.Error())
		if err := r.writeStatus(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if r.firstPods {
		// The first status describes the pods just created.
		for _, s := range r.slots {
			if s.created != nil {
				s.pod, s.phase = s.created, podPhase(s.created)
			}
		}
		r.apply(r.fillStatus().and(initializedCondition(r.status.Conditions, r.slots)))
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
		len(r.creates) > 0 && len(r.decided.deletes) == 0 &&
		r.gang == nil && r.queued.state == nil && !r.decided.deleteJob && !r.status.Phase.IsFinished()
}

// flushEvents records the events the plan collected; called once the
// status that explains them is written.
func (r *reconciler) flushEvents() {
	for _, e := range r.decided.events {
		r.c.recorder.Event(r.job, e.eventType, e.reason, e.message)
	}
	r.decided.events = nil
}

// writeStatus sends the status to the apiserver when it changed.
func (r *reconciler) writeStatus(ctx context.Context) error {
	if equality.Semantic.DeepEqual(r.old, r.status) {
		return nil
	}
	updated, err := r.patchStatus(ctx)
	if err != nil && isTooLarge(err) && dropProgramText(r.status) {
		// What the job's programs wrote may be what made it too large: try
		// once more without it rather than be refused on every reconcile.
		r.logger.Info("The job's status was too large to store; writing it without log tails and termination messages",
			"err", err.Error())
		updated, err = r.patchStatus(ctx)
	}
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

// actOverLimit writes what planOverLimit decided: the status, then the
// events it explains.
func (r *reconciler) actOverLimit(ctx context.Context) error {
	if err := r.writeStatus(ctx); err != nil {
		return err
	}
	r.flushEvents()
	return nil
}

// reportStatusTooLarge handles a status the apiserver refused for its size.
// The status lists every replica; a job at the replica cap with a very large
// spec can still outgrow what etcd stores. Rather than fail quietly on every
// reconcile, the controller records a Warning event and sets the
// ReplicaFailure condition (reason StatusTooLarge) on the status it last
// stored, which fitted. It acts on nothing meanwhile: what it planned is
// safe to do only once recorded. The returned error has the job retried
// with backoff.
func (r *reconciler) reportStatusTooLarge(ctx context.Context, cause error) error {
	r.logger.Error(cause, "The job's status is too large to store")
	r.c.recorder.Eventf(r.job, corev1.EventTypeWarning, ReasonStatusTooLarge, "Cannot store the job's status: %v", cause)
	*r.status = *r.old.DeepCopy()
	r.setCondition(v1beta1.ConditionReplicaFailure, metav1.ConditionTrue, ReasonStatusTooLarge, fmt.Sprintf(
		"the job's status is too large to store (%v); no pods are created or deleted until it fits", cause))
	r.decided.events = nil
	if equality.Semantic.DeepEqual(r.old, r.status) {
		return cause
	}
	updated, err := r.patchStatus(ctx)
	if err != nil {
		return errors.Join(cause, fmt.Errorf("reporting that the status is too large: %w", err))
	}
	r.c.statusWrites.wrote(r.key, updated.GetResourceVersion())
	r.setJob(updated)
	return cause
}

// tooLargeMessages are how etcd, and its gRPC client, refuse a write over
// their size limits; the apiserver may pass either on in a 500.
var tooLargeMessages = []string{"request is too large", "trying to send message larger than max"}

// isTooLarge says whether a write was refused for its size: a 413 from the
// apiserver, etcd's own refusal passed on, or a 422 whose causes are all
// about length or number of items.
func isTooLarge(err error) bool {
	if apierrors.IsRequestEntityTooLargeError(err) {
		return true
	}
	for _, m := range tooLargeMessages {
		if strings.Contains(err.Error(), m) {
			return true
		}
	}
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	causes := status.Status().Details.Causes
	for _, c := range causes {
		if c.Type != metav1.CauseTypeTooLong && c.Type != metav1.CauseTypeTooMany {
			return false
		}
	}
	return len(causes) > 0
}

// deleteExpiredJob deletes a job whose TTL after finishing has passed;
// what it owns goes with it (background propagation).
func (r *reconciler) deleteExpiredJob(ctx context.Context) error {
	uid := r.job.GetUID()
	policy := metav1.DeletePropagationBackground
	err := r.kind.delete(ctx, r.key.Namespace, r.key.Name, metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &uid},
		PropagationPolicy: &policy,
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting job after its TTL: %w", err)
	}
	if err == nil {
		r.logger.V(2).Info("Deleted job after its TTL")
		r.c.recorder.Event(r.job, corev1.EventTypeNormal, ReasonTTLExpired, "Deleted the job: ttlSecondsAfterFinished passed")
	}
	return nil
}

// releaseRecorded takes the finalizer off the pods whose outcome the stored
// status (r.status, after writeStatus) holds, or no longer needs.
func (r *reconciler) releaseRecorded(ctx context.Context) error {
	finished := r.status.Phase.IsFinished()
	recorded := map[types.UID]bool{}
	for _, t := range r.status.Tasks {
		for _, rs := range t.ReplicaStatus {
			switch rs.Phase {
			case v1beta1.ReplicaSucceeded, v1beta1.ReplicaFailed, v1beta1.ReplicaDeleted:
				if rs.UID != "" {
					recorded[rs.UID] = true
				}
			}
		}
	}
	var release []*corev1.Pod
	for _, s := range r.slots {
		if p := s.pod; p != nil && hasOutcomeFinalizer(p) && (finished || recorded[p.UID]) {
			release = append(release, p)
		}
	}
	for _, p := range append(r.extra, r.stale...) {
		if hasOutcomeFinalizer(p) {
			release = append(release, p)
		}
	}
	return r.c.releasePods(ctx, r.logger, release)
}

// holdStarts says whether this reconcile's status write can wait while
// replicas start (decideStartHold), and then looks at the job again when it
// must be written.
func (r *reconciler) holdStarts() bool {
	until, hold := decideStartHold(startHoldInput{
		old: r.old,
		cur: r.status,
		replica: func(name string) (*v1beta1.ReplicaStatus, *corev1.Pod, bool) {
			s := r.byName[name]
			if s == nil {
				return nil, nil, false
			}
			return s.prev, s.pod, true
		},
		events: len(r.decided.events),
		now:    r.now,
	})
	if !hold {
		return false
	}
	r.logger.V(4).Info("Holding the status while replicas start", "until", until)
	r.decided.requeueAt(until)
	return true
}

// readStallLogs keeps the last lines of each replica's training container
// in status.stall before the pods go, so that a hang can be read after; it
// says whether every one has been read (logtailreads.go).
func (r *reconciler) readStallLogs(ctx context.Context) bool {
	if r.status.Stall == nil {
		r.status.Stall = r.stallRecord()
	}
	var logs []v1beta1.ReplicaLogTail
	all := true
	for _, s := range r.slots {
		if len(logs) == batch.MaxStallLogReplicas {
			break
		}
		if s.pod == nil {
			continue
		}
		tail, ok := r.logTail(ctx, s.pod, "", batch.MaxStallLogLines, batch.MaxStallLogBytes)
		all = all && ok
		logs = append(logs, tail)
	}
	r.status.Stall.Logs = logs
	return all
}

// actOnInPlace writes what planInPlace and planAgentStops decided, after
// the status that records the attempt: the attempt asked of each pod, the
// release with the latest resume point, and the agents' stops.
func (r *reconciler) actOnInPlace(ctx context.Context) error {
	var errs []error
	n := strconv.Itoa(int(r.status.AttemptCount))
	if len(r.inPlace.attemptAsks) > 0 {
		_, err := annotatePods(ctx, r.podClient(), r.logger, r.inPlace.attemptAsks,
			map[string]any{podbuilder.AnnotationAttempt: n, podbuilder.AnnotationAttemptAsked: r.now.UTC().Format(time.RFC3339)},
			"asking for attempt "+n)
		errs = append(errs, err)
	}
	if len(r.inPlace.attemptReleases) > 0 {
		annotations := map[string]any{podbuilder.AnnotationAttemptReleased: n}
		for k, v := range podbuilder.ResumeAnnotations(r.status.Checkpoint) {
			annotations[k] = v
		}
		_, err := annotatePods(ctx, r.podClient(), r.logger, r.inPlace.attemptReleases, annotations, "releasing attempt "+n)
		errs = append(errs, err)
	}
	if len(r.inPlace.agentStops) > 0 {
		_, err := annotatePods(ctx, r.podClient(), r.logger, r.inPlace.agentStops,
			map[string]any{podbuilder.AnnotationRestartAgent: podbuilder.RestartAgentStop}, "stopping the restart agent")
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// readLogTails reads what the plan needs of the replicas' logs into the
// status (a stall's, the failed replicas'), and says whether every tail has
// been read.
func (r *reconciler) readLogTails(ctx context.Context) bool {
	stall := !r.stallLogs || r.readStallLogs(ctx)
	attempts := r.readAttemptLogs(ctx)
	return stall && attempts
}

// readAttemptLogs fills in the log tails noteFailedReplica planned, and
// says whether every one has been read (logtailreads.go). It runs before
// the status is written, and so before the pods are deleted; the failure
// may have ended its attempt by then.
func (r *reconciler) readAttemptLogs(ctx context.Context) bool {
	all := true
	for _, read := range r.attemptLogReads {
		i := slices.IndexFunc(r.status.Attempts, func(a v1beta1.Attempt) bool { return a.Number == read.attempt })
		if i < 0 || read.index >= len(r.status.Attempts[i].FailedReplicas) {
			continue
		}
		tail, ok := r.logTail(ctx, read.pod, read.container, batch.MaxAttemptLogLines, batch.MaxAttemptLogBytes)
		if !ok {
			all = false
			continue
		}
		f := &r.status.Attempts[i].FailedReplicas[read.index]
		f.Logs, f.LogError = tail.Lines, batch.CutBytes(tail.Error, batch.MaxAttemptLogErrorBytes)
	}
	return all
}

// logTail is the log tail of a container of a pod, read in the background
// (logTailReads); ok is false until the read has ended.
func (r *reconciler) logTail(ctx context.Context, p *corev1.Pod, container string, lines int64,
	maxBytes int) (tail v1beta1.ReplicaLogTail, ok bool) {
	key := logTailKey{job: r.key, pod: p.UID, container: container, lines: lines, maxBytes: maxBytes}
	pods, kind := r.podClient(), r.kind
	return r.c.logTails.get(ctx, key, func(ctx context.Context) v1beta1.ReplicaLogTail {
		return readLogTail(ctx, pods, kind, p, container, lines, maxBytes)
	})
}
