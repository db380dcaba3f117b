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

package kueue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/owner"
	"tensorstack.dev/training/pkg/podbuilder"
)

// AnnotationPodSets on a Workload is a digest of the pod sets the controller
// built it with, so that a resized job's Workload is rebuilt without
// comparing what the apiserver defaulted.
const AnnotationPodSets = v1beta1.GroupName + "/pod-sets"

// PodSets are a job's pod sets: one per replica type with replicas, in
// rank order, and a digest of them. minCount gives the minCount of the
// pod set of the group at an index, 0 for none (an elastic job's scaled
// group may be admitted partially).
func PodSets(groups []podbuilder.ReplicaGroup, minCount func(gi int) int32) ([]any, string, error) {
	var sets []any
	for gi, g := range groups {
		if g.Replicas == 0 {
			continue
		}
		tmpl, err := runtimeConverter.ToUnstructured(&g.Spec.Template)
		if err != nil {
			return nil, "", fmt.Errorf("pod template of %s: %w", g.Type, err)
		}
		set := map[string]any{"name": string(g.Type), "count": int64(g.Replicas), "template": tmpl}
		if n := minCount(gi); n > 0 {
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

// Want is what a queued job asks of its Workload now.
type Want struct {
	// PodSets and Digest are the job's (PodSets).
	PodSets []any
	Digest  string
	// Active: the job is not paused.
	Active bool
	// Stopped: the job has no pods left, after an eviction.
	Stopped bool
	// Phase is the job's phase as planned now.
	Phase v1beta1.JobPhase
	Now   time.Time
}

// Sync brings the job's Workload in line with the job: it exists, its
// activity follows pause, its pod sets follow a resize, an evicted job
// that stopped gives its quota back, and a finished job frees it.
func (q *Queue) Sync(ctx context.Context, job *owner.Job, st *State, want Want) error {
	if want.Phase.IsFinished() {
		return q.finish(ctx, job, st.Workload, want)
	}
	if len(want.PodSets) > MaxPodSets {
		// Kueue refuses such a Workload; the job waits (TooManyPodSets).
		return nil
	}
	wl := st.Workload
	if wl == nil {
		if len(want.PodSets) == 0 {
			return nil
		}
		return q.create(ctx, job, want)
	}
	wls := q.workloads.Namespace(wl.GetNamespace())
	reserved := meta.IsStatusConditionTrue(WorkloadConditions(wl), ConditionQuotaReserved)
	switch {
	case WorkloadActive(wl) != want.Active:
		patch := fmt.Sprintf(`{"spec":{"active":%t}}`, want.Active)
		if _, err := wls.Patch(ctx, wl.GetName(), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("setting Workload %s active=%t: %w", wl.GetName(), want.Active, err)
		}
		job.Logger.V(2).Info("Set the Workload's activity", "workload", klog.KObj(wl), "active", want.Active)
		return nil
	case !reserved && wl.GetAnnotations()[AnnotationPodSets] != want.Digest:
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"annotations": map[string]string{AnnotationPodSets: want.Digest}, "resourceVersion": wl.GetResourceVersion()},
			"spec":     map[string]any{"podSets": want.PodSets},
		})
		if err != nil {
			return err
		}
		if _, err := wls.Patch(ctx, wl.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("resizing Workload %s: %w", wl.GetName(), err)
		}
		job.Normalf(owner.ReasonSuccessfulUpdate, "Resized Workload %s to the job's replicas", wl.GetName())
		return nil
	case st.Evicted != nil && want.Stopped && WorkloadAdmission(wl) != nil:
		return q.releaseEvictedQuota(ctx, job, wl, st.Evicted, want.Now)
	}
	return nil
}

// finish marks a finished job's Workload Finished, as Kueue's own
// integrations do, so that its quota goes back.
func (q *Queue) finish(ctx context.Context, job *owner.Job, wl *unstructured.Unstructured, want Want) error {
	if wl == nil || meta.IsStatusConditionTrue(WorkloadConditions(wl), ConditionFinished) {
		return nil
	}
	reason, message := "Succeeded", "the job succeeded"
	if want.Phase == v1beta1.JobFailed {
		reason, message = "Failed", "the job failed"
	}
	return q.updateStatus(ctx, job, wl, "marking the Workload finished", func(conds []metav1.Condition) []metav1.Condition {
		meta.SetStatusCondition(&conds, condition(wl, want.Now, ConditionFinished, metav1.ConditionTrue, reason, message))
		return conds
	}, false)
}

// create creates the job's Workload with its pod sets.
func (q *Queue) create(ctx context.Context, job *owner.Job, want Want) error {
	wl, err := q.newWorkload(ctx, job, want)
	if err != nil {
		return err
	}
	created, err := q.workloads.Namespace(wl.GetNamespace()).Create(ctx, wl, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil // the cache is behind
	case err != nil:
		job.Warningf(owner.ReasonFailedCreate, "Error creating Workload %s: %v", wl.GetName(), err)
		return fmt.Errorf("creating Workload %s: %w", wl.GetName(), err)
	}
	queue := QueueName(job.Object)
	job.Logger.V(2).Info("Created Workload", "workload", klog.KObj(created), "queue", queue)
	job.Normalf(owner.ReasonSuccessfulCreate, "Created Workload %s in queue %s", created.GetName(), queue)
	return nil
}

