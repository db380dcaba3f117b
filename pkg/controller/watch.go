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
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/tensorboard"
	"tensorstack.dev/training/pkg/generated/clientset/versioned"
	jobinformers "tensorstack.dev/training/pkg/generated/informers/externalversions"
)

// NewDynamicInformerFactory returns an informer factory for the dynamic
// client that, like NewKubeInformerFactory, only sees objects with the
// job-name label.
func NewDynamicInformerFactory(client dynamic.Interface, resync time.Duration) dynamicinformer.DynamicSharedInformerFactory {
	return dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, resync, metav1.NamespaceAll,
		func(o *metav1.ListOptions) { o.LabelSelector = v1beta1.LabelJobName })
}

// What the controller watches, and how a change finds the job it concerns.

// watchJobs watches the jobs of every kind: a change queues the job.
func (c *Controller) watchJobs(logger klog.Logger, jobClient versioned.Interface, jobInformers jobinformers.SharedInformerFactory) error {
	handlers, err := newKindHandlers(jobClient, jobInformers)
	if err != nil {
		return err
	}
	for _, h := range handlers {
		kind := h.Kind()
		c.kinds[kind] = h
		_, err := h.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) { c.enqueueJob(logger, kind, obj) },
			UpdateFunc: func(old, cur any) {
				if !onlyProgressChanged(old, cur) {
					c.enqueueJob(logger, kind, cur)
				}
			},
			DeleteFunc: func(obj any) { c.forgetJob(logger, kind, obj) },
		})
		if err != nil {
			return fmt.Errorf("watching %s: %w", kind, err)
		}
		c.synced = append(c.synced, h.informer.HasSynced)
	}

	return nil
}

// onlyProgressChanged says whether a job changed in status.progress alone.
// The controller does not act on progress, so a job reporting costs it no
// reconcile.
func onlyProgressChanged(old, cur any) bool {
	oldJob, ok := old.(v1beta1.TrainingJob)
	curJob, ok2 := cur.(v1beta1.TrainingJob)
	if !ok || !ok2 || apiequality.Semantic.DeepEqual(oldJob.JobStatus().Progress, curJob.JobStatus().Progress) {
		return false
	}
	without := func(job v1beta1.TrainingJob) v1beta1.TrainingJob {
		job = job.DeepCopyObject().(v1beta1.TrainingJob)
		job.JobStatus().Progress = nil
		job.SetResourceVersion("")
		job.SetManagedFields(nil)
		return job
	}
	return apiequality.Semantic.DeepEqual(without(oldJob), without(curJob))
}

// watchDependents watches what the jobs own (pods, Services, TensorBoard
// Deployments) and the kubelet's mount failures: a change queues the job it
// concerns. It also keeps the nodes' declared features, which a change
// does not queue anything for: they decide how pods are built.
func (c *Controller) watchDependents(logger klog.Logger, kubeClient kubernetes.Interface, kubeInformers informers.SharedInformerFactory) error {
	pods := kubeInformers.Core().V1().Pods()
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.addPod(logger, obj) },
		UpdateFunc: func(old, cur any) { c.updatePod(logger, old, cur) },
		DeleteFunc: func(obj any) { c.deletePod(logger, obj) },
	}); err != nil {
		return fmt.Errorf("watching pods: %w", err)
	}
	// Pods by the job their labels name, so that a reconcile looks at its
	// own pods only and not at every labelled pod of the namespace.
	if err := pods.Informer().AddIndexers(cache.Indexers{podJobIndex: podJobIndexFunc}); err != nil {
		return fmt.Errorf("indexing pods: %w", err)
	}
	c.podIndexer = pods.Informer().GetIndexer()

	services := kubeInformers.Core().V1().Services().Informer()
	if err := c.watchOwned(logger, "services", services); err != nil {
		return err
	}
	c.serviceIndexer = services.GetIndexer()
	deployments := kubeInformers.Apps().V1().Deployments().Informer()
	if err := c.watchOwned(logger, "deployments", deployments); err != nil {
		return err
	}
	c.deploymentIndexer = deployments.GetIndexer()
	c.tensorBoard = &tensorboard.Keeper{Client: kubeClient, Deployments: c.deploymentIndexer, Services: c.serviceIndexer}
	mounts, err := newMountFailures(kubeClient)
	if err != nil {
		return fmt.Errorf("watching mount failures: %w", err)
	}
	c.mountFailures = mounts
	if err := c.mountFailures.onChange(logger, c.enqueueStuckPod); err != nil {
		return fmt.Errorf("watching mount failures: %w", err)
	}
	nodes, err := newNodeFeatures(kubeClient)
	if err != nil {
		return fmt.Errorf("watching nodes: %w", err)
	}
	c.nodes = nodes
	c.synced = append(c.synced, pods.Informer().HasSynced, c.mountFailures.informer.HasSynced, c.nodes.informer.HasSynced)
	return nil
}

