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
	"math"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/owner"
	"tensorstack.dev/training/pkg/controller/served"
	"tensorstack.dev/training/pkg/podbuilder"
)

// Queueing with Kueue follows the contract of Kueue's jobframework, which
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
	kueueWorkloadGVR      = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta1", Resource: "workloads"}
	kueueFlavorGVR        = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta1", Resource: "resourceflavors"}
	kueuePriorityClassGVR = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta1", Resource: "workloadpriorityclasses"}
	kueueWorkloadAPI      = served.Resource{GroupVersion: "kueue.x-k8s.io/v1beta1", Resource: "workloads"}
)

// Kueue's labels and names that the controller reads or writes.
const (
	LabelKueueQueueName     = "kueue.x-k8s.io/queue-name"
	LabelKueuePriorityClass = "kueue.x-k8s.io/priority-class"
	kueueWorkloadKind       = "Workload"
	// kueuePriorityClassSource says that a Workload's priority comes from a
	// WorkloadPriorityClass.
	kueuePriorityClassSource = "kueue.x-k8s.io/workloadpriorityclass"
	// kueueMaxPodSets is the most pod sets a Workload may have.
	kueueMaxPodSets = 8
	// Conditions of a Workload.
	kueueQuotaReserved = "QuotaReserved"
	kueueAdmitted      = "Admitted"
	kueueEvicted       = "Evicted"
	kueueRequeued      = "Requeued"
	kueueFinished      = "Finished"
	// Eviction reasons after which jobframework marks a Workload Requeued.
	kueueEvictedByPreemption   = "Preempted"
	kueueEvictedByNodeFailures = "NodeFailures"
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
	ok, err := served.Is(ctx, d, kueueWorkloadAPI)
	if err != nil {
		return "", "", err
	}
	if !ok {
		why := fmt.Sprintf("the cluster does not serve %s %s", kueueWorkloadAPI.GroupVersion, kueueWorkloadAPI.Resource)
		if requested == QueueingKueue {
			return "", "", fmt.Errorf("--queueing=kueue: %s", why)
		}
		return QueueingNone, why, nil
	}
	for _, verb := range []string{"list", "watch", "create", "patch"} {
		review, err := reviews.Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: kueueWorkloadGVR.Group, Resource: kueueWorkloadGVR.Resource},
		}}, metav1.CreateOptions{})
		if err != nil {
			return "", "", fmt.Errorf("checking access to Kueue Workloads: %w", err)
		}
		if !review.Status.Allowed {
			why := fmt.Sprintf("Kueue is served, but this controller may not %s %s.%s in every namespace", verb,
				kueueWorkloadGVR.Resource, kueueWorkloadGVR.Group)
			if requested == QueueingKueue {
				return "", "", fmt.Errorf("--queueing=kueue: %s", why)
			}
			return QueueingNone, why, nil
		}
	}
	return QueueingKueue, "", nil
}

// kueueQueue talks to Kueue.
type kueueQueue struct {
	workloads       dynamic.NamespaceableResourceInterface
	flavors         dynamic.NamespaceableResourceInterface
	priorityClasses dynamic.NamespaceableResourceInterface
	// informer sees the Workloads with the job-name label, i.e. ours.
	informer cache.SharedIndexInformer
}

func newKueueQueue(client dynamic.Interface, factory dynamicinformer.DynamicSharedInformerFactory) *kueueQueue {
	return &kueueQueue{
		workloads:       client.Resource(kueueWorkloadGVR),
		flavors:         client.Resource(kueueFlavorGVR),
		priorityClasses: client.Resource(kueuePriorityClassGVR),
		informer:        factory.ForResource(kueueWorkloadGVR).Informer(),
	}
}

// setUpQueueing watches the Workloads when jobs are queued with Kueue.
func (c *Controller) setUpQueueing(logger klog.Logger, opts Options) error {
	switch opts.Queueing {
	case "", QueueingNone:
		return nil
	case QueueingKueue:
	default:
		return fmt.Errorf("queueing %q: resolve it with ResolveQueueing first", opts.Queueing)
	}
	if opts.DynamicClient == nil || opts.DynamicInformers == nil {
		return fmt.Errorf("queueing with Kueue needs Options.DynamicClient and Options.DynamicInformers")
	}
	c.kueue = newKueueQueue(opts.DynamicClient, opts.DynamicInformers)
	if _, err := c.kueue.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueueOwner(logger, obj) },
		UpdateFunc: func(_, cur any) { c.enqueueOwner(logger, cur) },
		DeleteFunc: func(obj any) { c.enqueueOwner(logger, obj) },
	}); err != nil {
		return fmt.Errorf("watching Kueue Workloads: %w", err)
	}
	c.synced = append(c.synced, c.kueue.informer.HasSynced)
	return nil
}

