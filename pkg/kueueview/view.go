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

// Package kueueview is Kueue's queues as a user sees them: each ClusterQueue
// with its quota and usage per flavor and resource, the LocalQueues that feed
// it, and its pending Workloads in the order Kueue will consider them. The
// dashboard's Queues page and `kubectl training queues` both show this view.
package kueueview

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	visibilityv1beta2 "sigs.k8s.io/kueue/apis/visibility/v1beta2"
)

// Where a ClusterQueue's order of pending Workloads comes from.
const (
	// OrderedByKueue: Kueue's visibility API answered with its own queue.
	OrderedByKueue = "kueue"
	// OrderedHere: the view sorted the pending Workloads itself, as Kueue's
	// FIFO strategies do (priority, then creation), because the visibility
	// API was not served or refused.
	OrderedHere = "view"
)

// Workload states, as the view words them.
const (
	StatePending  = "Pending"
	StateReserved = "QuotaReserved"
	StateAdmitted = "Admitted"
	StateFinished = "Finished"
	StateInactive = "Inactive"
)

// Snapshot is every queue the user may read, at one moment.
type Snapshot struct {
	ClusterQueues []ClusterQueue `json:"clusterQueues"`
	LocalQueues   []LocalQueue   `json:"localQueues"`
	// Workloads are every Workload read, pending ones with their position.
	Workloads []Workload `json:"workloads,omitempty"`
}

// ClusterQueue is one ClusterQueue with its quota, usage and queue.
type ClusterQueue struct {
	Name             string `json:"name"`
	Cohort           string `json:"cohort,omitempty"`
	QueueingStrategy string `json:"queueingStrategy,omitempty"`
	Active           bool   `json:"active"`
	// Inactive says why the ClusterQueue admits nothing, when it does not.
	Inactive  string  `json:"inactive,omitempty"`
	Admitted  int32   `json:"admitted"`
	Reserving int32   `json:"reserving"`
	Pending   int32   `json:"pending"`
	Quotas    []Quota `json:"quotas"`
	// PendingWorkloads are in the order Kueue considers them; Ordering tells
	// who ordered them, OrderingNote why the view did.
	PendingWorkloads []Workload `json:"pendingWorkloads"`
	Ordering         string     `json:"ordering"`
	OrderingNote     string     `json:"orderingNote,omitempty"`
}

// Quota is one resource of one flavor of a ClusterQueue. Quantities are
// written as Kubernetes writes them ("4", "16Gi"); a limit that is unset is "".
type Quota struct {
	Flavor         string `json:"flavor"`
	Resource       string `json:"resource"`
	Nominal        string `json:"nominal"`
	BorrowingLimit string `json:"borrowingLimit,omitempty"`
	LendingLimit   string `json:"lendingLimit,omitempty"`
	// Usage is the quota admitted Workloads use, Borrowed the part of it
	// over Nominal, Reserved what Workloads hold, admitted or not yet.
	Usage    string `json:"usage"`
	Borrowed string `json:"borrowed"`
	Reserved string `json:"reserved"`
}

// LocalQueue is one LocalQueue and the ClusterQueue it feeds.
type LocalQueue struct {
	Namespace    string `json:"namespace"`
	Name         string `json:"name"`
	ClusterQueue string `json:"clusterQueue"`
	Admitted     int32  `json:"admitted"`
	Reserving    int32  `json:"reserving"`
	Pending      int32  `json:"pending"`
}

// Workload is one Workload as the view shows it.
type Workload struct {
	Namespace    string      `json:"namespace"`
	Name         string      `json:"name"`
	LocalQueue   string      `json:"localQueue,omitempty"`
	ClusterQueue string      `json:"clusterQueue,omitempty"`
	Priority     int32       `json:"priority"`
	Created      metav1.Time `json:"created"`
	State        string      `json:"state"`
	// Positions count from 1, the first in line; 0 when not pending or not
	// known.
	PositionInClusterQueue int `json:"positionInClusterQueue,omitempty"`
	PositionInLocalQueue   int `json:"positionInLocalQueue,omitempty"`
	// Reason and Message are Kueue's, of the condition that keeps it
	// waiting (QuotaReserved False) or of the last one that changed.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// OwnerKind and OwnerName name the job the Workload is for.
	OwnerKind       string `json:"ownerKind,omitempty"`
	OwnerAPIVersion string `json:"ownerAPIVersion,omitempty"`
	OwnerName       string `json:"ownerName,omitempty"`
}

// Pending gives a ClusterQueue's pending Workloads from Kueue's visibility
// API, in its order, and a note on what it left out; localQueues are the
// LocalQueues read that feed it, for a user who may read only theirs. Build
// falls back to its own order when it fails.
type Pending func(clusterQueue string, localQueues []LocalQueue) (items []visibilityv1beta2.PendingWorkload, note string, err error)

