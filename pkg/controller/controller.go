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
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
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
)

// ControllerName is the name the controller records events and leases under.
const ControllerName = "training-controller"

// Options tune a Controller. The zero value is usable.
type Options struct {
	// ClusterDomain, when set, is appended to replica addresses:
	// <type>-<i>.<job>.<ns>.svc.<ClusterDomain>. Empty keeps the shorter
	// <type>-<i>.<job>.<ns>.svc form of the API contract, which resolves
	// through the pods' DNS search path.
	ClusterDomain string
	// Clock tells time; tests drive it. Defaults to the real clock.
	Clock clock.WithTicker
	// Recorder records events. Defaults to a recorder that writes them to
	// the apiserver through KubeClient.
	Recorder record.EventRecorder
	// ExpectationsTimeout defaults to ExpectationsTimeout.
	ExpectationsTimeout time.Duration
	// RestartBackoff is the delay before a replica whose pod exited is
	// started again; zero fields take the defaults
	// (DefaultRestartBackoffBase, ...Max, ...Reset).
	RestartBackoff RestartBackoff
	// GangScheduler is the backend that gang-schedules the jobs asking for
	// it (spec.scheduler.t9kScheduler): GangSchedulerWorkload,
	// GangSchedulerCoscheduling, or GangSchedulerNone (also the zero
	// value). GangSchedulerAuto must be resolved first (ResolveGangScheduler).
	GangScheduler GangScheduler
	// CoschedulingSchedulerName is the scheduler running scheduler-plugins'
	// Coscheduling plugin. Defaults to DefaultCoschedulingSchedulerName.
	CoschedulingSchedulerName string
	// Queueing is the queueing system that admits the jobs naming a queue:
	// QueueingKueue, or QueueingNone (also the zero value). QueueingAuto
	// must be resolved first (ResolveQueueing).
	Queueing Queueing
	// DynamicClient and DynamicInformers (NewDynamicInformerFactory, started
	// by the caller) serve the coscheduling PodGroups and Kueue's Workloads;
	// needed only with GangSchedulerCoscheduling or QueueingKueue.
	DynamicClient    dynamic.Interface
	DynamicInformers dynamicinformer.DynamicSharedInformerFactory
	// PodEventBatchPeriod is how long a change to a job's pods waits for
	// more before the job is reconciled (DefaultPodEventBatchPeriod in the
	// controller-manager); zero reconciles on every change.
	PodEventBatchPeriod time.Duration
}

// DefaultPodEventBatchPeriod gathers the pod changes of a burst (a job's
// pods created, scheduled and started together, or finishing together) into
// one reconcile and one status write, as Kubernetes' Job controller does.
// It is short next to how long a training job runs.
const DefaultPodEventBatchPeriod = 500 * time.Millisecond

// Controller reconciles training jobs of every kind it has an adapter for.
type Controller struct {
	kubeClient kubernetes.Interface
	kinds      map[string]*kindHandler

	podIndexer        cache.Indexer
	serviceIndexer    cache.Indexer
	deploymentIndexer cache.Indexer
	// mountFailures explains pods stuck on a volume; the controller runs
	// its informer itself (Run).
	mountFailures *mountFailures
	synced        []cache.InformerSynced
	// gang keeps the group objects of jobs that ask for gang scheduling;
	// nil without a gang scheduler.
	gang gangBackend

	queue workqueue.TypedRateLimitingInterface[jobKey]
	// urgent holds the jobs one of whose pods just ended (lanes.go); locks
	// keeps the workers of both queues off the same job at once.
	urgent       workqueue.TypedRateLimitingInterface[jobKey]
	locks        *keyLocks
	expectations *Expectations
	recorder     record.EventRecorder
	broadcaster  record.EventBroadcaster
	clock        clock.WithTicker
	backoff      RestartBackoff
	// kueue queues the jobs that name a queue; nil without Kueue.
	kueue *kueueQueue
	// statusWrites holds reconciles back until the cache has their job's
	// last status write.
	statusWrites *statusWrites
	// podEventBatch delays the reconcile a pod change asks for (see
	// Options.PodEventBatchPeriod).
	podEventBatch time.Duration

	clusterDomain string
}