// watchOwned has a change to an object a job owns, or whose labels name a
// job, queue that job: the job's Services and TensorBoard, its gang's group
// objects, its Kueue Workload. The controller waits for the informer's sync.
func (c *Controller) watchOwned(logger klog.Logger, what string, inf cache.SharedIndexInformer) error {
	if err := c.enqueueOwnersOf(logger, what, inf); err != nil {
		return err
	}
	c.synced = append(c.synced, inf.HasSynced)
	return nil
}

// enqueueOwnersOf queues the owning job of every object the informer adds,
// changes or deletes.
func (c *Controller) enqueueOwnersOf(logger klog.Logger, what string, inf cache.SharedIndexInformer) error {
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueueOwner(logger, obj) },
		UpdateFunc: func(_, cur any) { c.enqueueOwner(logger, cur) },
		DeleteFunc: func(obj any) { c.enqueueOwner(logger, obj) },
	}); err != nil {
		return fmt.Errorf("watching %s: %w", what, err)
	}
	return nil
}

func (c *Controller) enqueue(key jobKey) { c.queue.Add(key) }

// enqueuePodChange queues a job after a change to one of its pods, once the
// batch period has passed. The delaying queue keeps a key once, at its
// earliest time, so the changes within a period make a single reconcile; a
// job already waiting to be reconciled is not delayed further.
//
// When the pod ended, the job goes to the urgent queue at once: the
// reconcile may write the job's outcome. The queue still gathers ends: a
// key is queued once however many times it is added before a worker takes
// it, and once more, not again and again, while a worker has it. So the
// pods of a large job ending together make about one reconcile per
// reconcile's duration, not one per pod.
//
// A pod that succeeded while others of its job still run waits for them up
// to the batch period (awaitsSiblings); the last of them to end queues the
// job at once. pod is the pod as it is now; nil for one that is gone.
func (c *Controller) enqueuePodChange(key jobKey, pod *corev1.Pod, ended bool) {
	if ended {
		if c.awaitsSiblings(key, pod) {
			c.urgent.AddAfter(key, c.podEventBatch)
			return
		}
		c.urgent.Add(key)
		return
	}
	if c.podEventBatch <= 0 {
		c.queue.Add(key)
		return
	}
	c.queue.AddAfter(key, c.podEventBatch)
}

// awaitsSiblings says whether the job of a pod that just succeeded should
// wait, up to the batch period, for its other pods that still run. The
// replicas of a job end together, a few hundred milliseconds apart: they
// were created in batches and started in turn. Reconciled at the first
// exit, a job that that exit decides (a TensorFlow chief) finishes with the
// others still running, and its clean-up policy deletes pods that were
// about to exit 0 by themselves: a delete, the node's teardown and an event
// each, and replicas recorded Deleted that succeeded. A pod that failed or
// is deleted does not wait: its siblings are not about to end with it.
func (c *Controller) awaitsSiblings(key jobKey, pod *corev1.Pod) bool {
	if c.podEventBatch <= 0 || pod == nil || pod.DeletionTimestamp != nil || podOutcome(pod) != corev1.PodSucceeded {
		return false
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return false
	}
	objs, err := c.podIndexer.ByIndex(podJobIndex, podJobIndexKey(key.Namespace, key.Kind, key.Name))
	if err != nil {
		return false
	}
	for _, obj := range objs {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.UID == pod.UID || p.DeletionTimestamp != nil || isTerminated(p) {
			continue
		}
		if sibling := metav1.GetControllerOfNoCopy(p); sibling != nil && sibling.UID == ref.UID {
			return true
		}
	}
	return false
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

// podJobIndexFunc is podJobIndex's function: a pod's job, from its labels.
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

// ownerKey resolves the controller reference of an object to a job: one
// the cache knows, with a matching UID, or one the cache does not hold,
// which may be finished (finishedjobs.go) and is looked up when reconciled.
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
	if err == nil && job.GetUID() != ref.UID {
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
		c.enqueuePodChange(key, pod, urgentPodChange(pod))
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
		c.enqueuePodChange(oldKey, curPod, urgentPodChange(curPod))
	}
	if curOwned {
		logger.V(5).Info("Pod updated", "pod", klog.KObj(curPod), "job", curKey)
		c.enqueuePodChange(curKey, curPod, urgentPodChange(curPod))
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
		c.enqueuePodChange(key, nil, true)
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
		c.enqueuePodChange(key, nil, false)
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