// Build makes the snapshot of the objects read. pending, when not nil, asks
// Kueue for each ClusterQueue's order; unavailable, when not "", says why the
// visibility API is not asked at all (not served, refused), for the page.
func Build(cqs []kueuev1beta2.ClusterQueue, lqs []kueuev1beta2.LocalQueue, wls []kueuev1beta2.Workload, pending Pending, unavailable string) Snapshot {
	s := Snapshot{ClusterQueues: []ClusterQueue{}, LocalQueues: []LocalQueue{}, Workloads: []Workload{}}
	feeds := map[string]string{} // namespace/localqueue -> clusterqueue
	fedBy := map[string][]LocalQueue{}
	for i := range lqs {
		lq := &lqs[i]
		feeds[lq.Namespace+"/"+lq.Name] = string(lq.Spec.ClusterQueue)
		s.LocalQueues = append(s.LocalQueues, LocalQueue{
			Namespace: lq.Namespace, Name: lq.Name, ClusterQueue: string(lq.Spec.ClusterQueue),
			Admitted: lq.Status.AdmittedWorkloads, Reserving: lq.Status.ReservingWorkloads, Pending: lq.Status.PendingWorkloads,
		})
	}
	slices.SortFunc(s.LocalQueues, func(a, b LocalQueue) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	for _, lq := range s.LocalQueues {
		fedBy[lq.ClusterQueue] = append(fedBy[lq.ClusterQueue], lq)
	}

	byCQ := map[string][]*Workload{}
	index := map[string]*Workload{} // namespace/name
	s.Workloads = make([]Workload, 0, len(wls))
	for i := range wls {
		s.Workloads = append(s.Workloads, viewWorkload(&wls[i], feeds))
	}
	for i := range s.Workloads {
		w := &s.Workloads[i]
		index[w.Namespace+"/"+w.Name] = w
		if w.State == StatePending && w.ClusterQueue != "" {
			byCQ[w.ClusterQueue] = append(byCQ[w.ClusterQueue], w)
		}
	}

	for i := range cqs {
		cq := viewClusterQueue(&cqs[i])
		queue := byCQ[cq.Name]
		cq.Ordering, cq.OrderingNote = OrderedHere, unavailable
		if pending != nil && unavailable == "" {
			if items, note, err := pending(cq.Name, fedBy[cq.Name]); err != nil {
				cq.OrderingNote = "Kueue's visibility API: " + err.Error()
			} else {
				cq.Ordering, cq.OrderingNote = kueueOrder(items, index, &queue), note
			}
		}
		if cq.Ordering == OrderedHere {
			orderHere(queue)
		}
		cq.PendingWorkloads = make([]Workload, 0, len(queue))
		for _, w := range queue {
			cq.PendingWorkloads = append(cq.PendingWorkloads, *w)
		}
		s.ClusterQueues = append(s.ClusterQueues, cq)
	}
	slices.SortFunc(s.ClusterQueues, func(a, b ClusterQueue) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(s.Workloads, func(a, b Workload) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return s
}

// kueueOrder takes Kueue's order and positions: queue becomes the
// Workloads Kueue listed, in its order, those read being updated in index.
// Workloads Kueue lists that the user could not read are shown from what
// Kueue says of them.
func kueueOrder(items []visibilityv1beta2.PendingWorkload, index map[string]*Workload, queue *[]*Workload) string {
	ordered := make([]*Workload, 0, len(items))
	for _, item := range items {
		w := index[item.Namespace+"/"+item.Name]
		if w == nil {
			w = &Workload{Namespace: item.Namespace, Name: item.Name, LocalQueue: string(item.LocalQueueName),
				Priority: item.Priority, Created: item.CreationTimestamp, State: StatePending}
		}
		w.PositionInClusterQueue = int(item.PositionInClusterQueue) + 1
		w.PositionInLocalQueue = int(item.PositionInLocalQueue) + 1
		ordered = append(ordered, w)
	}
	*queue = ordered
	return OrderedByKueue
}

// orderHere sorts a ClusterQueue's pending Workloads as Kueue's
// StrictFIFO and BestEffortFIFO do, by priority, then by creation (Kueue's
// default requeuing timestamp; a Workload evicted and requeued may stand
// elsewhere in Kueue's own queue), and numbers them.
func orderHere(queue []*Workload) {
	slices.SortStableFunc(queue, func(a, b *Workload) int {
		return cmp.Or(cmp.Compare(b.Priority, a.Priority), a.Created.Compare(b.Created.Time),
			strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	inLocal := map[string]int{}
	for i, w := range queue {
		w.PositionInClusterQueue = i + 1
		lq := w.Namespace + "/" + w.LocalQueue
		inLocal[lq]++
		w.PositionInLocalQueue = inLocal[lq]
	}
}

// viewWorkload words a Workload's state; feeds maps its LocalQueue to the
// ClusterQueue it waits in.
func viewWorkload(wl *kueuev1beta2.Workload, feeds map[string]string) Workload {
	w := Workload{
		Namespace: wl.Namespace, Name: wl.Name, LocalQueue: string(wl.Spec.QueueName),
		Created: wl.CreationTimestamp, ClusterQueue: feeds[wl.Namespace+"/"+string(wl.Spec.QueueName)],
	}
	if wl.Spec.Priority != nil {
		w.Priority = *wl.Spec.Priority
	}
	if owner := metav1.GetControllerOf(wl); owner != nil {
		w.OwnerKind, w.OwnerAPIVersion, w.OwnerName = owner.Kind, owner.APIVersion, owner.Name
	} else if len(wl.OwnerReferences) > 0 {
		owner := wl.OwnerReferences[0]
		w.OwnerKind, w.OwnerAPIVersion, w.OwnerName = owner.Kind, owner.APIVersion, owner.Name
	}
	if wl.Status.Admission != nil {
		w.ClusterQueue = string(wl.Status.Admission.ClusterQueue)
	}
	conditions := wl.Status.Conditions
	reason := func(t string) {
		if c := meta.FindStatusCondition(conditions, t); c != nil {
			w.Reason, w.Message = c.Reason, c.Message
		}
	}
	switch {
	case meta.IsStatusConditionTrue(conditions, kueuev1beta2.WorkloadFinished):
		w.State = StateFinished
		reason(kueuev1beta2.WorkloadFinished)
	case wl.Spec.Active != nil && !*wl.Spec.Active:
		w.State = StateInactive
		reason(kueuev1beta2.WorkloadEvicted)
	case meta.IsStatusConditionTrue(conditions, kueuev1beta2.WorkloadAdmitted):
		w.State = StateAdmitted
		reason(kueuev1beta2.WorkloadAdmitted)
	case meta.IsStatusConditionTrue(conditions, kueuev1beta2.WorkloadQuotaReserved):
		w.State = StateReserved
		reason(kueuev1beta2.WorkloadQuotaReserved)
	default:
		w.State = StatePending
		reason(kueuev1beta2.WorkloadQuotaReserved)
		if w.Reason == "" {
			if w.ClusterQueue == "" {
				w.Reason, w.Message = "NoClusterQueue", fmt.Sprintf("LocalQueue %s is not there or not readable", w.LocalQueue)
			} else {
				w.Reason, w.Message = "Queued", "waiting for Kueue to consider it"
			}
		}
	}
	return w
}

// viewClusterQueue is a ClusterQueue's quota table and counts; its queue is
// Build's.
func viewClusterQueue(cq *kueuev1beta2.ClusterQueue) ClusterQueue {
	v := ClusterQueue{
		Name: cq.Name, Cohort: string(cq.Spec.CohortName), QueueingStrategy: string(cq.Spec.QueueingStrategy),
		Admitted: cq.Status.AdmittedWorkloads, Reserving: cq.Status.ReservingWorkloads, Pending: cq.Status.PendingWorkloads,
		Quotas: []Quota{},
	}
	if c := meta.FindStatusCondition(cq.Status.Conditions, kueuev1beta2.ClusterQueueActive); c != nil {
		v.Active = c.Status == metav1.ConditionTrue
		if !v.Active {
			v.Inactive = strings.TrimSpace(c.Reason + ": " + c.Message)
		}
	}
	used := usageOf(cq.Status.FlavorsUsage)
	reserved := usageOf(cq.Status.FlavorsReservation)
	for _, group := range cq.Spec.ResourceGroups {
		for _, flavor := range group.Flavors {
			for _, r := range flavor.Resources {
				key := string(flavor.Name) + "/" + string(r.Name)
				q := Quota{Flavor: string(flavor.Name), Resource: string(r.Name), Nominal: r.NominalQuota.String(),
					Usage: "0", Borrowed: "0", Reserved: "0"}
				if r.BorrowingLimit != nil {
					q.BorrowingLimit = r.BorrowingLimit.String()
				}
				if r.LendingLimit != nil {
					q.LendingLimit = r.LendingLimit.String()
				}
				if u, ok := used[key]; ok {
					q.Usage, q.Borrowed = u.Total.String(), u.Borrowed.String()
				}
				if u, ok := reserved[key]; ok {
					q.Reserved = u.Total.String()
				}
				v.Quotas = append(v.Quotas, q)
			}
		}
	}
	return v
}

func usageOf(flavors []kueuev1beta2.FlavorUsage) map[string]kueuev1beta2.ResourceUsage {
	out := map[string]kueuev1beta2.ResourceUsage{}
	for _, f := range flavors {
		for _, r := range f.Resources {
			out[string(f.Name)+"/"+string(r.Name)] = r
		}
	}
	return out
}