// jobKey identifies a job across kinds; it is the work queue's item.
type jobKey struct {
	Kind, Namespace, Name string
}

func (k jobKey) String() string { return k.Kind + "/" + k.Namespace + "/" + k.Name }

// NewKubeInformerFactory returns an informer factory for pods, services and
// deployments that only sees objects carrying the job-name label, i.e. those
// the controller created, not every pod in the cluster, and caches them
// trimmed to what the controller reads (trimForCache).
func NewKubeInformerFactory(client kubernetes.Interface, resync time.Duration) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(client, resync,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = v1beta1.LabelJobName
		}),
		informers.WithTransform(trimForCache))
}

// NewJobInformerFactory returns an informer factory for the training jobs
// that caches them without their managedFields (trimForCache).
func NewJobInformerFactory(client versioned.Interface, resync time.Duration) jobinformers.SharedInformerFactory {
	return jobinformers.NewSharedInformerFactoryWithOptions(client, resync, jobinformers.WithTransform(trimForCache))
}

// New builds a controller on the given clients and informer factories; the
// factories must be started by the caller after New returns.
func New(ctx context.Context, kubeClient kubernetes.Interface, jobClient versioned.Interface,
	kubeInformers informers.SharedInformerFactory, jobInformers jobinformers.SharedInformerFactory,
	opts Options) (*Controller, error) {
	logger := klog.FromContext(ctx)
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.ExpectationsTimeout <= 0 {
		opts.ExpectationsTimeout = ExpectationsTimeout
	}
	c := &Controller{
		kubeClient: kubeClient,
		kinds:      map[string]*kindHandler{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[jobKey](),
			workqueue.TypedRateLimitingQueueConfig[jobKey]{Name: "trainingjob", Clock: opts.Clock}),
		urgent: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[jobKey](),
			workqueue.TypedRateLimitingQueueConfig[jobKey]{Name: "trainingjob-urgent", Clock: opts.Clock}),
		locks:         newKeyLocks(),
		expectations:  NewExpectations(opts.Clock, opts.ExpectationsTimeout),
		recorder:      opts.Recorder,
		clock:         opts.Clock,
		backoff:       opts.RestartBackoff.withDefaults(),
		statusWrites:  newStatusWrites(),
		podEventBatch: opts.PodEventBatchPeriod,
		clusterDomain: opts.ClusterDomain,
	}
	if c.recorder == nil {
		c.broadcaster = record.NewBroadcaster(record.WithContext(ctx))
		c.recorder = c.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: ControllerName})
	}

	for _, h := range []*kindHandler{
		newTensorFlowHandler(jobClient, jobInformers),
		newPyTorchHandler(jobClient, jobInformers),
	} {
		kind := h.Kind()
		c.kinds[kind] = h
		_, err := h.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.enqueueJob(logger, kind, obj) },
			UpdateFunc: func(_, cur any) { c.enqueueJob(logger, kind, cur) },
			DeleteFunc: func(obj any) { c.forgetJob(logger, kind, obj) },
		})
		if err != nil {
			return nil, fmt.Errorf("watching %s: %w", kind, err)
		}
		c.synced = append(c.synced, h.informer.HasSynced)
	}

	pods := kubeInformers.Core().V1().Pods()
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.addPod(logger, obj) },
		UpdateFunc: func(old, cur any) { c.updatePod(logger, old, cur) },
		DeleteFunc: func(obj any) { c.deletePod(logger, obj) },
	}); err != nil {
		return nil, fmt.Errorf("watching pods: %w", err)
	}
	// Pods by the job their labels name, so that a reconcile looks at its
	// own pods only and not at every labelled pod of the namespace.
	if err := pods.Informer().AddIndexers(cache.Indexers{podJobIndex: podJobIndexFunc}); err != nil {
		return nil, fmt.Errorf("indexing pods: %w", err)
	}
	c.podIndexer = pods.Informer().GetIndexer()

	dependents := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueueOwner(logger, obj) },
		UpdateFunc: func(_, cur any) { c.enqueueOwner(logger, cur) },
		DeleteFunc: func(obj any) { c.enqueueOwner(logger, obj) },
	}
	services := kubeInformers.Core().V1().Services()
	if _, err := services.Informer().AddEventHandler(dependents); err != nil {
		return nil, fmt.Errorf("watching services: %w", err)
	}
	c.serviceIndexer = services.Informer().GetIndexer()
	deployments := kubeInformers.Apps().V1().Deployments()
	if _, err := deployments.Informer().AddEventHandler(dependents); err != nil {
		return nil, fmt.Errorf("watching deployments: %w", err)
	}
	c.deploymentIndexer = deployments.Informer().GetIndexer()
	mounts, err := newMountFailures(kubeClient)
	if err != nil {
		return nil, fmt.Errorf("watching mount failures: %w", err)
	}
	c.mountFailures = mounts
	if err := c.mountFailures.onChange(logger, c.enqueueStuckPod); err != nil {
		return nil, fmt.Errorf("watching mount failures: %w", err)
	}
	c.synced = append(c.synced, pods.Informer().HasSynced, services.Informer().HasSynced,
		deployments.Informer().HasSynced, c.mountFailures.informer.HasSynced)
	if err := c.setUpGang(logger, kubeInformers, opts); err != nil {
		return nil, err
	}
	if err := c.setUpQueueing(logger, opts); err != nil {
		return nil, err
	}
	return c, nil
}

