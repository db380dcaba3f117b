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
// write it). The controller then
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

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/tools/cache"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"
	kueueinformers "sigs.k8s.io/kueue/client-go/informers/externalversions"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/served"
	"tensorstack.dev/training/pkg/podbuilder"
)

// Queueing chooses the queueing system that admits jobs.
type Queueing string

const (
	// QueueingAuto uses Kueue when the cluster serves its Workloads.
	QueueingAuto Queueing = "auto"
	// QueueingKueue queues the jobs that name a queue with Kueue.
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

// workloadAPI is the API the controller needs Kueue to serve.
var workloadAPI = served.Resource{GroupVersion: kueuev1beta2.SchemeGroupVersion.String(), Resource: "workloads"}

// Kueue's labels and limits that the controller reads or writes.
const (
	LabelQueueName     = "kueue.x-k8s.io/queue-name"
	LabelPriorityClass = "kueue.x-k8s.io/priority-class"
	// MaxPodSets is the most pod sets a Workload may have.
	MaxPodSets = 8
)

// ResolveQueueing turns QueueingAuto into Kueue or none, from what the
// cluster serves and what the controller may do there, and checks both for
// an explicit Kueue. Without the Workload permissions (the RBAC component
// artifacts/deploy/components/kueue), auto runs the jobs unqueued rather
// than waiting for caches it may not fill. The reason is returned: jobs
// that name a queue carry it in their Queued condition.
func ResolveQueueing(ctx context.Context, d discovery.ServerResourcesInterfaceWithContext,
	reviews authorizationv1client.SelfSubjectAccessReviewInterface, requested Queueing) (Queueing, string, error) {
	switch requested {
	case QueueingNone:
		return QueueingNone, "the controller runs with --queueing=none", nil
	case QueueingKueue, QueueingAuto:
	default:
		return "", "", fmt.Errorf("unknown queueing %q", requested)
	}
	ok, err := served.Is(ctx, d, workloadAPI)
	if err != nil {
		return "", "", err
	}
	if !ok {
		why := fmt.Sprintf("the cluster does not serve %s %s (Kueue v0.16 or newer)", workloadAPI.GroupVersion, workloadAPI.Resource)
		if requested == QueueingKueue {
			return "", "", fmt.Errorf("--queueing=kueue: %s", why)
		}
		return QueueingNone, why, nil
	}
	group := kueuev1beta2.SchemeGroupVersion.Group
	for _, access := range []struct{ verb, subresource string }{
		{"list", ""}, {"watch", ""}, {"create", ""}, {"patch", ""}, {"update", "status"},
	} {
		review, err := reviews.Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: access.verb, Group: group,
				Resource: workloadAPI.Resource, Subresource: access.subresource},
		}}, metav1.CreateOptions{})
		if err != nil {
			return "", "", fmt.Errorf("checking access to Kueue Workloads: %w", err)
		}
		if !review.Status.Allowed {
			resource := workloadAPI.Resource
			if access.subresource != "" {
				resource += "/" + access.subresource
			}
			why := fmt.Sprintf("Kueue is served, but this controller may not %s %s.%s in every namespace", access.verb, resource, group)
			if requested == QueueingKueue {
				return "", "", fmt.Errorf("--queueing=kueue: %s", why)
			}
			return QueueingNone, why, nil
		}
	}
	return QueueingKueue, "", nil
}

// Queue talks to Kueue: its Workloads, ResourceFlavors and
// WorkloadPriorityClasses.
type Queue struct {
	client kueueclient.Interface
	// informers see only objects with the job-name label, i.e. ours.
	informers kueueinformers.SharedInformerFactory
	workloads cache.SharedIndexInformer
}

// New builds the Queue on Kueue's clientset; its informers see only the
// Workloads with the job-name label and run from Start.
func New(client kueueclient.Interface, resync time.Duration) *Queue {
	factory := kueueinformers.NewSharedInformerFactoryWithOptions(client, resync,
		kueueinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = v1beta1.LabelJobName }))
	return &Queue{
		client:    client,
		informers: factory,
		workloads: factory.Kueue().V1beta2().Workloads().Informer(),
	}
}

// Informer is the cache of the jobs' Workloads.
func (q *Queue) Informer() cache.SharedIndexInformer { return q.workloads }

// Start runs the informers until stop is closed.
func (q *Queue) Start(stop <-chan struct{}) { q.informers.Start(stop) }

// Shutdown waits for the informers to stop.
func (q *Queue) Shutdown() { q.informers.Shutdown() }

// QueueName is the Kueue queue the job names, or "".
func QueueName(job v1beta1.TrainingJob) string {
	if q := job.GetLabels()[LabelQueueName]; q != "" {
		return q
	}
	if t9k := podbuilder.T9kScheduler(job.CommonSpec()); t9k != nil {
		return t9k.Queue
	}
	return ""
}

// WorkloadName is the name of a job's Workload: one per job, the kind's
// short name first so that jobs of both kinds may share a name.
func WorkloadName(kind, job string) string {
	if kind == podbuilder.PyTorchKind {
		return "pj-" + job
	}
	return "tj-" + job
}
