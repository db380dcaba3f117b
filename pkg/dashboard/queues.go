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

package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueinformers "sigs.k8s.io/kueue/client-go/informers/externalversions"

	"tensorstack.dev/training/pkg/kueueview"
)

// queuesThrottle is the shortest time between two snapshots a stream
// sends: a burst of Workload changes (a queue admitting many at once) makes
// one snapshot, not one per change.
const queuesThrottle = 300 * time.Millisecond

// visibilityRefresh is how often a stream asks Kueue's visibility API again
// when nothing it watches changed: the API is read, not watched, and Kueue
// may reorder a queue on its own (a requeued Workload's backoff ending).
const visibilityRefresh = 5 * time.Second

// queuesEvent is what a stream of the Queues page sends: the snapshot, with
// the Workloads (view=workloads, for the job list and a job's page) or with
// the queues (the Queues page), never both: with a thousand pending
// Workloads each half is hundreds of KiB.
type queuesEvent struct {
	ClusterQueues []kueueview.ClusterQueue `json:"clusterQueues,omitempty"`
	LocalQueues   []kueueview.LocalQueue   `json:"localQueues,omitempty"`
	Workloads     []kueueview.Workload     `json:"workloads,omitempty"`
	// Namespace is the namespace whose LocalQueues and Workloads are shown,
	// "" for all.
	Namespace string `json:"namespace"`
}

// watchQueues streams the queues the user may read, as the Queues page,
// the job list and a job's page show them: a "snapshot" event whenever
// something changed, "synced" after the first, and "refused" with the API's
// Status for each list the user may not read (which is then left out).
// Where the user may not read Workloads in every namespace, it follows the
// user's own namespace, as the job list does.
func (s *Server) watchQueues(w http.ResponseWriter, r *http.Request) {
	c, err := s.source.ClientsFor(r)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	if c.Kueue == nil {
		writeError(w, http.StatusNotImplemented, "this dashboard has no client for Kueue")
		return
	}
	withWorkloads := r.URL.Query().Get("view") == "workloads"
	namespace := r.URL.Query().Get("namespace")
	api := c.Kueue.KueueV1beta2()
	var refusals []metav1.Status
	if namespace == "" {
		if _, err := api.Workloads("").List(r.Context(), metav1.ListOptions{Limit: 1}); apierrors.IsForbidden(err) {
			refusals = append(refusals, statusOf(err))
			namespace = c.Namespace
		}
	}
	stream, err := startEventStream(w)
	if err != nil {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	factory := kueueinformers.NewSharedInformerFactoryWithOptions(c.Kueue, 0,
		kueueinformers.WithNamespace(namespace), kueueinformers.WithTransform(slimKueueObject))
	defer func() {
		cancel()
		factory.Shutdown()
	}()

	changed := make(chan struct{}, 1)
	notify := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { signal(changed) },
		UpdateFunc: func(_, _ any) { signal(changed) },
		DeleteFunc: func(any) { signal(changed) },
	}
	v := factory.Kueue().V1beta2()
	var synced []cache.InformerSynced
	// An informer retries a refused list forever; one list first tells the
	// page why a part is missing, and that part is not watched.
	// The informer is made only then: the factory starts every informer
	// made.
	follow := func(what string, probe func() error, newInformer func() cache.SharedIndexInformer) bool {
		if err := probe(); err != nil {
			refusals = append(refusals, kueueStatus(what, err))
			return false
		}
		informer := newInformer()
		if _, err := informer.AddEventHandler(notify); err != nil {
			refusals = append(refusals, statusOf(err))
			return false
		}
		synced = append(synced, informer.HasSynced)
		return true
	}
	limit1 := metav1.ListOptions{Limit: 1}
	haveCQs := follow("ClusterQueues", func() error { _, err := api.ClusterQueues().List(ctx, limit1); return err },
		v.ClusterQueues().Informer)
	haveLQs := follow("LocalQueues", func() error { _, err := api.LocalQueues(namespace).List(ctx, limit1); return err },
		v.LocalQueues().Informer)
	haveWLs := follow("Workloads", func() error { _, err := api.Workloads(namespace).List(ctx, limit1); return err },
		v.Workloads().Informer)
	for _, refusal := range refusals {
		if stream.send("refused", errorBody{Status: refusal}) != nil {
			return
		}
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return
	}
	pending, unavailable := kueueview.Visibility(ctx, c.Kube.Discovery(), c.Kueue)

	var last []byte
	sendSnapshot := func() error {
		var cqs []kueuev1beta2.ClusterQueue
		var lqs []kueuev1beta2.LocalQueue
		var wls []kueuev1beta2.Workload
		if haveCQs {
			cqs = values(v.ClusterQueues().Lister().List(labels.Everything()))
		}
		if haveLQs {
			lqs = values(v.LocalQueues().Lister().List(labels.Everything()))
		}
		if haveWLs {
			wls = values(v.Workloads().Lister().List(labels.Everything()))
		}
		snapshot := kueueview.Build(cqs, lqs, wls, pending, unavailable)
		event := queuesEvent{Namespace: namespace}
		if withWorkloads {
			event.Workloads = snapshot.Workloads
		} else {
			event.ClusterQueues, event.LocalQueues = snapshot.ClusterQueues, snapshot.LocalQueues
		}
		data, err := json.Marshal(event)
		if err != nil {
			return err
		}
		if bytes.Equal(data, last) {
			return nil
		}
		last = data
		return stream.sendRaw("snapshot", data)
	}
	if sendSnapshot() != nil || stream.send("synced", struct{}{}) != nil {
		return
	}

	heartbeat := time.NewTicker(heartbeatInterval)
	defer heartbeat.Stop()
	var refresh <-chan time.Time
	if pending != nil && !withWorkloads {
		ticker := time.NewTicker(visibilityRefresh)
		defer ticker.Stop()
		refresh = ticker.C
	}
	for {
		var err error
		select {
		case <-ctx.Done():
			return
		case <-changed:
			select {
			case <-time.After(queuesThrottle):
			case <-ctx.Done():
				return
			}
			// What changed during the wait is in this snapshot.
			select {
			case <-changed:
			default:
			}
			err = sendSnapshot()
		case <-refresh:
			err = sendSnapshot()
		case <-heartbeat.C:
			err = stream.heartbeat()
		}
		if err != nil {
			return // the browser went away
		}
	}
}