// HasSynced says whether every informer the controller reads has synced.
func (c *Controller) HasSynced() bool {
	for _, s := range c.synced {
		if !s() {
			return false
		}
	}
	return true
}

// Run waits for the caches, then reconciles jobs with the given number of
// workers until ctx is cancelled. It returns once every worker has finished
// its current job.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx)
	if c.broadcaster != nil {
		c.broadcaster.StartStructuredLogging(3)
		c.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.kubeClient.CoreV1().Events("")})
		defer c.broadcaster.Shutdown()
	}

	go c.mountFailures.informer.RunWithContext(ctx)

	workers = max(workers, 1)
	logger.Info("Starting controller", "controller", ControllerName, "workers", workers,
		"urgentWorkers", urgentWorkers(workers))
	defer logger.Info("Controller stopped", "controller", ControllerName)

	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced...) {
		c.queue.ShutDown()
		c.urgent.ShutDown()
		return
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.worker(c.queue), time.Second) })
	}
	for range urgentWorkers(workers) {
		wg.Go(func() { wait.UntilWithContext(ctx, c.worker(c.urgent), time.Second) })
	}
	<-ctx.Done()
	c.queue.ShutDown()
	c.urgent.ShutDown()
	wg.Wait()
}

func (c *Controller) worker(q workqueue.TypedRateLimitingInterface[jobKey]) func(context.Context) {
	return func(ctx context.Context) {
		for c.processNextItem(ctx, q) {
		}
	}
}

// processNextItem reconciles the next job of q. Retries after an error go
// back to q; requeues for a time (deadlines, backoff) to the main queue.
func (c *Controller) processNextItem(ctx context.Context, q workqueue.TypedRateLimitingInterface[jobKey]) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	unlock := c.locks.lock(key)
	defer unlock()

	requeueAfter, err := c.syncJob(ctx, key)
	if err != nil {
		if apierrors.IsConflict(err) {
			// The cache was behind our own last write; try again shortly.
			klog.FromContext(ctx).V(4).Info("Job changed while syncing, retrying", "job", key, "err", err)
		} else {
			utilruntime.HandleErrorWithContext(ctx, err, "Syncing job failed, requeuing", "job", key)
		}
		q.AddRateLimited(key)
		return true
	}
	q.Forget(key)
	if requeueAfter > 0 {
		c.queue.AddAfter(key, requeueAfter)
	}
	return true
}

func (c *Controller) enqueue(key jobKey) { c.queue.Add(key) }

