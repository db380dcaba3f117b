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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/owner"
	"tensorstack.dev/training/pkg/podbuilder"
)

var runtimeConverter = runtime.DefaultUnstructuredConverter

// AnnotationPodSets on a Workload is a digest of the pod sets the controller
// built it with, so that a resized job's Workload is rebuilt without
// comparing what the apiserver defaulted.
const AnnotationPodSets = v1beta1.GroupName + "/pod-sets"

// desiredPodSets are the job's pod sets: one per replica type with
// replicas, in rank order; an elastic job's scaled pod set has a minCount
// (elastic.go).
func (r *reconciler) desiredPodSets() ([]any, string, error) {
	var sets []any
	for gi, g := range r.topo.Groups {
		if g.Replicas == 0 {
			continue
		}
		tmpl, err := runtimeConverter.ToUnstructured(&g.Spec.Template)
		if err != nil {
			return nil, "", fmt.Errorf("pod template of %s: %w", g.Type, err)
		}
		set := map[string]any{"name": string(g.Type), "count": int64(g.Replicas), "template": tmpl}
		if n := r.elasticMinCount(gi); n > 0 {
			set["minCount"] = int64(n)
		}
		sets = append(sets, set)
	}
	data, err := json.Marshal(sets)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(data)
	return sets, hex.EncodeToString(sum[:8]), nil
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

// workloadPriority is the Workload's priority and the class it came from.
func (r *reconciler) workloadPriority(ctx context.Context) (priority int64, class string, err error) {
	if class = r.job.GetLabels()[LabelKueuePriorityClass]; class != "" {
		wpc, err := r.c.kueue.priorityClasses.Get(ctx, class, metav1.GetOptions{})
		if err != nil {
			return 0, "", fmt.Errorf("reading WorkloadPriorityClass %s: %w", class, err)
		}
		value, _, _ := unstructured.NestedInt64(wpc.Object, "value")
		return value, class, nil
	}
	if t9k := podbuilder.T9kScheduler(r.spec); t9k != nil {
		return int64(t9k.Priority), "", nil
	}
	return 0, "", nil
}

// newWorkload builds the job's Workload.
func (r *reconciler) newWorkload(ctx context.Context, sets []any, digest string) (*unstructured.Unstructured, error) {
	priority, class, err := r.workloadPriority(ctx)
	if err != nil {
		return nil, err
	}
	spec := map[string]any{
		"podSets":   sets,
		"queueName": queueName(r.job),
		"priority":  priority,
		"active":    !pauseEnabled(r.spec),
	}
	if class != "" {
		spec["priorityClassName"] = class
		spec["priorityClassSource"] = kueuePriorityClassSource
	}
	wl := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	wl.SetAPIVersion(kueueWorkloadGVR.GroupVersion().String())
	wl.SetKind(kueueWorkloadKind)
	wl.SetName(workloadName(r.key.Kind, r.key.Name))
	wl.SetNamespace(r.key.Namespace)
	wl.SetLabels(r.asOwner().Labels())
	wl.SetAnnotations(map[string]string{AnnotationPodSets: digest})
	wl.SetOwnerReferences([]metav1.OwnerReference{r.asOwner().ControllerRef()})
	return wl, nil
}

// syncQueue brings the job's Workload in line with the job: it exists, its
// activity follows pause, its pod sets follow a resize, an evicted job
// that stopped gives its quota back, and a finished job frees it.
func (r *reconciler) syncQueue(ctx context.Context) error {
	q := r.queue
	wls := r.c.kueue.workloads.Namespace(r.key.Namespace)
	if r.status.Phase.IsFinished() {
		return r.finishWorkload(ctx)
	}
	sets, digest, err := r.desiredPodSets()
	if err != nil {
		return err
	}
	if len(sets) > kueueMaxPodSets {
		// Kueue refuses such a Workload; readQueue leaves the job waiting.
		return nil
	}
	if q.workload == nil {
		if len(sets) == 0 {
			return nil
		}
		return r.createWorkload(ctx, sets, digest)
	}
	wl := q.workload
	active := !pauseEnabled(r.spec)
	reserved := meta.IsStatusConditionTrue(workloadConditions(wl), kueueQuotaReserved)
	switch {
	case workloadActive(wl) != active:
		patch := fmt.Sprintf(`{"spec":{"active":%t}}`, active)
		if _, err := wls.Patch(ctx, wl.GetName(), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("setting Workload %s active=%t: %w", wl.GetName(), active, err)
		}
		r.logger.V(2).Info("Set the Workload's activity", "workload", klog.KObj(wl), "active", active)
		return nil
	case !reserved && wl.GetAnnotations()[AnnotationPodSets] != digest:
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"annotations": map[string]string{AnnotationPodSets: digest}, "resourceVersion": wl.GetResourceVersion()},
			"spec":     map[string]any{"podSets": sets},
		})
		if err != nil {
			return err
		}
		if _, err := wls.Patch(ctx, wl.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("resizing Workload %s: %w", wl.GetName(), err)
		}
		r.c.recorder.Eventf(r.job, corev1.EventTypeNormal, owner.ReasonSuccessfulUpdate, "Resized Workload %s to the job's replicas", wl.GetName())
		return nil
	case q.evicted != nil && r.queueStopped && workloadAdmission(wl) != nil:
		return r.releaseEvictedQuota(ctx, wl, q.evicted)
	}
	return nil
}

