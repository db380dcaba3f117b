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
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

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
// group may be admitted partially). jobAnnotations are the job's: a
// topology request there is for all its pods together. avoidNodes are the
// job's suspect nodes: every template keeps off them as the pods do, so
// that Kueue's topology-aware placement, which reads a template's node
// affinity, never assigns a pod a node it cannot run on (its flavor
// assignment reads only label expressions, which this adds none of).
func PodSets(jobAnnotations map[string]string, groups []podbuilder.ReplicaGroup, minCount func(gi int) int32,
	avoidNodes []string) ([]kueuev1beta2.PodSet, string, error) {
	var sets []kueuev1beta2.PodSet
	requests := topologyRequests(jobAnnotations, groups)
	for gi, g := range groups {
		if g.Replicas == 0 {
			continue
		}
		set := kueuev1beta2.PodSet{
			Name:            kueuev1beta2.PodSetReference(g.Type),
			Count:           g.Replicas,
			Template:        *g.Spec.Template.DeepCopy(),
			TopologyRequest: requests[gi],
		}
		podbuilder.KeepOffNodes(&set.Template.Spec, avoidNodes)
		if n := minCount(gi); n > 0 {
			set.MinCount = ptr.To(n)
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

// ReasonSuspectNodeAssigned is the event of a Workload evicted because
// its topology assignment names a node the job keeps off (evictFromNodes).
const ReasonSuspectNodeAssigned = "SuspectNodeAssigned"

// Want is what a queued job asks of its Workload now.
type Want struct {
	// QueueName is the LocalQueue the job waits in.
	QueueName string
	// PodSets and Digest are the job's (PodSets).
	PodSets []kueuev1beta2.PodSet
	Digest  string
	// Active: the job is not paused.
	Active bool
	// Stopped: the job has no pods left, after an eviction.
	Stopped bool
	// PodsReady: every pod the admission allows is Ready or has succeeded.
	PodsReady bool
	// Phase is the job's phase as planned now.
	Phase v1beta1.JobPhase
	// AvoidNodes are the nodes the job's pods keep off (its suspect
	// nodes); PodSets has them too.
	AvoidNodes []string
	Now        time.Time
}

// Sync brings the job's Workload in line with the job: it exists, its
// activity follows pause, its pod sets follow a resize, an evicted job
// that stopped gives its quota back, an admitted job reports whether its
// pods are ready, and a finished job frees its quota. It makes at most one
// write: the Workload's change that follows brings the job back.
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
		if len(want.PodSets) == 0 || st.Prebuilt {
			// A prebuilt Workload is MultiKueue's to create.
			return nil
		}
		return q.create(ctx, job, want)
	}
	wls := q.client.KueueV1beta2().Workloads(wl.Namespace)
	reserved := meta.IsStatusConditionTrue(wl.Status.Conditions, kueuev1beta2.WorkloadQuotaReserved)
	switch {
	case st.Unadopted && st.Mismatch != "":
		// Not the job's: Kueue would not admit it for the job either.
		return nil
	case st.Unadopted:
		return q.adopt(ctx, job, wl)
	case Active(wl) != want.Active:
		patch := fmt.Sprintf(`{"spec":{"active":%t}}`, want.Active)
		if _, err := wls.Patch(ctx, wl.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("setting Workload %s active=%t: %w", wl.Name, want.Active, err)
		}
		job.Logger.V(2).Info("Set the Workload's activity", "workload", klog.KObj(wl), "active", want.Active)
		return nil
	case !reserved && !st.Prebuilt && wl.Annotations[AnnotationPodSets] != want.Digest:
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"annotations": map[string]string{AnnotationPodSets: want.Digest}, "resourceVersion": wl.ResourceVersion},
			"spec":     map[string]any{"podSets": want.PodSets},
		})
		if err != nil {
			return err
		}
		if _, err := wls.Patch(ctx, wl.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("resizing Workload %s: %w", wl.Name, err)
		}
		job.Normalf(owner.ReasonSuccessfulUpdate, "Resized Workload %s to the job's replicas", wl.Name)
		return nil
	case !reserved && !st.Prebuilt && want.QueueName != "" && string(wl.Spec.QueueName) != want.QueueName:
		// The job moved to another queue while it waited, as Kueue's own
		// integrations let a suspended job move.
		patch := fmt.Sprintf(`{"metadata":{"resourceVersion":%q},"spec":{"queueName":%q}}`, wl.ResourceVersion, want.QueueName)
		if _, err := wls.Patch(ctx, wl.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("moving Workload %s to queue %s: %w", wl.Name, want.QueueName, err)
		}
		job.Normalf(owner.ReasonSuccessfulUpdate, "Moved Workload %s to queue %s", wl.Name, want.QueueName)
		return nil
	case st.Evicted != nil && want.Stopped && wl.Status.Admission != nil:
		return q.releaseEvictedQuota(ctx, job, wl, st.Evicted, want.Now)
	case reserved && st.Evicted == nil && !st.Prebuilt && len(placedOn(wl, want.AvoidNodes)) > 0:
		return q.evictFromNodes(ctx, job, wl, placedOn(wl, want.AvoidNodes), want.Now)
	case st.Admitted:
		return q.reportPodsReady(ctx, job, wl, want)
	}
	return nil
}