// enqueuePodChange queues a job after a change to one of its pods, once the
// batch period has passed: on the urgent queue when the pod ended. The
// delaying queue keeps a key once, at its earliest time, so the changes
// within a period make a single reconcile; a job already waiting to be
// reconciled is not delayed further.
func (c *Controller) enqueuePodChange(key jobKey, ended bool) {
	q := c.queue
	if ended {
		q = c.urgent
	}
	if c.podEventBatch <= 0 {
		q.Add(key)
		return
	}
	q.AddAfter(key, c.podEventBatch)
}

func (c *Controller) enqueueJob(logger klog.Logger, kind string, obj any) {
	m, err := metaOf(obj)
	if err != nil {
		logger.Error(err, "Unexpected object in job informer", "kind", kind)
		return
	}
	c.enqueue(jobKey{Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName()})
}

func (c *Controller) forgetJob(logger klog.Logger, kind string, obj any) {
	m, err := metaOf(obj)
	if err != nil {
		logger.Error(err, "Unexpected object in job informer", "kind", kind)
		return
	}
	key := jobKey{Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName()}
	c.expectations.DeleteExpectations(key.String())
	c.statusWrites.forget(key)
	c.enqueue(key)
}

// cachedObject returns an object of a cache by namespace and name, or nil.
func cachedObject[T any](indexer cache.Indexer, namespace, name string) (T, error) {
	var zero T
	obj, ok, err := indexer.GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return zero, err
	}
	t, _ := obj.(T)
	return t, nil
}

// podJobIndex indexes pods by <namespace>/<job kind>/<job name>, from their
// labels.
const podJobIndex = "job"

func podJobIndexFunc(obj any) ([]string, error) {
	m, err := metaOf(obj)
	if err != nil {
		return nil, nil
	}
	l := m.GetLabels()
	name, kind := l[v1beta1.LabelJobName], l[v1beta1.LabelJobKind]
	if name == "" || kind == "" {
		return nil, nil
	}
	return []string{podJobIndexKey(m.GetNamespace(), kind, name)}, nil
}

func podJobIndexKey(namespace, kind, name string) string {
	return namespace + "/" + kind + "/" + name
}

// metaOf returns the metadata of an informer object or of the object in a
// deletion tombstone.
func metaOf(obj any) (metav1.Object, error) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("object %T has no metadata", obj)
	}
	return m, nil
}