// queueName is the Kueue queue the job names, or "".
func queueName(job v1beta1.TrainingJob) string {
	if q := job.GetLabels()[LabelKueueQueueName]; q != "" {
		return q
	}
	if t9k := podbuilder.T9kScheduler(job.CommonSpec()); t9k != nil {
		return t9k.Queue
	}
	return ""
}

// workloadName is the name of a job's Workload: one per job, the kind's
// short name first so that jobs of both kinds may share a name.
func workloadName(kind, job string) string {
	if kind == podbuilder.PyTorchKind {
		return "pj-" + job
	}
	return "tj-" + job
}

// queueState is what the Workload says about a queued job.
type queueState struct {
	workload *unstructured.Unstructured // nil until it exists
	// admitted: the job may run.
	admitted bool
	// evicted is the Evicted condition when True.
	evicted *metav1.Condition
	// waiting is the QuotaReserved condition while it is not True.
	waiting *metav1.Condition
	// admittedCounts are the pods per pod set the admission allows, from
	// status.admission.podSetAssignments; below the pod set's count when
	// Kueue admitted an elastic job partially.
	admittedCounts map[v1beta1.ReplicaType]int32
}

// readQueue reads the job's Workload from the cache.
func (r *reconciler) readQueue() (*queueState, error) {
	wl, err := owner.Cached[*unstructured.Unstructured](r.c.kueue.informer.GetIndexer(), r.key.Namespace,
		workloadName(r.key.Kind, r.key.Name))
	if err != nil {
		return nil, fmt.Errorf("getting the job's Workload: %w", err)
	}
	q := &queueState{}
	if wl == nil || !metav1.IsControlledBy(wl, r.job) {
		return q, nil
	}
	q.workload = wl
	conds := workloadConditions(wl)
	if c := meta.FindStatusCondition(conds, kueueEvicted); c != nil && c.Status == metav1.ConditionTrue {
		q.evicted = c
	}
	if c := meta.FindStatusCondition(conds, kueueQuotaReserved); c == nil || c.Status != metav1.ConditionTrue {
		q.waiting = c
		if q.waiting == nil {
			q.waiting = &metav1.Condition{Type: kueueQuotaReserved, Reason: "Pending", Message: "waiting for Kueue"}
		}
	}
	q.admitted = meta.IsStatusConditionTrue(conds, kueueAdmitted) && q.evicted == nil && workloadActive(wl) &&
		workloadAdmission(wl) != nil
	if q.admitted {
		q.admittedCounts = admittedCounts(wl)
	}
	return q, nil
}

// workloadConditions reads status.conditions of a Workload.
func workloadConditions(wl *unstructured.Unstructured) []metav1.Condition {
	raw, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
	out := make([]metav1.Condition, 0, len(raw))
	for _, item := range raw {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		var c metav1.Condition
		if err := runtimeConverter.FromUnstructured(m, &c); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// workloadActive reads spec.active; unset means active.
func workloadActive(wl *unstructured.Unstructured) bool {
	active, found, err := unstructured.NestedBool(wl.Object, "spec", "active")
	return !found || err != nil || active
}

// admittedCounts reads the count of every pod set assignment that has one.
func admittedCounts(wl *unstructured.Unstructured) map[v1beta1.ReplicaType]int32 {
	out := map[v1beta1.ReplicaType]int32{}
	assignments, _, _ := unstructured.NestedSlice(wl.Object, "status", "admission", "podSetAssignments")
	for _, item := range assignments {
		a, ok := item.(map[string]any)
		if !ok {
			continue
		}
		name, _, _ := unstructured.NestedString(a, "name")
		if count, found, err := unstructured.NestedInt64(a, "count"); found && err == nil {
			out[v1beta1.ReplicaType(name)] = int32(min(max(count, 0), math.MaxInt32))
		}
	}
	return out
}

// workloadAdmission reads status.admission, or nil.
func workloadAdmission(wl *unstructured.Unstructured) map[string]any {
	a, found, err := unstructured.NestedMap(wl.Object, "status", "admission")
	if !found || err != nil {
		return nil
	}
	return a
}
