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
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"tensorstack.dev/training/pkg/controller/gang"
	"tensorstack.dev/training/pkg/controller/kueue"
	"tensorstack.dev/training/pkg/controller/tensorboard"
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
	// Gang is the backend that gang-schedules the jobs asking for it
	// (spec.scheduler.t9kScheduler), built by gang.New; nil gang-schedules
	// nothing, and such jobs say so in their GangScheduled condition.
	Gang gang.Backend
	// Queueing decides, while the controller runs, whether jobs are queued
	// with Kueue (kueue.NewGate; kueue.UsableGate in tests). Nil is
	// --queueing=none: jobs that name a queue run unqueued, and their
	// Queued condition says so.
	Queueing *kueue.Gate
	// KueueManagement is Kueue's own setting for jobs that name no queue,
	// which the controller applies as Kueue's webhooks do for its kinds.
	KueueManagement kueue.Management
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
	tensorBoard       *tensorboard.Keeper
	// mountFailures explains pods stuck on a volume; the controller runs
	// its informer itself (Run).
	mountFailures *mountFailures
	// nodes says whether a pod could restart in place where it may run;
	// the controller runs its informer.
	nodes *nodeFeatures

	synced []cache.InformerSynced
	// gang keeps the group objects of jobs that ask for gang scheduling;
	// nil without a gang scheduler.
	gang gang.Backend

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
	// queueing says whether jobs are queued with Kueue now, and holds the
	// Queue when they are; kueueManagement is Kueue's setting for jobs
	// that name no queue.
	queueing        *kueue.Gate
	kueueManagement kueue.Management
	// statusWrites holds reconciles back until the cache has their job's
	// last status write.
	statusWrites *statusWrites
	// podEventBatch delays the reconcile a pod change asks for (see
	// Options.PodEventBatchPeriod).
	podEventBatch time.Duration
	// logTails reads replicas' log tails off the reconcile's path.
	logTails *logTailReads

	clusterDomain string
}