// ownerKey resolves the controller reference of an object to a job the
// cache knows, with a matching UID.
func (c *Controller) ownerKey(obj metav1.Object) (jobKey, bool) {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil {
		return jobKey{}, false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != v1beta1.GroupName {
		return jobKey{}, false
	}
	h := c.kinds[ref.Kind]
	if h == nil {
		return jobKey{}, false
	}
	job, err := h.get(obj.GetNamespace(), ref.Name)
	if err != nil || job.GetUID() != ref.UID {
		return jobKey{}, false
	}
	return jobKey{Kind: ref.Kind, Namespace: obj.GetNamespace(), Name: ref.Name}, true
}

// labelKey is the job an orphan's labels name, a candidate for adoption.
func (c *Controller) labelKey(obj metav1.Object) (jobKey, bool) {
	l := obj.GetLabels()
	name, kind := l[v1beta1.LabelJobName], l[v1beta1.LabelJobKind]
	if name == "" || c.kinds[kind] == nil {
		return jobKey{}, false
	}
	if _, err := c.kinds[kind].get(obj.GetNamespace(), name); err != nil {
		return jobKey{}, false
	}
	return jobKey{Kind: kind, Namespace: obj.GetNamespace(), Name: name}, true
}

// enqueueFinalizerOwner queues the job a pod's controller reference names
// when that job is not in the cache (deleted, or another of the same name),
// so that its reconcile takes the outcome finalizer off the pod.
func (c *Controller) enqueueFinalizerOwner(pod *corev1.Pod) {
	if !hasOutcomeFinalizer(pod) {
		return
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		if key, ok := c.labelKey(pod); ok {
			c.enqueue(key)
		} else if l := pod.Labels; c.kinds[l[v1beta1.LabelJobKind]] != nil && l[v1beta1.LabelJobName] != "" {
			c.enqueue(jobKey{Kind: l[v1beta1.LabelJobKind], Namespace: pod.Namespace, Name: l[v1beta1.LabelJobName]})
		}
		return
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil && gv.Group == v1beta1.GroupName && c.kinds[ref.Kind] != nil {
		c.enqueue(jobKey{Kind: ref.Kind, Namespace: pod.Namespace, Name: ref.Name})
	}
}

func (c *Controller) addPod(logger klog.Logger, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.DeletionTimestamp != nil {
		// A restarted controller sees pods already on their way out.
		c.deletePod(logger, pod)
		if _, ok := c.ownerKey(pod); !ok {
			c.enqueueFinalizerOwner(pod)
		}
		return
	}
	if key, ok := c.ownerKey(pod); ok {
		c.expectations.CreationObserved(key.String(), pod.Name)
		logger.V(4).Info("Pod added", "pod", klog.KObj(pod), "job", key)
		c.enqueuePodChange(key, podEnded(pod))
		return
	}
	c.enqueueUnowned(pod)
}

func (c *Controller) updatePod(logger klog.Logger, old, cur any) {
	oldPod, ok1 := old.(*corev1.Pod)
	curPod, ok2 := cur.(*corev1.Pod)
	if !ok1 || !ok2 || oldPod.ResourceVersion == curPod.ResourceVersion {
		// Periodic resyncs send the same object again.
		return
	}
	curKey, curOwned := c.ownerKey(curPod)
	if curPod.DeletionTimestamp != nil && oldPod.DeletionTimestamp == nil && curOwned {
		// Graceful deletion has begun: the pod is as good as gone for the
		// expectations; its final removal is observed again, harmlessly.
		c.expectations.DeletionObserved(curKey.String(), curPod.Name)
	}
	if oldKey, ok := c.ownerKey(oldPod); ok && (!curOwned || oldKey != curKey) {
		c.enqueuePodChange(oldKey, podEnded(curPod))
	}
	if curOwned {
		logger.V(5).Info("Pod updated", "pod", klog.KObj(curPod), "job", curKey)
		c.enqueuePodChange(curKey, podEnded(curPod))
		return
	}
	c.enqueueUnowned(curPod)
}

// enqueueUnowned queues the job a pod without a known owner matters to: the
// job whose labels an orphan carries (it may adopt it), or the job that
// must take the outcome finalizer off it.
func (c *Controller) enqueueUnowned(pod *corev1.Pod) {
	if hasOutcomeFinalizer(pod) {
		c.enqueueFinalizerOwner(pod)
		return
	}
	if metav1.GetControllerOfNoCopy(pod) == nil {
		if key, ok := c.labelKey(pod); ok {
			c.enqueue(key)
		}
	}
}

func (c *Controller) deletePod(logger klog.Logger, obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if key, ok := c.ownerKey(pod); ok {
		c.expectations.DeletionObserved(key.String(), pod.Name)
		logger.V(4).Info("Pod deleted", "pod", klog.KObj(pod), "job", key)
		c.enqueuePodChange(key, true)
	}
}

// enqueueStuckPod queues the job of a pod the kubelet reported a problem
// with that the pod's status does not show.
func (c *Controller) enqueueStuckPod(namespace, name string) {
	obj, ok, err := c.podIndexer.GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return
	}
	if key, ok := c.ownerKey(obj.(*corev1.Pod)); ok {
		c.enqueuePodChange(key, false)
	}
}

// enqueueOwner requeues the job that owns a Service or Deployment, or whose
// labels an orphan carries.
func (c *Controller) enqueueOwner(logger klog.Logger, obj any) {
	m, err := metaOf(obj)
	if err != nil {
		return
	}
	if key, ok := c.ownerKey(m); ok {
		c.enqueue(key)
		return
	}
	if metav1.GetControllerOfNoCopy(m) == nil {
		if key, ok := c.labelKey(m); ok {
			logger.V(5).Info("Unowned dependent changed", "object", klog.KObj(m), "job", key)
			c.enqueue(key)
		}
	}
}