// reportPodsReady writes the PodsReady condition of an admitted job's
// Workload when it changes.
func (q *Queue) reportPodsReady(ctx context.Context, job *owner.Job, wl *kueuev1beta2.Workload, want Want) error {
	current := meta.FindStatusCondition(wl.Status.Conditions, kueuev1beta2.WorkloadPodsReady)
	next := PodsReadyCondition(current, want.PodsReady)
	if current != nil && current.Status == next.Status && current.Reason == next.Reason {
		return nil
	}
	return q.updateStatus(ctx, job, wl, "reporting whether the pods are ready", func(s *kueuev1beta2.WorkloadStatus) {
		meta.SetStatusCondition(&s.Conditions, condition(wl, want.Now, next))
	})
}

// finish marks a finished job's Workload Finished, as Kueue's own
// integrations do, so that its quota goes back.
func (q *Queue) finish(ctx context.Context, job *owner.Job, wl *kueuev1beta2.Workload, want Want) error {
	if wl == nil || meta.IsStatusConditionTrue(wl.Status.Conditions, kueuev1beta2.WorkloadFinished) {
		return nil
	}
	finished := metav1.Condition{Type: kueuev1beta2.WorkloadFinished, Status: metav1.ConditionTrue,
		Reason: kueuev1beta2.WorkloadFinishedReasonSucceeded, Message: "the job succeeded"}
	if want.Phase == v1beta1.JobFailed {
		finished.Reason, finished.Message = kueuev1beta2.WorkloadFinishedReasonFailed, "the job failed"
	}
	return q.updateStatus(ctx, job, wl, "marking the Workload finished", func(s *kueuev1beta2.WorkloadStatus) {
		meta.SetStatusCondition(&s.Conditions, condition(wl, want.Now, finished))
	})
}

// create creates the job's Workload with its pod sets.
func (q *Queue) create(ctx context.Context, job *owner.Job, want Want) error {
	wl, err := q.newWorkload(ctx, job, want)
	if err != nil {
		return err
	}
	created, err := q.client.KueueV1beta2().Workloads(wl.Namespace).Create(ctx, wl, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil // the cache is behind
	case err != nil:
		job.Warningf(owner.ReasonFailedCreate, "Error creating Workload %s: %v", wl.Name, err)
		return fmt.Errorf("creating Workload %s: %w", wl.Name, err)
	}
	job.Logger.V(2).Info("Created Workload", "workload", klog.KObj(created), "queue", want.QueueName)
	job.Normalf(owner.ReasonSuccessfulCreate, "Created Workload %s in queue %s", created.Name, want.QueueName)
	return nil
}

