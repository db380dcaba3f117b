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

// Package kueue queues training jobs with Kueue. It follows the contract of Kueue's jobframework, which
// its own integrations and external frameworks (such as AppWrapper) use,
// implemented here rather than imported: Kueue's module would pin other
// versions of k8s.io/* and controller-runtime. Kueue's objects are served
// as unstructured through the dynamic client, as the coscheduling PodGroups
// are.
//
// A job is queued when it names a queue: spec.scheduler.t9kScheduler.queue,
// or the label kueue.x-k8s.io/queue-name (the label wins, as Kueue's users
// write it). The controller then
//   - creates a Workload owned by the job, one pod set per replica type
//     (its count and pod template), with the queue name and the priority:
//     the WorkloadPriorityClass the label kueue.x-k8s.io/priority-class
//     names (its value, with priorityClassSource
//     kueue.x-k8s.io/workloadpriorityclass), else t9kScheduler.priority
//     (0-100) as the Workload's priority;
//   - creates no pod until Kueue admits the Workload; then it creates them
//     with the node labels and tolerations of the ResourceFlavors the
//     admission assigned to each pod set, and the labels, annotations, node
//     selector and tolerations of admission checks' pod set updates;
//   - on eviction (preemption, reclaimed quota, an inactive Workload, a
//     pods-ready timeout) deletes every pod and keeps the job, Paused with
//     the eviction's reason in its Queued condition; once the pods are gone
//     it gives the quota back (clears the admission, QuotaReserved False,
//     Requeued as jobframework sets it), and the job resumes, as after a
//     pause, when Kueue admits it again. Pods deleted for an eviction are
//     not failures and use no restart;
//   - keeps the Workload's spec.active equal to "not paused": pausing a
//     job releases its quota (Kueue evicts an inactive Workload) and
//     resuming queues it again;
//   - marks the Workload Finished as soon as the job is, so the quota is
//     free before any TTL or clean-up;
//   - resizes the Workload's pod sets while it holds no quota (a job is
//     resized only while paused).
//
// Of jobframework's features, these are not supported: partial admission
// (minCount; a training job needs all its replicas), waitForPodsReady (the
// PodsReady condition is not reported), reclaimable pods (pods of finished
// replicas keep their quota until the job ends), workload slices (elastic
// jobs), topology-aware scheduling, MultiKueue. The Workload carries no
// finalizer: the garbage collector deletes it with its job, and Kueue frees
// the quota of a deleted Workload.
package kueue

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/tools/cache"

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

var (
	WorkloadGVR      = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta1", Resource: "workloads"}
	FlavorGVR        = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta1", Resource: "resourceflavors"}
	PriorityClassGVR = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta1", Resource: "workloadpriorityclasses"}
	workloadAPI      = served.Resource{GroupVersion: "kueue.x-k8s.io/v1beta1", Resource: "workloads"}
)

// Kueue's labels, names and conditions that the controller reads or writes.
const (
	LabelQueueName     = "kueue.x-k8s.io/queue-name"
	LabelPriorityClass = "kueue.x-k8s.io/priority-class"
	workloadKind       = "Workload"
	// PriorityClassSource says that a Workload's priority comes from a
	// WorkloadPriorityClass.
	PriorityClassSource = "kueue.x-k8s.io/workloadpriorityclass"
	// MaxPodSets is the most pod sets a Workload may have.
	MaxPodSets = 8
	// Conditions of a Workload.
	ConditionQuotaReserved = "QuotaReserved"
	ConditionAdmitted      = "Admitted"
	ConditionEvicted       = "Evicted"
	ConditionRequeued      = "Requeued"
	ConditionFinished      = "Finished"
	// Eviction reasons after which jobframework marks a Workload Requeued.
	EvictedByPreemption   = "Preempted"
	EvictedByNodeFailures = "NodeFailures"
)

// ResolveQueueing turns QueueingAuto into Kueue or none, from what the
// cluster serves and what the controller may do there, and checks both for
// an explicit Kueue. Without the Workload permissions (the RBAC component
// artifacts/deploy/components/kueue), auto runs the jobs unqueued rather
// than waiting for caches it may not fill; the reason is returned.
func ResolveQueueing(ctx context.Context, d discovery.ServerResourcesInterfaceWithContext,
	reviews authorizationv1client.SelfSubjectAccessReviewInterface, requested Queueing) (Queueing, string, error) {
	switch requested {
	case QueueingNone:
		return QueueingNone, "", nil
	case QueueingKueue, QueueingAuto:
	default:
		return "", "", fmt.Errorf("unknown queueing %q", requested)
	}
	ok, err := served.Is(ctx, d, workloadAPI)
	if err != nil {
		return "", "", err
	}
	if !ok {
		why := fmt.Sprintf("the cluster does not serve %s %s", workloadAPI.GroupVersion, workloadAPI.Resource)
		if requested == QueueingKueue {
			return "", "", fmt.Errorf("--queueing=kueue: %s", why)
		}
		return QueueingNone, why, nil
	}
	for _, verb := range []string{"list", "watch", "create", "patch"} {
		review, err := reviews.Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: WorkloadGVR.Group, Resource: WorkloadGVR.Resource},
		}}, metav1.CreateOptions{})
		if err != nil {
			return "", "", fmt.Errorf("checking access to Kueue Workloads: %w", err)
		}
		if !review.Status.Allowed {
			why := fmt.Sprintf("Kueue is served, but this controller may not %s %s.%s in every namespace", verb,
				WorkloadGVR.Resource, WorkloadGVR.Group)
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
	workloads       dynamic.NamespaceableResourceInterface
	flavors         dynamic.NamespaceableResourceInterface
	priorityClasses dynamic.NamespaceableResourceInterface
	// informer sees the Workloads with the job-name label, i.e. ours.
	informer cache.SharedIndexInformer
}

// New builds the Queue on the dynamic client and an informer factory that
// sees only objects with the job-name label (the factory is started by the
// caller).
func New(client dynamic.Interface, factory dynamicinformer.DynamicSharedInformerFactory) *Queue {
	return &Queue{
		workloads:       client.Resource(WorkloadGVR),
		flavors:         client.Resource(FlavorGVR),
		priorityClasses: client.Resource(PriorityClassGVR),
		informer:        factory.ForResource(WorkloadGVR).Informer(),
	}
}

// Informer is the cache of the jobs' Workloads.
func (q *Queue) Informer() cache.SharedIndexInformer { return q.informer }

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