// releaseEvictedQuota gives back the quota of an evicted Workload once the
// job is stopped, as jobframework does; Kueue then requeues the Workload.
func (q *Queue) releaseEvictedQuota(ctx context.Context, job *owner.Job, wl *unstructured.Unstructured, ev *metav1.Condition, now time.Time) error {
	requeued := ev.Reason == EvictedByPreemption || ev.Reason == EvictedByNodeFailures
	return q.updateStatus(ctx, job, wl, "giving back the quota of the evicted Workload", func(conds []metav1.Condition) []metav1.Condition {
		status := metav1.ConditionFalse
		if requeued {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&conds, condition(wl, now, ConditionRequeued, status, ev.Reason, ev.Message))
		meta.SetStatusCondition(&conds, condition(wl, now, ConditionQuotaReserved, metav1.ConditionFalse, "Pending", ev.Message))
		if c := meta.FindStatusCondition(conds, ConditionAdmitted); c != nil && c.Status == metav1.ConditionTrue {
			meta.SetStatusCondition(&conds, condition(wl, now, ConditionAdmitted, metav1.ConditionFalse, "NoReservation", "The workload has no reservation"))
		}
		return conds
	}, true)
}

// priority is the Workload's priority and the class it came from: the
// WorkloadPriorityClass the job's label names, else t9kScheduler's
// priority.
func (q *Queue) priority(ctx context.Context, job v1beta1.TrainingJob) (priority int64, class string, err error) {
	if class = job.GetLabels()[LabelPriorityClass]; class != "" {
		wpc, err := q.priorityClasses.Get(ctx, class, metav1.GetOptions{})
		if err != nil {
			return 0, "", fmt.Errorf("reading WorkloadPriorityClass %s: %w", class, err)
		}
		value, _, _ := unstructured.NestedInt64(wpc.Object, "value")
		return value, class, nil
	}
	if t9k := podbuilder.T9kScheduler(job.CommonSpec()); t9k != nil {
		return int64(t9k.Priority), "", nil
	}
	return 0, "", nil
}

// newWorkload builds the job's Workload.
func (q *Queue) newWorkload(ctx context.Context, job *owner.Job, want Want) (*unstructured.Unstructured, error) {
	priority, class, err := q.priority(ctx, job.Object)
	if err != nil {
		return nil, err
	}
	spec := map[string]any{
		"podSets":   want.PodSets,
		"queueName": QueueName(job.Object),
		"priority":  priority,
		"active":    want.Active,
	}
	if class != "" {
		spec["priorityClassName"] = class
		spec["priorityClassSource"] = PriorityClassSource
	}
	wl := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	wl.SetAPIVersion(WorkloadGVR.GroupVersion().String())
	wl.SetKind(workloadKind)
	wl.SetName(WorkloadName(job.Kind, job.Object.GetName()))
	wl.SetNamespace(job.Object.GetNamespace())
	wl.SetLabels(job.Labels())
	wl.SetAnnotations(map[string]string{AnnotationPodSets: want.Digest})
	wl.SetOwnerReferences([]metav1.OwnerReference{job.ControllerRef()})
	return wl, nil
}

// condition is a Workload condition set now.
func condition(wl *unstructured.Unstructured, now time.Time, typ string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: message,
		ObservedGeneration: wl.GetGeneration(), LastTransitionTime: metav1.NewTime(now).Rfc3339Copy(),
	}
}

// updateStatus writes the Workload's conditions, edited by edit,
// and, with clearAdmission, drops its admission. The resourceVersion makes
// it fail on a Workload that changed in the meantime; the change that
// caused it requeues the job.
func (q *Queue) updateStatus(ctx context.Context, job *owner.Job, wl *unstructured.Unstructured, what string,
	edit func([]metav1.Condition) []metav1.Condition, clearAdmission bool) error {
	updated := wl.DeepCopy()
	conds := edit(WorkloadConditions(wl))
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
	_, err := q.workloads.Namespace(wl.GetNamespace()).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("%s %s: %w", what, wl.GetName(), err)
	}
	job.Logger.V(2).Info("Updated the Workload's status", "workload", klog.KObj(wl), "what", what)
	return nil
}

// Placements reads, for every pod set of an admitted Workload, the node
// labels and tolerations of the ResourceFlavors assigned to it and the
// admission checks' pod set updates: where the job's pods go. Called
// before pods are created.
func (q *Queue) Placements(ctx context.Context, wl *unstructured.Unstructured) (map[v1beta1.ReplicaType]*podbuilder.Placement, error) {
	placements := map[v1beta1.ReplicaType]*podbuilder.Placement{}
	flavors := map[string]*unstructured.Unstructured{}
	assignments, _, _ := unstructured.NestedSlice(wl.Object, "status", "admission", "podSetAssignments")
	for _, item := range assignments {
		a, ok := item.(map[string]any)
		if !ok {
			continue
		}
		name, _, _ := unstructured.NestedString(a, "name")
		p := &podbuilder.Placement{NodeSelector: map[string]string{}, Labels: map[string]string{}, Annotations: map[string]string{}}
		placements[v1beta1.ReplicaType(name)] = p
		assigned, _, _ := unstructured.NestedStringMap(a, "flavors")
		for _, flavor := range assigned {
			rf, seen := flavors[flavor]
			if !seen {
				got, err := q.flavors.Get(ctx, flavor, metav1.GetOptions{})
				if err != nil {
					return nil, fmt.Errorf("reading ResourceFlavor %s: %w", flavor, err)
				}
				rf, flavors[flavor] = got, got
			}
			labels, _, _ := unstructured.NestedStringMap(rf.Object, "spec", "nodeLabels")
			for k, v := range labels {
				p.NodeSelector[k] = v
			}
			tolerations, _, _ := unstructured.NestedSlice(rf.Object, "spec", "tolerations")
			p.Tolerations = appendDecoded(p.Tolerations, tolerations)
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
			p := placements[v1beta1.ReplicaType(name)]
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
			p.Tolerations = appendDecoded(p.Tolerations, tolerations)
		}
	}
	return placements, nil
}
