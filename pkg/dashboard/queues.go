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
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

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
	kueue := c.Kueue
	var refusals []metav1.Status
	if namespace == "" {
		if _, err := kueue.ListWorkloads(r.Context(), "", metav1.ListOptions{Limit: 1}); apierrors.IsForbidden(err) {
			refusals = append(refusals, statusOf(err))
			namespace = c.Namespace
		}
	}
	stream, err := startEventStream(w)
	if err != nil {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	// The informers stop with the stream, before it returns.
	var running sync.WaitGroup
	defer func() {
		cancel()
		running.Wait()
	}()

	changed := make(chan struct{}, 1)
	notify := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { signal(changed) },
		UpdateFunc: func(_, _ any) { signal(changed) },
		DeleteFunc: func(any) { signal(changed) },
	}
	var informers []cache.SharedIndexInformer
	// follow watches what through an informer of its own and returns its
	// store, or nil when the API refuses the list: an informer retries a
	// refused list for ever, so one list first tells the page why a part
	// is missing, and that part is not watched.
	follow := func(what string, example runtime.Object, lw *cache.ListWatch) cache.Store {
		if _, err := lw.ListWithContext(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			refusals = append(refusals, kueueStatus(what, err))
			return nil
		}
		// A client that cannot stream a list (a test's fake) says so.
		informer := cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, kueue), example,
			cache.SharedIndexInformerOptions{})
		if err := informer.SetTransform(slimKueueObject); err != nil {
			refusals = append(refusals, statusOf(err))
			return nil
		}
		if _, err := informer.AddEventHandler(notify); err != nil {
			refusals = append(refusals, statusOf(err))
			return nil
		}
		informers = append(informers, informer)
		return informer.GetStore()
	}
	cqs := follow("ClusterQueues", &kueuev1beta2.ClusterQueue{}, &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return kueue.ListClusterQueues(ctx, opts)
		},
		WatchFuncWithContext: kueue.WatchClusterQueues,
	})
	lqs := follow("LocalQueues", &kueuev1beta2.LocalQueue{}, &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return kueue.ListLocalQueues(ctx, namespace, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return kueue.WatchLocalQueues(ctx, namespace, opts)
		},
	})
	wls := follow("Workloads", &kueuev1beta2.Workload{}, &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return kueue.ListWorkloads(ctx, namespace, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return kueue.WatchWorkloads(ctx, namespace, opts)
		},
	})
	for _, refusal := range refusals {
		if stream.send("refused", errorBody{Status: refusal}) != nil {
			return
		}
	}
	var synced []cache.InformerSynced
	for _, informer := range informers {
		synced = append(synced, informer.HasSynced)
		running.Go(func() { informer.RunWithContext(ctx) })
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return
	}
	pending, unavailable := kueueview.Visibility(ctx, c.Kube.Discovery(), c.Kueue)

	var last []byte
	sendSnapshot := func() error {
		snapshot := kueueview.Build(values[kueuev1beta2.ClusterQueue](cqs), values[kueuev1beta2.LocalQueue](lqs),
			values[kueuev1beta2.Workload](wls), pending, unavailable)
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

// values copies what an informer's store holds into a slice of objects,
// which Build reads and never changes; a nil store (a refused list) holds
// none.
func values[T any](store cache.Store) []T {
	if store == nil {
		return nil
	}
	items := store.List()
	out := make([]T, 0, len(items))
	for _, item := range items {
		out = append(out, *item.(*T))
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
