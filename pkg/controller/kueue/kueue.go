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

// Package kueue queues training jobs with Kueue. It follows the contract of
// Kueue's jobframework, which its own integrations and external frameworks
// (such as AppWrapper) use, implemented here on Kueue's typed
// kueue.x-k8s.io/v1beta2 API and clientset (sigs.k8s.io/kueue/apis,
// sigs.k8s.io/kueue/client-go). v1beta2 is the version Kueue stores from
// v0.16 and the only one it serves from v0.20; the controller never asks
// for v1beta1.
//
// A job is queued when it names a queue: spec.scheduler.t9kScheduler.queue,
// or the label kueue.x-k8s.io/queue-name (the label wins, as Kueue's users
// write it); when Kueue's own settings for jobs that name none put it in
// its namespace's default LocalQueue or make it wait for a name
// (management.go); and, once queued, for good. Queueing fails closed: the
// Gate (gate.go) decides again and again whether Kueue can be used, and a
// queued job does not run while it cannot. The controller then
//   - creates a Workload owned by the job, one pod set per replica type
//     (its count and pod template), with the queue name and the priority:
//     the WorkloadPriorityClass the label kueue.x-k8s.io/priority-class
//     names (its value, and a priorityClassRef to it), else
//     t9kScheduler.priority (0-100) as the Workload's priority;
//   - creates no pod until Kueue admits the Workload; then it creates them
//     with the node labels and tolerations of the ResourceFlavors the
//     admission assigned to each pod set, and the labels, annotations, node
//     selector and tolerations of admission checks' pod set updates;
//   - asks for topology-aware placement (Kueue's TAS) where the job does
//     (batch.TopologyOf; topology.go), and holds TAS-admitted pods at
//     Kueue's topology gate until Kueue gives each its domain;
//   - reports the Workload's PodsReady condition, which Kueue's
//     waitForPodsReady (on by default from v0.19) waits for: see
//     PodsReadyCondition;
//   - on eviction (preemption, reclaimed quota, an inactive Workload, a
//     PodsReady timeout) deletes every pod and keeps the job, Paused with
//     the eviction's reason in its Queued condition; once the pods are gone
//     it gives the quota back (clears the admission, QuotaReserved False,
//     Requeued as jobframework sets it, PodsReady back to WaitForStart),
//     and the job resumes, as after a pause, when Kueue admits it again.
//     Pods deleted for an eviction are not failures and use no restart;
//   - keeps the Workload's spec.active equal to "not paused": pausing a
//     job releases its quota (Kueue evicts an inactive Workload) and
//     resuming queues it again;
//   - marks the Workload Finished as soon as the job is, so the quota is
//     free before any TTL or clean-up;
//   - resizes the Workload's pod sets while it holds no quota (a job is
//     resized only while paused).
//
// Of jobframework's features, these are not supported: partial admission
// beyond an elastic job's minCount (a training job needs all its
// replicas), reclaimable pods (pods of finished replicas keep their quota
// until the job ends), workload slices. MultiKueue is (multikueue.go).
// The Workload carries no finalizer: the garbage collector deletes it with
// its job, and Kueue frees the quota of a deleted Workload.
package kueue

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"
	kueueinformers "sigs.k8s.io/kueue/client-go/informers/externalversions"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// Queueing chooses the queueing system that admits jobs.
type Queueing string

const (
	// QueueingAuto queues the jobs that name a queue with Kueue, deciding
	// again while the controller runs whether Kueue can be used; while it
	// cannot, such jobs wait.
	QueueingAuto Queueing = "auto"
	// QueueingKueue is QueueingAuto, by the name earlier releases gave the
	// setting that required Kueue.
	QueueingKueue Queueing = "kueue"
	// QueueingNone runs every job at once; queue names are not acted on.
	QueueingNone Queueing = "none"
)

// ParseQueueing reads the --queueing flag.
func ParseQueueing(s string) (Queueing, error) {
	switch q := Queueing(s); q {
	case QueueingAuto, QueueingKueue, QueueingNone:
		return q, nil
	}
	return "", fmt.Errorf("unknown queueing %q: want auto, kueue or none", s)
}