// releaseEvictedQuota gives back the quota of an evicted Workload once the
// job is stopped, as jobframework does; Kueue then requeues the Workload.
// PodsReady goes back to WaitForStart: Kueue times the next start from the
// next admission, not from the eviction.
func (q *Queue) releaseEvictedQuota(ctx context.Context, job *owner.Job, wl *kueuev1beta2.Workload, ev *metav1.Condition, now time.Time) error {
	requeued := ev.Reason == kueuev1beta2.WorkloadEvictedByPreemption || ev.Reason == kueuev1beta2.WorkloadEvictedDueToNodeFailures
	return q.updateStatus(ctx, job, wl, "giving back the quota of the evicted Workload", func(s *kueuev1beta2.WorkloadStatus) {
		status := metav1.ConditionFalse
		if requeued {
			status = metav1.ConditionTrue
		}
		set := func(c metav1.Condition) { meta.SetStatusCondition(&s.Conditions, condition(wl, now, c)) }
		set(metav1.Condition{Type: kueuev1beta2.WorkloadRequeued, Status: status, Reason: ev.Reason, Message: ev.Message})
		set(metav1.Condition{Type: kueuev1beta2.WorkloadQuotaReserved, Status: metav1.ConditionFalse, Reason: "Pending", Message: ev.Message})
		if c := meta.FindStatusCondition(s.Conditions, kueuev1beta2.WorkloadAdmitted); c != nil && c.Status == metav1.ConditionTrue {
			set(metav1.Condition{Type: kueuev1beta2.WorkloadAdmitted, Status: metav1.ConditionFalse,
				Reason: "NoReservation", Message: "The workload has no reservation"})
		}
		if c := meta.FindStatusCondition(s.Conditions, kueuev1beta2.WorkloadPodsReady); c != nil {
			set(PodsReadyCondition(nil, false))
		}
		s.Admission = nil
	})
}

// placedOn are the nodes among avoid that the Workload's topology
// assignment places pods on.
func placedOn(wl *kueuev1beta2.Workload, avoid []string) []string {
	var on []string
	for _, node := range AssignedNodes(wl) {
		if slices.Contains(avoid, node) {
			on = append(on, node)
		}
	}
	return on
}

// evictFromNodes evicts a Workload whose topology assignment places pods
// on nodes the job keeps off: Kueue's ungater would give a replaced pod
// its old node, where its node affinity lets it never run. The job stops
// as on any eviction, the quota goes back (releaseEvictedQuota), the pod
// sets gain the nodes to keep off while nothing is reserved (Sync), and
// Kueue admits the job again elsewhere. The reason is Kueue's own for
// nodes that failed, under which Kueue requeues the Workload at once.
func (q *Queue) evictFromNodes(ctx context.Context, job *owner.Job, wl *kueuev1beta2.Workload, nodes []string, now time.Time) error {
	message := fmt.Sprintf("the topology assignment places pods on %s, where the job's pods no longer go "+
		"(status.suspectNodes): admitted again without them", strings.Join(nodes, ", "))
	err := q.updateStatus(ctx, job, wl, "evicting the Workload from suspect nodes", func(s *kueuev1beta2.WorkloadStatus) {
		meta.SetStatusCondition(&s.Conditions, condition(wl, now, metav1.Condition{Type: kueuev1beta2.WorkloadEvicted,
			Status: metav1.ConditionTrue, Reason: kueuev1beta2.WorkloadEvictedDueToNodeFailures, Message: message}))
	})
	if err == nil {
		job.Warningf(ReasonSuspectNodeAssigned, "Evicted Workload %s: %s", wl.Name, message)
	}
	return err
}

// priority is the Workload's priority and the class it came from: the
// WorkloadPriorityClass the job's label names, else t9kScheduler's
// priority.
func (q *Queue) priority(ctx context.Context, job v1beta1.TrainingJob) (priority int32, class string, err error) {
	if class = job.GetLabels()[LabelPriorityClass]; class != "" {
		wpc, err := q.client.KueueV1beta2().WorkloadPriorityClasses().Get(ctx, class, metav1.GetOptions{})
		if err != nil {
			return 0, "", fmt.Errorf("reading WorkloadPriorityClass %s: %w", class, err)
		}
		return wpc.Value, class, nil
	}
	if t9k := podbuilder.T9kScheduler(job.CommonSpec()); t9k != nil {
		return t9k.Priority, "", nil
	}
	return 0, "", nil
}