// finishWorkload marks a finished job's Workload Finished, as Kueue's own
// integrations do, so that its quota goes back.
func (r *reconciler) finishWorkload(ctx context.Context) error {
	wl := r.queue.workload
	if wl == nil || meta.IsStatusConditionTrue(workloadConditions(wl), kueueFinished) {
		return nil
	}
	reason, message := "Succeeded", "the job succeeded"
	if r.status.Phase == v1beta1.JobFailed {
		reason, message = "Failed", "the job failed"
	}
	return r.updateWorkloadStatus(ctx, wl, "marking the Workload finished", func(conds []metav1.Condition) []metav1.Condition {
		meta.SetStatusCondition(&conds, r.workloadCondition(wl, kueueFinished, metav1.ConditionTrue, reason, message))
		return conds
	}, false)
}

// createWorkload creates the job's Workload with its pod sets.
func (r *reconciler) createWorkload(ctx context.Context, sets []any, digest string) error {
	wl, err := r.newWorkload(ctx, sets, digest)
	if err != nil {
		return err
	}
	created, err := r.c.kueue.workloads.Namespace(r.key.Namespace).Create(ctx, wl, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil // the cache is behind
	case err != nil:
		r.c.recorder.Eventf(r.job, corev1.EventTypeWarning, owner.ReasonFailedCreate, "Error creating Workload %s: %v", wl.GetName(), err)
		return fmt.Errorf("creating Workload %s: %w", wl.GetName(), err)
	}
	r.logger.V(2).Info("Created Workload", "workload", klog.KObj(created), "queue", queueName(r.job))
	r.c.recorder.Eventf(r.job, corev1.EventTypeNormal, owner.ReasonSuccessfulCreate, "Created Workload %s in queue %s", created.GetName(), queueName(r.job))
	return nil
}

// releaseEvictedQuota gives back the quota of an evicted Workload once the
// job is stopped, as jobframework does; Kueue then requeues the Workload.
func (r *reconciler) releaseEvictedQuota(ctx context.Context, wl *unstructured.Unstructured, ev *metav1.Condition) error {
	requeued := ev.Reason == kueueEvictedByPreemption || ev.Reason == kueueEvictedByNodeFailures
	return r.updateWorkloadStatus(ctx, wl, "giving back the quota of the evicted Workload", func(conds []metav1.Condition) []metav1.Condition {
		status := metav1.ConditionFalse
		if requeued {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&conds, r.workloadCondition(wl, kueueRequeued, status, ev.Reason, ev.Message))
		meta.SetStatusCondition(&conds, r.workloadCondition(wl, kueueQuotaReserved, metav1.ConditionFalse, "Pending", ev.Message))
		if c := meta.FindStatusCondition(conds, kueueAdmitted); c != nil && c.Status == metav1.ConditionTrue {
			meta.SetStatusCondition(&conds, r.workloadCondition(wl, kueueAdmitted, metav1.ConditionFalse, "NoReservation", "The workload has no reservation"))
		}
		return conds
	}, true)
}

func (r *reconciler) workloadCondition(wl *unstructured.Unstructured, typ string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: message,
		ObservedGeneration: wl.GetGeneration(), LastTransitionTime: *r.metaNow(),
	}
}

// updateWorkloadStatus writes the Workload's conditions, edited by edit,
// and, with clearAdmission, drops its admission. The resourceVersion makes
// it fail on a Workload that changed in the meantime; the change that
// caused it requeues the job.
func (r *reconciler) updateWorkloadStatus(ctx context.Context, wl *unstructured.Unstructured, what string,
	edit func([]metav1.Condition) []metav1.Condition, clearAdmission bool) error {
	updated := wl.DeepCopy()
	conds := edit(workloadConditions(wl))
	raw := make([]any, 0, len(conds))
	for i := range conds {
		m, err := runtimeConverter.ToUnstructured(&conds[i])
		if err != nil {
			return err
		}
		raw = append(raw, m)
	}
	if err := unstructured.SetNestedSlice(updated.Object, raw, "status", "conditions"); err != nil {
		return err
	}
	if clearAdmission {
		unstructured.RemoveNestedField(updated.Object, "status", "admission")
	}
	_, err := r.c.kueue.workloads.Namespace(wl.GetNamespace()).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("%s %s: %w", what, wl.GetName(), err)
	}
	r.logger.V(2).Info("Updated the Workload's status", "workload", klog.KObj(wl), "what", what)
	return nil
}

