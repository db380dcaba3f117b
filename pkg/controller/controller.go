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
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
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
// that are not finished (finishedjobs.go), cached without their
// managedFields (trimForCache).
func NewJobInformerFactory(client versioned.Interface, resync time.Duration) jobinformers.SharedInformerFactory {
	return jobinformers.NewSharedInformerFactoryWithOptions(client, resync,
		jobinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = unfinishedJobs }),
		jobinformers.WithTransform(trimForCache))
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
	c.logTails = newLogTailReads(opts.Clock, func(key jobKey) { c.queue.Add(key) })
	if c.recorder == nil {
		c.broadcaster = record.NewBroadcaster(record.WithContext(ctx))
		c.recorder = c.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: ControllerName})
	}

	if err := c.watchJobs(logger, jobClient, jobInformers); err != nil {
		return nil, err
	}
	if err := c.watchDependents(logger, kubeClient, kubeInformers); err != nil {
		return nil, err
	}
	if err := c.setUpGang(logger, opts); err != nil {
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
	go c.nodes.informer.RunWithContext(ctx)

	workers = max(workers, 1)
	logger.Info("Starting controller", "controller", ControllerName, "workers", workers,
		"urgentWorkers", urgentWorkers(workers))
	defer logger.Info("Controller stopped", "controller", ControllerName)

	go c.queueing.Run(ctx)
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced...) {
		c.queue.ShutDown()
		c.urgent.ShutDown()
		return
	}
	c.awaitQueueingDecision(ctx, logger)
	go c.queueExpiringJobsUntilDone(ctx)
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

// queueingDecisionTimeout bounds how long the workers wait at start-up for
// the first decision on Kueue. Past it they start anyway: queued jobs wait
// (fail closed) until Kueue's caches are filled.
const queueingDecisionTimeout = time.Minute

// awaitQueueingDecision waits for the first decision on Kueue, so that
// jobs are not marked as waiting for it during the second it takes.
func (c *Controller) awaitQueueingDecision(ctx context.Context, logger klog.Logger) {
	select {
	case <-c.queueing.Decided():
	case <-time.After(queueingDecisionTimeout):
		_, a := c.queueing.Current()
		logger.Info("Starting before Kueue's availability is decided; queued jobs wait", "reason", a.Reason, "why", a.Message)
	case <-ctx.Done():
	}
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