// Kueue's labels and limits that the controller reads or writes.
const (
	LabelQueueName     = batch.QueueLabel
	LabelPriorityClass = "kueue.x-k8s.io/priority-class"
	// MaxPodSets is the most pod sets a Workload may have.
	MaxPodSets = 8
)

// Queue talks to Kueue: its Workloads, LocalQueues, ResourceFlavors and
// WorkloadPriorityClasses.
type Queue struct {
	client kueueclient.Interface
	// workloadInformers see only objects with the job-name label, i.e.
	// ours; queueInformers see every LocalQueue.
	workloadInformers kueueinformers.SharedInformerFactory
	queueInformers    kueueinformers.SharedInformerFactory
	workloads         cache.SharedIndexInformer
	localQueues       cache.SharedIndexInformer
}

// New builds the Queue on Kueue's clientset; its informers see only the
// Workloads with the job-name label, and every LocalQueue, and run from
// Start.
func New(client kueueclient.Interface, resync time.Duration) *Queue {
	workloads := kueueinformers.NewSharedInformerFactoryWithOptions(client, resync,
		kueueinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = v1beta1.LabelJobName }))
	queues := kueueinformers.NewSharedInformerFactory(client, resync)
	return &Queue{
		client:            client,
		workloadInformers: workloads,
		queueInformers:    queues,
		workloads:         workloads.Kueue().V1beta2().Workloads().Informer(),
		localQueues:       queues.Kueue().V1beta2().LocalQueues().Informer(),
	}
}

// Informer is the cache of the jobs' Workloads.
func (q *Queue) Informer() cache.SharedIndexInformer { return q.workloads }

// LocalQueues is the cache of every LocalQueue.
func (q *Queue) LocalQueues() cache.SharedIndexInformer { return q.localQueues }

// Start runs the informers until stop is closed.
func (q *Queue) Start(stop <-chan struct{}) {
	q.workloadInformers.Start(stop)
	q.queueInformers.Start(stop)
}

// HasSynced says whether the caches are filled.
func (q *Queue) HasSynced() bool { return q.workloads.HasSynced() && q.localQueues.HasSynced() }

// Shutdown waits for the informers to stop.
func (q *Queue) Shutdown() {
	q.workloadInformers.Shutdown()
	q.queueInformers.Shutdown()
}

// DefaultLocalQueue is the name of the LocalQueue that Kueue puts a job in
// when it names none (Kueue's LocalQueueDefaulting, always on from v0.13).
const DefaultLocalQueue = "default"

// HasDefaultLocalQueue says whether the namespace has a LocalQueue named
// DefaultLocalQueue.
func (q *Queue) HasDefaultLocalQueue(ctx context.Context, namespace string) (bool, error) {
	if _, exists, err := q.localQueues.GetIndexer().GetByKey(namespace + "/" + DefaultLocalQueue); err == nil && exists {
		return true, nil
	}
	// Not in the cache: it may have been made a moment ago. The API says;
	// a list by name, which the controller may do (requiredAccess), where
	// a get would need one more right.
	list, err := q.client.KueueV1beta2().LocalQueues(namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", DefaultLocalQueue).String(),
	})
	if err != nil {
		return false, fmt.Errorf("looking for LocalQueue %s/%s: %w", namespace, DefaultLocalQueue, err)
	}
	for i := range list.Items {
		if list.Items[i].Name == DefaultLocalQueue {
			return true, nil
		}
	}
	return false, nil
}

// QueueName is the Kueue queue the job names, or "".
func QueueName(job v1beta1.TrainingJob) string {
	queue := ""
	if t9k := podbuilder.T9kScheduler(job.CommonSpec()); t9k != nil {
		queue = t9k.Queue
	}
	return batch.QueueName(job.GetLabels(), queue)
}

// WorkloadName is the name of a job's Workload: one per job, the kind's
// short name first so that jobs of different kinds may share a name.
func WorkloadName(kind, job string) string {
	info, _ := batch.KindNamed(kind)
	return info.ShortName + "-" + job
}