// signal marks a change without blocking: one mark stands for any number.
func signal(changed chan<- struct{}) {
	select {
	case changed <- struct{}{}:
	default:
	}
}

// kueueStatus is the API's refusal of a list of what; a 404 means the
// cluster serves no Kueue API at all, which the page says in those words.
func kueueStatus(what string, err error) metav1.Status {
	status := statusOf(err)
	if apierrors.IsNotFound(err) {
		status.Message = what + ": Kueue's API (kueue.x-k8s.io/v1beta2) is not served in this cluster"
	}
	return status
}

// values copies what a lister holds into a slice of objects, which Build
// reads and never changes. A lister reads its cache and fails on nothing.
func values[T any](items []*T, _ error) []T {
	out := make([]T, 0, len(items))
	for _, item := range items {
		out = append(out, *item)
	}
	return out
}

// slimKueueObject keeps of each object what the view reads. A Workload's
// pod sets are its jobs' pod templates, most of its size, and with a
// thousand Workloads they would be most of what a stream holds.
func slimKueueObject(obj any) (any, error) {
	switch o := obj.(type) {
	case *kueuev1beta2.Workload:
		slim := &kueuev1beta2.Workload{ObjectMeta: metav1.ObjectMeta{
			Name: o.Name, Namespace: o.Namespace, UID: o.UID, ResourceVersion: o.ResourceVersion,
			CreationTimestamp: o.CreationTimestamp, OwnerReferences: o.OwnerReferences,
		}}
		slim.Spec.QueueName, slim.Spec.Priority, slim.Spec.Active = o.Spec.QueueName, o.Spec.Priority, o.Spec.Active
		slim.Status.Conditions = o.Status.Conditions
		if o.Status.Admission != nil {
			slim.Status.Admission = &kueuev1beta2.Admission{ClusterQueue: o.Status.Admission.ClusterQueue}
		}
		return slim, nil
	case metav1.Object:
		o.SetManagedFields(nil)
	}
	return obj, nil
}
