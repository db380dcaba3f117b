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
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// The reconcile of one job, in the order it happens:
//
//  1. Read the job from the cache; note whether the expectations are met.
//  2. Claim its pods (adopting labelled orphans), make sure its Service and
//     TensorBoard exist.
//  3. Plan: observe every replica, apply the outcome rules, the deadline, the
//     restart policies and backoff, pause and debug, clean-up and TTL. The
//     plan edits a private copy of the status and lists pods to delete and
//     replicas to create.
//  4. Write the status if it changed. Decisions that use up restarts are
//     recorded there first (the replaced pod's entry turns Deleted with its
//     UID), so a failure is counted once even when the delete that follows
//     fails or the next reconcile runs on a stale cache.
//  5. Only if the expectations were met: delete and create pods.

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

	cached, err := h.get(key.Namespace, key.Name)
	if apierrors.IsNotFound(err) {
		c.expectations.DeleteExpectations(key.String())
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if cached.GetDeletionTimestamp() != nil {
		// The garbage collector removes what the job owns.
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
	r.topo = newTopology(h, job, c.clusterDomain)
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

	job    v1beta1.TrainingJob
	spec   *v1beta1.TrainingJobSpec
	status *v1beta1.TrainingJobStatus // the copy's status, edited by the plan
	old    *v1beta1.TrainingJobStatus // the status as read
	topo   *Topology

	slots  []*slot
	byName map[string]*slot
	extra  []*corev1.Pod // owned pods that belong to no replica
	env    ReplicaEnv    // built for the first pod the reconcile creates
	gang   *gangGroup    // the group the pods join, when the job asks for one

	restarts map[v1beta1.ReplicaType]int32 // replacements decided now, per type
	failure  string                        // a replica failure seen now, for ReplicaFailure

	creates   []*slot
	deletes   []deletion
	events    []pendingEvent
	requeue   time.Duration
	deleteJob bool
}

// slot is one replica of the job and the pod that currently runs it.
type slot struct {
	id    ReplicaID
	group *ReplicaGroup
	name  string
	pod   *corev1.Pod
	prev  *v1beta1.ReplicaStatus
	phase v1beta1.ReplicaPhase
	// replacing: the pod is being deleted to be created anew.
	replacing bool
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

func (r *reconciler) run(ctx context.Context) (time.Duration, error) {
	if err := r.topo.limitError(); err != nil {
		return 0, r.refuseOverLimit(ctx, err)
	}
	r.resolveReplicaFailure(ReasonTooManyReplicas, ReasonReplicasWithinLimit, "the job is within the limits on replicas")
	satisfied := r.c.expectations.SatisfiedExpectations(r.ekey)
	finished := r.old.Phase.IsFinished()

	r.buildSlots()
	pods, err := r.claimPods(ctx, finished)
	if err != nil {
		return 0, err
	}
	r.assign(pods)

	var errs []error
	if !finished {
		if err := r.ensureService(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if err := r.reconcileTensorBoard(ctx); err != nil {
		errs = append(errs, err)
	}

	if finished {
		r.planFinished()
	} else {
		r.planActive()
	}
	r.fillStatus()
	r.planGang()

	r.resolveReplicaFailure(ReasonStatusTooLarge, ReasonStatusStored, "the job's status is stored again")
	if err := r.writeStatus(ctx); err != nil {
		return 0, err
	}
	r.flushEvents()

	if r.deleteJob {
		return 0, r.deleteExpiredJob(ctx)
	}
	if !satisfied {
		// The cache is behind what we did; the events that catch it up
		// requeue the job. Should they never come, look again once the
		// expectations have expired.
		c, d := r.c.expectations.Pending(r.ekey)
		r.logger.V(4).Info("Waiting for the cache to catch up", "creations", c, "deletions", d)
		r.requeueAt(r.now.Add(r.c.expectations.ttl))
		return r.requeue, errors.Join(errs...)
	}
	// The group comes before the pods that join it.
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
	return r.requeue, errors.Join(errs...)
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
	updated, err := r.kind.updateStatus(ctx, r.job)
	if err != nil {
		err = fmt.Errorf("updating status of %s %s/%s: %w", r.key.Kind, r.key.Namespace, r.key.Name, err)
		if isTooLarge(err) {
			return r.reportStatusTooLarge(ctx, err)
		}
		return err
	}
	r.logger.V(4).Info("Updated job status", "phase", r.status.Phase)
	r.setJob(updated)
	return nil
}

// buildSlots lays out the replicas the spec asks for.
func (r *reconciler) buildSlots() {
	prev := map[string]*v1beta1.ReplicaStatus{}
	for i := range r.old.Tasks {
		t := &r.old.Tasks[i]
		for j := range t.ReplicaStatus {
			prev[t.ReplicaStatus[j].Name] = &t.ReplicaStatus[j]
		}
	}
	// The topology is within batch.MaxTotalReplicas (run checks it first),
	// so these are bounded whatever the spec says.
	r.slots = make([]*slot, 0, r.topo.Total)
	r.byName = make(map[string]*slot, r.topo.Total)
	for gi := range r.topo.Groups {
		g := &r.topo.Groups[gi]
		for i := int32(0); i < g.Replicas; i++ {
			id := ReplicaID{Type: g.Type, Index: i}
			s := &slot{id: id, group: g, name: PodName(r.job.GetName(), id)}
			s.prev = prev[s.name]
			r.slots = append(r.slots, s)
			r.byName[s.name] = s
		}
	}
}

// assign puts the claimed pods into their slots.
func (r *reconciler) assign(pods []*corev1.Pod) {
	for _, p := range pods {
		if s := r.byName[p.Name]; s != nil {
			s.pod = p
		} else {
			r.extra = append(r.extra, p)
		}
	}
}

// planActive plans a job that has not finished.
func (r *reconciler) planActive() {
	st := r.status
	for _, p := range r.extra {
		if p.DeletionTimestamp == nil {
			r.delete(p, "it belongs to no replica of the job")
		}
	}
	if pauseEnabled(r.spec) {
		r.planPause()
		return
	}

	// Resume: a job that was paused starts again with a fresh deadline.
	if c := meta.FindStatusCondition(st.Conditions, v1beta1.ConditionPaused); c != nil && c.Status == metav1.ConditionTrue {
		r.setCondition(v1beta1.ConditionPaused, metav1.ConditionFalse, ReasonResumed, "the job was resumed")
	}
	if st.Phase == v1beta1.JobPaused {
		st.Phase = v1beta1.JobResuming
		st.StartTime = r.metaNow()
		r.event(corev1.EventTypeNormal, ReasonResumed, "Resuming: creating the job's pods again")
	}
	if st.StartTime == nil {
		st.StartTime = r.metaNow()
	}

	debug := debugEnabled(r.spec)
	for _, s := range r.slots {
		r.observe(s, debug)
	}

	// Outcome rules, in order: success, deadline, failures.
	if !debug && r.topo.Total > 0 && r.kind.Succeeded(r.topo, r) {
		r.finish(v1beta1.JobSucceeded, ReasonSucceeded, "the job succeeded")
		return
	}
	if ads := r.spec.RunPolicy.ActiveDeadlineSeconds; ads != nil && *ads > 0 {
		// A deadline stored before the bound existed could overflow the
		// duration; no later deadline than the bound makes a difference.
		seconds := min(*ads, batch.MaxActiveDeadlineSeconds)
		deadline := st.StartTime.Add(time.Duration(seconds) * time.Second)
		if !r.now.Before(deadline) {
			r.finish(v1beta1.JobFailed, ReasonDeadlineExceeded,
				fmt.Sprintf("the job was active longer than activeDeadlineSeconds (%ds)", *ads))
			return
		}
		r.requeueAt(deadline)
	}
	for _, s := range r.slots {
		if reason, message := r.handleTerminated(s, debug); reason != "" {
			r.failure = message
			r.finish(v1beta1.JobFailed, reason, message)
			return
		}
	}

	started := r.topo.Total > 0
	created := true
	for _, s := range r.slots {
		if s.pod == nil {
			r.creates = append(r.creates, s)
			created = false
		}
		if s.phase != v1beta1.ReplicaRunning && s.phase != v1beta1.ReplicaSucceeded {
			started = false
		}
	}
	switch st.Phase {
	case v1beta1.JobRunning:
	case v1beta1.JobResuming:
		if started {
			st.Phase = v1beta1.JobRunning
		}
	default:
		if started {
			st.Phase = v1beta1.JobRunning
		} else {
			st.Phase = v1beta1.JobPending
		}
	}

	if c := meta.FindStatusCondition(st.Conditions, v1beta1.ConditionInitialized); c == nil || c.Status != metav1.ConditionTrue {
		if created {
			r.setCondition(v1beta1.ConditionInitialized, metav1.ConditionTrue, ReasonReplicasCreated, "every replica has its pod")
		} else {
			r.setCondition(v1beta1.ConditionInitialized, metav1.ConditionFalse, ReasonCreatingReplicas, "creating the replicas' pods")
		}
	}
	if r.failure != "" {
		r.setCondition(v1beta1.ConditionReplicaFailure, metav1.ConditionTrue, ReasonReplicaFailed, r.failure)
	} else if c := meta.FindStatusCondition(st.Conditions, v1beta1.ConditionReplicaFailure); c != nil &&
		c.Status == metav1.ConditionTrue && started {
		r.setCondition(v1beta1.ConditionReplicaFailure, metav1.ConditionFalse, ReasonReplicasHealthy, "every replica is running")
	}
}

// observe notes what a replica's pod is doing and finishes replacements
// decided earlier.
func (r *reconciler) observe(s *slot, debug bool) {
	p := s.pod
	if p == nil {
		s.phase = v1beta1.ReplicaCreating
		return
	}
	s.phase = podPhase(p)
	// A replacement recorded in the status (the replica's entry says
	// Deleted, with this pod's UID) is already counted.
	recorded := s.prev != nil && s.prev.Phase == v1beta1.ReplicaDeleted && p.UID != "" && s.prev.UID == p.UID
	if recorded {
		s.replacing, s.phase = true, v1beta1.ReplicaDeleted
	}
	if p.DeletionTimestamp != nil {
		// On its way out; its name is free once it is gone.
		return
	}
	if recorded {
		// The delete has not taken effect yet: just delete again.
		r.delete(p, "it is being replaced")
		return
	}
	if want := runMode(debug); p.Annotations[AnnotationRunMode] != "" && p.Annotations[AnnotationRunMode] != want {
		s.replacing, s.phase = true, v1beta1.ReplicaDeleted
		r.delete(p, fmt.Sprintf("the job's run mode changed to %s", want))
	}
}

// handleTerminated applies the restart policy to a replica whose pod has
// terminated. It returns the reason and message of a job failure, if the
// replica fails the job.
func (r *reconciler) handleTerminated(s *slot, debug bool) (reason, message string) {
	p := s.pod
	if p == nil || s.replacing || p.DeletionTimestamp != nil {
		return "", ""
	}
	policy := s.group.Spec.RestartPolicy
	host := s.id.Hostname()
	switch p.Status.Phase {
	case corev1.PodSucceeded:
		switch {
		case debug:
			r.replace(s, corev1.EventTypeNormal, "debug replica %s exited; starting it again", host)
		case restartsOnSuccess(policy):
			r.replace(s, corev1.EventTypeNormal, "replica %s succeeded; restarting it (restart policy Always)", host)
		}
	case corev1.PodFailed:
		code, known := exitCode(r.kind, p)
		what := "failed"
		if known {
			what = fmt.Sprintf("failed with exit code %d", code)
		}
		switch {
		case debug:
			r.replace(s, corev1.EventTypeNormal, "debug replica %s %s; starting it again", host, what)
		case isDisrupted(p):
			r.replace(s, corev1.EventTypeWarning, "replica %s was disrupted (%s); replacing it without using the backoff",
				host, disruptionReason(p))
		case !restartsOnFailure(policy, code, known):
			return ReasonReplicaFailed, fmt.Sprintf("replica %s %s (restart policy %s)", host, what, restartPolicyName(policy))
		case r.status.BackoffCount >= backoffLimit(r.spec):
			return ReasonBackoffLimitExceeded, fmt.Sprintf("replica %s %s and the job has used all %d of its restarts",
				host, what, backoffLimit(r.spec))
		default:
			r.status.BackoffCount++
			r.failure = fmt.Sprintf("replica %s %s", host, what)
			r.replace(s, corev1.EventTypeWarning, "replica %s %s; restarting it (restart %d of %d)",
				host, what, r.status.BackoffCount, backoffLimit(r.spec))
		}
	}
	return "", ""
}

func restartPolicyName(p v1beta1.RestartPolicy) string {
	if p == "" {
		return string(v1beta1.RestartPolicyNever)
	}
	return string(p)
}

func disruptionReason(p *corev1.Pod) string {
	if p.Status.Reason != "" {
		return p.Status.Reason
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Reason != "" {
			return c.Reason
		}
	}
	return string(corev1.DisruptionTarget)
}

// replace deletes a replica's pod so that a new one is created under the
// same name once the old one is gone.
func (r *reconciler) replace(s *slot, eventType, format string, args ...any) {
	s.replacing, s.phase = true, v1beta1.ReplicaDeleted
	r.restarts[s.id.Type]++
	r.event(eventType, ReasonRestarting, format, args...)
	r.delete(s.pod, "it is being replaced")
}

// planPause deletes every pod; the job is Paused once none is left.
func (r *reconciler) planPause() {
	remaining := len(r.extra)
	for _, s := range r.slots {
		if s.pod == nil {
			s.phase = v1beta1.ReplicaDeleted
			continue
		}
		remaining++
		s.phase = podPhase(s.pod)
		if s.pod.DeletionTimestamp == nil {
			r.delete(s.pod, "the job is paused")
		}
	}
	if remaining > 0 {
		r.setCondition(v1beta1.ConditionPaused, metav1.ConditionTrue, ReasonPausing,
			fmt.Sprintf("waiting for %d pods to terminate", remaining))
		return
	}
	r.setCondition(v1beta1.ConditionPaused, metav1.ConditionTrue, ReasonPaused, "the job is paused: it has no pods")
	if r.status.Phase != v1beta1.JobPaused {
		r.status.Phase = v1beta1.JobPaused
		r.event(corev1.EventTypeNormal, ReasonPaused, "Paused: every pod of the job is gone")
	}
}

// finish makes the job terminal and plans its clean-up.
func (r *reconciler) finish(phase v1beta1.JobPhase, reason, message string) {
	st := r.status
	st.Phase = phase
	if st.CompletionTime == nil {
		st.CompletionTime = r.metaNow()
	}
	if phase == v1beta1.JobSucceeded {
		r.setCondition(v1beta1.ConditionCompleted, metav1.ConditionTrue, ReasonSucceeded, message)
		r.event(corev1.EventTypeNormal, ReasonSucceeded, "Succeeded: %s", message)
	} else {
		r.setCondition(v1beta1.ConditionCompleted, metav1.ConditionTrue, ReasonFailed, message)
		r.setCondition(v1beta1.ConditionFailed, metav1.ConditionTrue, reason, message)
		r.event(corev1.EventTypeWarning, reason, "Failed: %s", message)
		if r.failure != "" {
			r.setCondition(v1beta1.ConditionReplicaFailure, metav1.ConditionTrue, ReasonReplicaFailed, r.failure)
		}
	}
	r.creates = nil
	// Replacements decided in this reconcile stay recorded, but nothing is
	// replaced any more: clean-up decides which pods go.
	r.deletes = nil
	r.planFinished()
}

// planFinished applies the clean-up policy and the TTL to a finished job.
// A job that ran out of time has its running pods stopped whatever the
// policy.
func (r *reconciler) planFinished() {
	st := r.status
	policy := cleanUpPolicy(r.spec)
	stopRunning := false
	if c := meta.FindStatusCondition(st.Conditions, v1beta1.ConditionFailed); c != nil &&
		c.Status == metav1.ConditionTrue && c.Reason == ReasonDeadlineExceeded {
		stopRunning = true
	}
	remove := func(p *corev1.Pod) bool {
		if p.DeletionTimestamp != nil {
			return false
		}
		if policy == v1beta1.CleanUpPolicyAll {
			return true
		}
		return !isTerminated(p) && (policy == v1beta1.CleanUpPolicyUnfinished || stopRunning)
	}
	for _, s := range r.slots {
		if s.pod == nil {
			s.phase = v1beta1.ReplicaDeleted
			continue
		}
		s.phase = podPhase(s.pod)
		if remove(s.pod) {
			r.delete(s.pod, fmt.Sprintf("the job finished (clean-up policy %s)", policy))
		}
	}
	for _, p := range r.extra {
		if p.DeletionTimestamp == nil {
			r.delete(p, "it belongs to no replica of the job")
		}
	}
	if meta.FindStatusCondition(st.Conditions, v1beta1.ConditionRunning) != nil {
		r.setCondition(v1beta1.ConditionRunning, metav1.ConditionFalse, string(st.Phase), "the job finished")
	}

	if ttl := r.spec.RunPolicy.TTLSecondsAfterFinished; ttl != nil {
		done := r.now
		if st.CompletionTime != nil {
			done = st.CompletionTime.Time
		}
		expiry := done.Add(time.Duration(max(*ttl, 0)) * time.Second)
		if r.now.Before(expiry) {
			r.requeueAt(expiry)
		} else {
			r.deleteJob = true
		}
	}
}

// fillStatus derives tasks, counts and the Running condition from the
// planned replicas.
func (r *reconciler) fillStatus() {
	st := r.status
	st.ObservedGeneration = r.job.GetGeneration()
	prevTasks := map[v1beta1.ReplicaType]int32{}
	for _, t := range r.old.Tasks {
		prevTasks[normalizeType(t.Type)] = t.RestartCount
	}
	tasks := make([]v1beta1.TaskStatus, 0, len(r.topo.Groups))
	for gi := range r.topo.Groups {
		g := &r.topo.Groups[gi]
		tasks = append(tasks, v1beta1.TaskStatus{
			Type:         g.Type,
			RestartCount: prevTasks[g.Type] + r.restarts[g.Type],
		})
	}
	var agg v1beta1.Aggregate
	i := 0
	for _, s := range r.slots {
		for tasks[i].Type != s.id.Type {
			i++
		}
		rs := r.replicaStatus(s)
		tasks[i].ReplicaStatus = append(tasks[i].ReplicaStatus, rs)
		switch rs.Phase {
		case v1beta1.ReplicaCreating:
			agg.Creating++
		case v1beta1.ReplicaPending:
			agg.Pending++
		case v1beta1.ReplicaRunning:
			agg.Running++
		case v1beta1.ReplicaSucceeded:
			agg.Succeeded++
		case v1beta1.ReplicaFailed:
			agg.Failed++
		case v1beta1.ReplicaDeleted:
			agg.Deleted++
		default:
			agg.Unknown++
		}
	}
	// Report the types in the order the spec lists them, even where ranks
	// put the master first.
	order := map[v1beta1.ReplicaType]int{}
	for i, spec := range r.spec.ReplicaSpecs {
		if _, seen := order[normalizeType(spec.Type)]; !seen {
			order[normalizeType(spec.Type)] = i
		}
	}
	sort.SliceStable(tasks, func(a, b int) bool { return order[tasks[a].Type] < order[tasks[b].Type] })
	st.Tasks = tasks
	st.Aggregate = agg

	if st.Phase.IsFinished() {
		return
	}
	if st.Phase == v1beta1.JobRunning {
		r.setCondition(v1beta1.ConditionRunning, metav1.ConditionTrue, ReasonReplicasRunning, "the job's replicas are running")
	} else if st.Phase != "" {
		r.setCondition(v1beta1.ConditionRunning, metav1.ConditionFalse, string(st.Phase), runningMessage(st.Phase))
	}
}

func runningMessage(p v1beta1.JobPhase) string {
	switch p {
	case v1beta1.JobPending:
		return "waiting for every replica to start"
	case v1beta1.JobResuming:
		return "waiting for every replica to start again"
	case v1beta1.JobPaused:
		return "the job is paused"
	default:
		return "the job is " + strings.ToLower(string(p))
	}
}

func (r *reconciler) replicaStatus(s *slot) v1beta1.ReplicaStatus {
	rs := v1beta1.ReplicaStatus{Name: s.name, Phase: s.phase}
	switch {
	case s.pod != nil:
		rs.UID = s.pod.UID
		rs.Containers = containerStatuses(s.pod)
	case s.phase == v1beta1.ReplicaDeleted && s.prev != nil && s.prev.UID != "":
		// Keep what the last pod reported, exit codes included.
		rs.UID = s.prev.UID
		rs.Containers = s.prev.Containers
	}
	return rs
}

// containerStatuses reports a pod's containers in the order of its spec.
func containerStatuses(p *corev1.Pod) []v1beta1.ContainerStatus {
	out := make([]v1beta1.ContainerStatus, 0, len(p.Spec.Containers))
	for _, c := range p.Spec.Containers {
		cs := v1beta1.ContainerStatus{Name: c.Name, State: "Waiting"}
		for _, s := range p.Status.ContainerStatuses {
			if s.Name != c.Name {
				continue
			}
			switch {
			case s.State.Terminated != nil:
				cs.State, cs.ExitCode = "Terminated", s.State.Terminated.ExitCode
			case s.State.Running != nil:
				cs.State = "Running"
			}
		}
		out = append(out, cs)
	}
	return out
}

func podPhase(p *corev1.Pod) v1beta1.ReplicaPhase {
	switch p.Status.Phase {
	case corev1.PodPending, "":
		return v1beta1.ReplicaPending
	case corev1.PodRunning:
		return v1beta1.ReplicaRunning
	case corev1.PodSucceeded:
		return v1beta1.ReplicaSucceeded
	case corev1.PodFailed:
		return v1beta1.ReplicaFailed
	default:
		return v1beta1.ReplicaUnknown
	}
}

// Succeeded and AllSucceeded let the adapters' success rules read the
// replicas (ReplicaPhases).
func (r *reconciler) Succeeded(id ReplicaID) bool {
	s := r.byName[PodName(r.job.GetName(), id)]
	return s != nil && s.pod != nil && !s.replacing && s.pod.Status.Phase == corev1.PodSucceeded
}

func (r *reconciler) AllSucceeded() bool {
	for _, s := range r.slots {
		if s.pod == nil || s.replacing || s.pod.Status.Phase != corev1.PodSucceeded {
			return false
		}
	}
	return true
}

// hasBeenPaused says whether the job was paused at some point: its Paused
// condition was True, and is still, or was turned False by a resume.
func (r *reconciler) hasBeenPaused() bool {
	c := meta.FindStatusCondition(r.status.Conditions, v1beta1.ConditionPaused)
	return c != nil && (c.Status == metav1.ConditionTrue || c.Reason == ReasonResumed)
}

func runMode(debug bool) string {
	if debug {
		return RunModeDebug
	}
	return RunModeImmediate
}

// deleteExpiredJob deletes a job whose TTL after finishing ran out.
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