// planQueued is the plan of a queued job that may not run: like a pause,
// every pod goes; the job is Pending until it was first admitted, Paused
// after an eviction.
func (r *reconciler) planQueued() {
	q, st := r.queue, r.status
	remaining := r.stopPods("the job is no longer admitted by Kueue", v1beta1.ReplicaCreating)
	reason, message := v1beta1.ReasonWaitingForAdmission, ""
	switch {
	case q.evicted != nil:
		reason, message = q.evicted.Reason, "evicted by Kueue: "+q.evicted.Message
	case q.workload == nil && r.podSetCount() > kueueMaxPodSets:
		reason = ReasonTooManyPodSets
		message = fmt.Sprintf("Kueue admits at most %d pod sets, and the job has %d replica types with replicas",
			kueueMaxPodSets, r.podSetCount())
	case q.workload == nil:
		message = fmt.Sprintf("waiting for its Workload in queue %s", queueName(r.job))
	case q.waiting != nil:
		message = fmt.Sprintf("waiting for admission in queue %s: %s", queueName(r.job), q.waiting.Message)
	default:
		message = fmt.Sprintf("quota reserved in queue %s; waiting for admission checks", queueName(r.job))
	}
	if c := meta.FindStatusCondition(st.Conditions, v1beta1.ConditionQueued); c == nil || c.Status != metav1.ConditionTrue || c.Reason != reason {
		if q.evicted != nil {
			r.event(corev1.EventTypeWarning, reason, "Evicted by Kueue: %s", q.evicted.Message)
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
	cq, _, _ := unstructured.NestedString(r.queue.workload.Object, "status", "admission", "clusterQueue")
	message := "admitted by ClusterQueue " + cq
	if last := len(r.topo.Groups) - 1; last >= 0 {
		if g, n := &r.topo.Groups[last], r.admittedReplicas(last); n < g.Replicas {
			message += fmt.Sprintf("; %d of the %d %s replicas, the others wait until the job is admitted again", n, g.Replicas, g.Type)
		}
	}
	r.setCondition(v1beta1.ConditionQueued, metav1.ConditionFalse, v1beta1.ReasonAdmitted, message)
}

// readPlacements reads, for every pod set of the admitted Workload, the
// node labels and tolerations of the ResourceFlavors assigned to it and
// the admission checks' pod set updates. Called before pods are created.
func (r *reconciler) readPlacements(ctx context.Context) error {
	wl := r.queue.workload
	r.placements = map[v1beta1.ReplicaType]*podbuilder.Placement{}
	flavors := map[string]*unstructured.Unstructured{}
	assignments, _, _ := unstructured.NestedSlice(wl.Object, "status", "admission", "podSetAssignments")
	for _, item := range assignments {
		a, ok := item.(map[string]any)
		if !ok {
			continue
		}
		name, _, _ := unstructured.NestedString(a, "name")
		p := &podbuilder.Placement{NodeSelector: map[string]string{}, Labels: map[string]string{}, Annotations: map[string]string{}}
		r.placements[v1beta1.ReplicaType(name)] = p
		assigned, _, _ := unstructured.NestedStringMap(a, "flavors")
		for _, flavor := range assigned {
			rf, seen := flavors[flavor]
			if !seen {
				got, err := r.c.kueue.flavors.Get(ctx, flavor, metav1.GetOptions{})
				if err != nil {
					return fmt.Errorf("reading ResourceFlavor %s: %w", flavor, err)
				}
				rf, flavors[flavor] = got, got
			}
			labels, _, _ := unstructured.NestedStringMap(rf.Object, "spec", "nodeLabels")
			for k, v := range labels {
				p.NodeSelector[k] = v
			}
			tolerations, _, _ := unstructured.NestedSlice(rf.Object, "spec", "tolerations")
			p.Tolerations = appendTolerations(p.Tolerations, tolerations)
		}
	}
	checks, _, _ := unstructured.NestedSlice(wl.Object, "status", "admissionChecks")
	for _, item := range checks {
		updates, _, _ := unstructured.NestedSlice(item.(map[string]any), "podSetUpdates")
		for _, u := range updates {
			update, ok := u.(map[string]any)
			if !ok {
				continue
			}
			name, _, _ := unstructured.NestedString(update, "name")
			p := r.placements[v1beta1.ReplicaType(name)]
			if p == nil {
				continue
			}
			for field, into := range map[string]map[string]string{"nodeSelector": p.NodeSelector, "labels": p.Labels, "annotations": p.Annotations} {
				values, _, _ := unstructured.NestedStringMap(update, field)
				for k, v := range values {
					into[k] = v
				}
			}
			tolerations, _, _ := unstructured.NestedSlice(update, "tolerations")
			p.Tolerations = appendTolerations(p.Tolerations, tolerations)
		}
	}
	return nil
}

func appendTolerations(to []corev1.Toleration, raw []any) []corev1.Toleration {
	for _, item := range raw {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		var t corev1.Toleration
		if err := runtimeConverter.FromUnstructured(m, &t); err == nil {
			to = append(to, t)
		}
	}
	return to
}