// newWorkload builds the job's Workload.
func (q *Queue) newWorkload(ctx context.Context, job *owner.Job, want Want) (*kueuev1beta2.Workload, error) {
	priority, class, err := q.priority(ctx, job.Object)
	if err != nil {
		return nil, err
	}
	wl := &kueuev1beta2.Workload{
		ObjectMeta: metav1.ObjectMeta{
			Name:            workloadNameOf(job),
			Namespace:       job.Object.GetNamespace(),
			Labels:          job.Labels(),
			Annotations:     map[string]string{AnnotationPodSets: want.Digest},
			OwnerReferences: []metav1.OwnerReference{job.ControllerRef()},
		},
		Spec: kueuev1beta2.WorkloadSpec{
			PodSets:   want.PodSets,
			QueueName: kueuev1beta2.LocalQueueName(want.QueueName),
			Priority:  ptr.To(priority),
			Active:    ptr.To(want.Active),
		},
	}
	if class != "" {
		wl.Spec.PriorityClassRef = kueuev1beta2.NewPriorityClassRef(kueuev1beta2.WorkloadPriorityClassGroup,
			kueuev1beta2.WorkloadPriorityClassKind, class)
	}
	return wl, nil
}

// condition is c on the Workload, set now.
func condition(wl *kueuev1beta2.Workload, now time.Time, c metav1.Condition) metav1.Condition {
	c.ObservedGeneration = wl.Generation
	c.LastTransitionTime = metav1.NewTime(now).Rfc3339Copy()
	return c
}

// updateStatus writes the Workload's status, edited by edit. The
// resourceVersion makes it fail on a Workload that changed in the
// meantime; the change that caused it requeues the job.
func (q *Queue) updateStatus(ctx context.Context, job *owner.Job, wl *kueuev1beta2.Workload, what string,
	edit func(*kueuev1beta2.WorkloadStatus)) error {
	updated := wl.DeepCopy()
	edit(&updated.Status)
	_, err := q.client.KueueV1beta2().Workloads(wl.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("%s %s: %w", what, wl.Name, err)
	}
	job.Logger.V(2).Info("Updated the Workload's status", "workload", klog.KObj(wl), "what", what)
	return nil
}

// Placements reads, for every pod set of an admitted Workload, the node
// labels and tolerations of the ResourceFlavors assigned to it and the
// admission checks' pod set updates: where the job's pods go. Called
// before pods are created.
func (q *Queue) Placements(ctx context.Context, wl *kueuev1beta2.Workload) (map[v1beta1.ReplicaType]*podbuilder.Placement, error) {
	placements := map[v1beta1.ReplicaType]*podbuilder.Placement{}
	if wl.Status.Admission == nil {
		return placements, nil
	}
	flavors := map[kueuev1beta2.ResourceFlavorReference]*kueuev1beta2.ResourceFlavor{}
	for _, a := range wl.Status.Admission.PodSetAssignments {
		p := &podbuilder.Placement{NodeSelector: map[string]string{}, Labels: map[string]string{}, Annotations: map[string]string{}}
		placements[v1beta1.ReplicaType(a.Name)] = p
		if a.TopologyAssignment != nil {
			placeInTopology(p, wl, a.Name)
		}
		for _, flavor := range a.Flavors {
			rf, seen := flavors[flavor]
			if !seen {
				got, err := q.client.KueueV1beta2().ResourceFlavors().Get(ctx, string(flavor), metav1.GetOptions{})
				if err != nil {
					return nil, fmt.Errorf("reading ResourceFlavor %s: %w", flavor, err)
				}
				rf, flavors[flavor] = got, got
			}
			for k, v := range rf.Spec.NodeLabels {
				p.NodeSelector[k] = v
			}
			p.Tolerations = append(p.Tolerations, rf.Spec.Tolerations...)
		}
	}
	for _, check := range wl.Status.AdmissionChecks {
		for _, update := range check.PodSetUpdates {
			p := placements[v1beta1.ReplicaType(update.Name)]
			if p == nil {
				continue
			}
			for _, m := range []struct{ from, into map[string]string }{
				{update.NodeSelector, p.NodeSelector}, {update.Labels, p.Labels}, {update.Annotations, p.Annotations},
			} {
				for k, v := range m.from {
					m.into[k] = v
				}
			}
			p.Tolerations = append(p.Tolerations, update.Tolerations...)
		}
	}
	return placements, nil
}
