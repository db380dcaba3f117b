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
	"context"
	"net/http"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// jobEvent is one change of a watched job, on its way to the page.
type jobEvent struct {
	// name is the SSE event: "upsert" or "delete".
	name string
	kind jobKind
	// kept is what the stream's informer keeps of the job (watchScope.keep).
	kept any
}

// watchScope is which jobs a stream follows.
type watchScope struct {
	// namespace is "" for every namespace.
	namespace string
	// kinds are the kinds followed; nil means all of them.
	kinds []jobKind
	// tweak narrows each list and watch, e.g. to one job by name.
	tweak func(*metav1.ListOptions)
	// keep, when set, is what the stream's informer keeps of each job, an
	// object with the job's name and namespace (listedJob); else the whole
	// job but its managed fields.
	keep func(jobKind, v1beta1.TrainingJob) any
	// lists, when set, is held during each list of the API (see listSlots).
	lists listSlots
	// feeds, when set, share informers among streams (jobFeeds); identity
	// tells whose rights a stream reads with.
	feeds    *jobFeeds
	identity string
}

// listSlots bound the lists of jobs that a server's streams read from the
// API at the same time. A list of every job is decoded whole, several times
// the size of what a stream keeps of it; 200 streams opened at once (a page
// reloaded by many users, or an attack) read 200 such lists together, and
// the server held 600 MiB where its limit is 256 (docs/benchmarks.md). The
// other streams wait their turn, each for a list's time.
type listSlots chan struct{}

// maxConcurrentLists is how many lists a server reads at once.
const maxConcurrentLists = 4

func newListSlots() listSlots { return make(listSlots, maxConcurrentLists) }

// hold takes a slot until release, or fails when ctx ends first.
func (l listSlots) hold(ctx context.Context) (release func(), err error) {
	if l == nil {
		return func() {}, nil
	}
	select {
	case l <- struct{}{}:
		return func() { <-l }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// watchJobs follows the jobs of every kind in scope with informers, which list
// and watch and list again when a watch breaks, and sends each change to
// events until ctx ends. The initial list of every kind is sent before
// synced is closed. A kind the user may not list is reported by refused, with
// the API's Status, and left out; the others go on.
func watchJobs(ctx context.Context, c Clients, scope watchScope, events chan<- jobEvent, synced chan<- struct{}, refused func(jobKind, error)) {
	feeds := scope.feeds
	if feeds == nil {
		feeds = newJobFeeds()
	}
	var wg sync.WaitGroup
	for _, kind := range scope.followedKinds() {
		client := kind.Client(c.Training, scope.namespace)
		// An informer retries a refused list forever and keeps the reason
		// to its log; one list first tells the page why it sees nothing.
		probe := metav1.ListOptions{Limit: 1}
		scope.narrow(&probe)
		if _, err := client.List(ctx, probe); err != nil {
			refused(kind, err)
			continue
		}
		send := func(name string, obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			select {
			case events <- jobEvent{name: name, kind: kind, kept: obj}:
			case <-ctx.Done():
			}
		}
		key := feedKey{identity: scope.identity, resource: kind.Resource, namespace: scope.namespace,
			selector: scope.selector(), listed: scope.keep != nil}
		registration, unsubscribe, err := feeds.subscribe(key, func() cache.SharedIndexInformer {
			return scope.newInformer(c, kind, client)
		}, cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { send("upsert", obj) },
			UpdateFunc: func(_, obj any) { send("upsert", obj) },
			DeleteFunc: func(obj any) { send("delete", obj) },
		})
		if err != nil {
			refused(kind, err)
			continue
		}
		context.AfterFunc(ctx, unsubscribe)
		wg.Go(func() { cache.WaitForCacheSync(ctx.Done(), registration.HasSynced) })
	}
	wg.Wait()
	close(synced)
}

// dropManagedFields leaves the server-side apply bookkeeping out of the
// informers' caches: no page shows it, and on a job it is often a third of
// the object.
func dropManagedFields(obj any) (any, error) {
	if job, ok := obj.(v1beta1.TrainingJob); ok {
		job.SetManagedFields(nil)
	}
	return obj, nil
}

// newInformer is the informer of the kind's jobs in scope, as the user of c
// may see them, keeping of each job what keep makes of it.
func (s watchScope) newInformer(c Clients, kind jobKind, client jobClient) cache.SharedIndexInformer {
	// Passing the clientset tells the reflector whether it may stream the
	// initial list (WatchList): fakes cannot.
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			s.narrow(&opts)
			release, err := s.lists.hold(ctx)
			if err != nil {
				return nil, err
			}
			defer release()
			return client.ListObject(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			s.narrow(&opts)
			return client.Watch(ctx, opts)
		},
	}, c.Training)
	informer := cache.NewSharedIndexInformerWithOptions(lw, kind.New(), cache.SharedIndexInformerOptions{})
	_ = informer.SetTransform(s.transform(kind)) // not started yet, so it takes
	return informer
}

// selector is what narrow puts in a list's options, to tell scopes apart.
func (s watchScope) selector() string {
	var opts metav1.ListOptions
	s.narrow(&opts)
	return opts.LabelSelector + "|" + opts.FieldSelector
}

// transform makes of each job what the stream's informer keeps (keep).
func (s watchScope) transform(kind jobKind) cache.TransformFunc {
	if s.keep == nil {
		return dropManagedFields
	}
	return func(obj any) (any, error) {
		if job, ok := obj.(v1beta1.TrainingJob); ok {
			return s.keep(kind, job), nil
		}
		return obj, nil
	}
}

func (s watchScope) followedKinds() []jobKind {
	if s.kinds == nil {
		return jobKinds
	}
	return s.kinds
}

func (s watchScope) narrow(opts *metav1.ListOptions) {
	if s.tweak != nil {
		s.tweak(opts)
	}
}

// streamJobs answers a request with a stream of server-sent events about the
// jobs in scope: "upsert" and "delete" with encode's view of what the
// stream keeps of a job, "synced" once every kind's first list was sent, and
// "refused" with the API's Status for a kind the user may not list.
func streamJobs(w http.ResponseWriter, r *http.Request, c Clients, scope watchScope, encode func(jobKind, any) any) {
	stream, err := startEventStream(w)
	if err != nil {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	events := make(chan jobEvent, 64)
	synced := make(chan struct{})
	refusals := make(chan errorBody, len(jobKinds))
	go watchJobs(ctx, c, scope, events, synced, func(_ jobKind, err error) {
		refusals <- errorBody{Status: statusOf(err)}
	})
	heartbeat := time.NewTicker(heartbeatInterval)
	defer heartbeat.Stop()
	for {
		var err error
		select {
		case <-ctx.Done():
			return
		case e := <-events:
			err = stream.send(e.name, encode(e.kind, e.kept))
		case refusal := <-refusals:
			err = stream.send("refused", refusal)
		case <-synced:
			synced = nil // sent once; a nil channel never fires again
			// The first lists' events are all in the buffer by now: send
			// them first, so that "synced" follows the whole list.
			for len(events) > 0 && err == nil {
				e := <-events
				err = stream.send(e.name, encode(e.kind, e.kept))
			}
			if err == nil {
				err = stream.send("synced", struct{}{})
			}
		case <-heartbeat.C:
			err = stream.heartbeat()
		}
		if err != nil {
			return // the browser went away
		}
	}
}
