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

package tuning

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/generated/clientset/versioned"
	jobinformers "tensorstack.dev/training/pkg/generated/informers/externalversions"
	listers "tensorstack.dev/training/pkg/generated/listers/batch/v1beta1"
	"tensorstack.dev/training/pkg/jobclient"
)

// ControllerName names the controller in events and logs.
const ControllerName = "tuningjob-controller"

// searchIndex indexes trial jobs by the search they belong to.
const searchIndex = "search"

// Controller runs TuningJobs.
type Controller struct {
	client      versioned.Interface
	kubeClient  kubernetes.Interface
	searches    listers.TuningJobLister
	trials      map[string]cache.SharedIndexInformer // by kind
	synced      []cache.InformerSynced
	queue       workqueue.TypedRateLimitingInterface[string]
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
	clock       clock.PassiveClock

	searchInformers jobinformers.SharedInformerFactory
	trialInformers  jobinformers.SharedInformerFactory
}

// New builds the controller and its informers: one of every search, and
// one per job kind of the jobs labelled as a search's trials, finished or
// not.
func New(ctx context.Context, kubeClient kubernetes.Interface, client versioned.Interface) (*Controller, error) {
	c := &Controller{
		client:     client,
		kubeClient: kubeClient,
		trials:     map[string]cache.SharedIndexInformer{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "tuningjob"}),
		clock:           clock.RealClock{},
		searchInformers: jobinformers.NewSharedInformerFactory(client, 0),
		trialInformers: jobinformers.NewSharedInformerFactoryWithOptions(client, 0,
			jobinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = v1beta1.LabelTuningJob }),
			jobinformers.WithTransform(func(obj any) (any, error) {
				if m, ok := obj.(metav1.Object); ok {
					m.SetManagedFields(nil)
				}
				return obj, nil
			})),
	}
	c.broadcaster = record.NewBroadcaster(record.WithContext(ctx))
	c.recorder = c.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: ControllerName})

	searches := c.searchInformers.Batch().V1beta1().TuningJobs()
	c.searches = searches.Lister()
	if _, err := searches.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
	}); err != nil {
		return nil, err
	}
	c.synced = append(c.synced, searches.Informer().HasSynced)

	for _, k := range jobclient.Kinds {
		generic, err := c.trialInformers.ForResource(v1beta1.SchemeGroupVersion.WithResource(k.Resource))
		if err != nil {
			return nil, fmt.Errorf("the informer of %s: %w", k.Name, err)
		}
		informer := generic.Informer()
		if err := informer.AddIndexers(cache.Indexers{searchIndex: indexBySearch}); err != nil {
			return nil, err
		}
		if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    c.enqueueSearchOf,
			UpdateFunc: func(_, obj any) { c.enqueueSearchOf(obj) },
			DeleteFunc: c.enqueueSearchOf,
		}); err != nil {
			return nil, err
		}
		c.trials[k.Name] = informer
		c.synced = append(c.synced, informer.HasSynced)
	}
	return c, nil
}

// indexBySearch indexes a trial job under <namespace>/<search>.
func indexBySearch(obj any) ([]string, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, nil
	}
	search, ok := m.GetLabels()[v1beta1.LabelTuningJob]
	if !ok {
		return nil, nil
	}
	return []string{m.GetNamespace() + "/" + search}, nil
}

func (c *Controller) enqueue(obj any) {
	if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

// enqueueSearchOf queues the search a trial job belongs to.
func (c *Controller) enqueueSearchOf(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if keys, err := indexBySearch(obj); err == nil {
		for _, k := range keys {
			c.queue.Add(k)
		}
	}
}

// HasSynced says whether every informer of the controller has synced.
func (c *Controller) HasSynced() bool {
	for _, s := range c.synced {
		if !s() {
			return false
		}
	}
	return true
}

// Run starts the informers, waits for their caches and syncs searches with
// the given number of workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx)
	c.broadcaster.StartStructuredLogging(3)
	c.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.kubeClient.CoreV1().Events("")})
	defer c.broadcaster.Shutdown()
	c.searchInformers.Start(ctx.Done())
	c.trialInformers.Start(ctx.Done())
	defer c.searchInformers.Shutdown()
	defer c.trialInformers.Shutdown()

	logger.Info("Starting controller", "controller", ControllerName, "workers", workers)
	defer logger.Info("Controller stopped", "controller", ControllerName)
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced...) {
		c.queue.ShutDown()
		return
	}
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Go(func() { wait.UntilWithContext(ctx, c.worker, time.Second) })
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
}

func (c *Controller) worker(ctx context.Context) {
	for c.next(ctx) {
	}
}

func (c *Controller) next(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Syncing a search", "search", key)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}
