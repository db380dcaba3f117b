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
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/owner"
	"tensorstack.dev/training/pkg/podbuilder"
)

// Gang scheduling: a job with spec.scheduler.t9kScheduler has its pods
// placed all or nothing, by one of two backends chosen when the controller
// starts (see doc.go for the decisions):
//
//   - workload (gang_workload.go): Kubernetes' Workload API
//     (scheduling.k8s.io/v1beta1, KEP-4671), a Workload and a PodGroup per
//     job, pods joining through spec.schedulingGroup; kube-scheduler's
//     GangScheduling plugin does the rest.
//   - coscheduling (gang_coscheduling.go): scheduler-plugins' PodGroup CRD
//     (scheduling.x-k8s.io/v1alpha1), pods joining through a label and
//     scheduled by the scheduler that runs the Coscheduling plugin.
//
// Either way the group is created, and seen in the controller's cache,
// before the pods that join it.

// GangScheduler names a gang scheduling backend, the value of the
// controller-manager's --gang-scheduler flag.
type GangScheduler string

const (
	// GangSchedulerAuto picks the Workload API when the cluster serves it,
	// else coscheduling when its PodGroups are served, else none.
	GangSchedulerAuto GangScheduler = "auto"
	// GangSchedulerWorkload uses the Workload API.
	GangSchedulerWorkload GangScheduler = "workload"
	// GangSchedulerCoscheduling uses scheduler-plugins' coscheduling.
	GangSchedulerCoscheduling GangScheduler = "coscheduling"
	// GangSchedulerNone gang-schedules nothing: jobs that ask for a gang
	// say so in their GangScheduled condition.
	GangSchedulerNone GangScheduler = "none"
)

// GangSchedulers are the accepted values of --gang-scheduler.
var GangSchedulers = []GangScheduler{GangSchedulerAuto, GangSchedulerWorkload, GangSchedulerCoscheduling, GangSchedulerNone}

// ParseGangScheduler checks a --gang-scheduler value.
func ParseGangScheduler(s string) (GangScheduler, error) {
	for _, g := range GangSchedulers {
		if string(g) == s {
			return g, nil
		}
	}
	names := make([]string, len(GangSchedulers))
	for i, g := range GangSchedulers {
		names[i] = string(g)
	}
	return "", fmt.Errorf("unknown gang scheduler %q, want one of %s", s, strings.Join(names, ", "))
}

// DefaultCoschedulingSchedulerName is the scheduler that runs the
// Coscheduling plugin in scheduler-plugins' own deployment.
const DefaultCoschedulingSchedulerName = "scheduler-plugins-scheduler"

// Metadata the controller puts on a job's group objects.
const (
	// AnnotationQueue records spec.scheduler.t9kScheduler.queue on the
	// group, for people reading it; Kueue admission (kueue.go) reads the
	// queue from the job. An annotation, because a queue name may be longer
	// than a label value.
	AnnotationQueue = v1beta1.GroupName + "/queue"
	// AnnotationPriority records spec.scheduler.t9kScheduler.priority, which
	// the PriorityClass buckets (PriorityClassName) round.
	AnnotationPriority = v1beta1.GroupName + "/priority"
)

// servedResource is an API resource as discovery lists it.
type servedResource struct {
	groupVersion, resource string
}

var (
	workloadAPI     = servedResource{schedulingv1beta1.SchemeGroupVersion.String(), "workloads"}
	coschedulingAPI = servedResource{coschedulingPodGroupGVR.GroupVersion().String(), coschedulingPodGroupGVR.Resource}
)

// ResolveGangScheduler decides, once at start-up, which backend the
// controller runs with. auto takes the Workload API when the cluster serves
// scheduling.k8s.io/v1beta1 workloads, else coscheduling when it serves
// scheduling.x-k8s.io/v1alpha1 podgroups, else none. A backend asked for by
// name must be served: its informers could never sync otherwise.
func ResolveGangScheduler(ctx context.Context, d discovery.ServerResourcesInterfaceWithContext,
	requested GangScheduler) (GangScheduler, error) {
	switch requested {
	case GangSchedulerNone:
		return GangSchedulerNone, nil
	case GangSchedulerWorkload, GangSchedulerCoscheduling:
		api := workloadAPI
		if requested == GangSchedulerCoscheduling {
			api = coschedulingAPI
		}
		ok, err := isServed(ctx, d, api)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", fmt.Errorf("--gang-scheduler=%s: the cluster does not serve %s %s", requested, api.groupVersion, api.resource)
		}
		return requested, nil
	case GangSchedulerAuto:
		for _, candidate := range []struct {
			backend GangScheduler
			api     servedResource
		}{{GangSchedulerWorkload, workloadAPI}, {GangSchedulerCoscheduling, coschedulingAPI}} {
			ok, err := isServed(ctx, d, candidate.api)
			if err != nil {
				return "", err
			}
			if ok {
				return candidate.backend, nil
			}
		}
		return GangSchedulerNone, nil
	default:
		return "", fmt.Errorf("unknown gang scheduler %q", requested)
	}
}

func isServed(ctx context.Context, d discovery.ServerResourcesInterfaceWithContext, api servedResource) (bool, error) {
	list, err := d.ServerResourcesForGroupVersionWithContext(ctx, api.groupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", api.groupVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Name == api.resource {
			return true, nil
		}
	}
	return false, nil
}

// gangBackend keeps a job's group objects in one scheduler's API.
type gangBackend interface {
	fmt.Stringer
	// informers are the caches of the group objects, filtered to those
	// with the job-name label.
	informers() []cache.SharedIndexInformer
	// ensure creates what is missing of the job's group and keeps its
	// minimum count. ready says whether the group is in the cache and not
	// being deleted, so that pods may join it.
	ensure(ctx context.Context, r *reconciler, want *gangGroup) (ready bool, err error)
	// remove deletes the job's group objects.
	remove(ctx context.Context, r *reconciler, why string) error
	// preparePod makes a pod join the group; one that is not a member (a
	// TensorFlow evaluator) is only scheduled by the same scheduler.
	preparePod(pod *corev1.Pod, group string, member bool)
}

// gangJoin makes pods join a job's group in a backend: what the pod builder
// asks of the gang.
type gangJoin struct {
	backend gangBackend
	group   string
}

func (j gangJoin) Join(pod *corev1.Pod, member bool) { j.backend.preparePod(pod, j.group, member) }

// gangGroup is the group a job's pods are placed as, worked out once per
// reconcile.
type gangGroup struct {
	// Name of the group objects and of the group the pods join: the job's.
	Name string
	// Size is the number of members: every replica, except TensorFlow
	// evaluators (Adapter.GangMember).
	Size int32
	// Floor is the fewest members the group trains with: Size, or an
	// elastic job's minReplicas; the Workload's template asks for it.
	Floor int32
	// MinCount is how many members must be placed together now: Floor, less
	// the members whose pod terminated for good (not being replaced). The
	// schedulers count only pods that have not terminated, so a
	// replacement in a job whose other members already finished would
	// otherwise never be admitted.
	MinCount int32
	Queue    string
	Priority int32
	// PriorityClass is PriorityClassName(Priority).
	PriorityClass string
}

// setUpGang builds the backend Options ask for and watches its objects.
func (c *Controller) setUpGang(logger klog.Logger, kubeInformers informers.SharedInformerFactory, opts Options) error {
	switch opts.GangScheduler {
	case "", GangSchedulerNone:
		return nil
	case GangSchedulerWorkload:
		c.gang = newWorkloadGang(c.kubeClient, kubeInformers)
	case GangSchedulerCoscheduling:
		if opts.DynamicClient == nil || opts.DynamicInformers == nil {
			return fmt.Errorf("the coscheduling gang scheduler needs Options.DynamicClient and Options.DynamicInformers")
		}
		name := opts.CoschedulingSchedulerName
		if name == "" {
			name = DefaultCoschedulingSchedulerName
		}
		c.gang = newCoschedulingGang(opts.DynamicClient, opts.DynamicInformers, name)
	default:
		return fmt.Errorf("gang scheduler %q: resolve it with ResolveGangScheduler first", opts.GangScheduler)
	}
	dependents := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueueOwner(logger, obj) },
		UpdateFunc: func(_, cur any) { c.enqueueOwner(logger, cur) },
		DeleteFunc: func(obj any) { c.enqueueOwner(logger, obj) },
	}
	for _, inf := range c.gang.informers() {
		if _, err := inf.AddEventHandler(dependents); err != nil {
			return fmt.Errorf("watching the %s objects: %w", c.gang, err)
		}
		c.synced = append(c.synced, inf.HasSynced)
	}
	return nil
}

// desiredGang works out the job's group from the planned replicas; nil when
// the job asks for no gang or has no members.
func (r *reconciler) desiredGang() *gangGroup {
	t9k := podbuilder.T9kScheduler(r.spec)
	if t9k == nil {
		return nil
	}
	g := &gangGroup{Name: r.job.GetName(), Queue: t9k.Queue, Priority: t9k.Priority, PriorityClass: podbuilder.PriorityClassName(t9k.Priority)}
	for _, group := range r.topo.Groups {
		if r.kind.GangMember(group.Type) {
			g.Size += group.Replicas
		}
	}
	if g.Size == 0 {
		return nil
	}
	g.Floor = g.Size
	if e := r.topo.Elastic; e != nil {
		// An elastic job trains with minReplicas; the rest join as room
		// appears, and torchrun's agents re-form the group with them.
		g.Floor = min(g.Size, e.Min)
	}
	g.MinCount = g.Floor
	for _, s := range r.slots {
		if r.kind.GangMember(s.id.Type) && s.pod != nil && !s.replacing && isTerminated(s.pod) {
			g.MinCount--
		}
	}
	g.MinCount = max(g.MinCount, 1)
	return g
}

// planGang reports, for a job that asks for a gang and is neither paused
// nor finished, whether its whole gang is placed: the GangScheduled
// condition. A job that no longer asks for a gang loses the condition.
func (r *reconciler) planGang() {
	if podbuilder.T9kScheduler(r.spec) == nil {
		meta.RemoveStatusCondition(&r.status.Conditions, v1beta1.ConditionGangScheduled)
		return
	}
	if r.status.Phase.IsFinished() || pauseEnabled(r.spec) {
		return
	}
	if r.c.gang == nil {
		r.setCondition(v1beta1.ConditionGangScheduled, metav1.ConditionFalse, ReasonNoGangScheduler,
			"the controller runs without a gang scheduler (--gang-scheduler=none, or auto found neither the "+
				"Workload API nor coscheduling PodGroups): the pods are scheduled one by one")
		return
	}
	r.gang = r.desiredGang()
	if r.gang == nil {
		return
	}
	var members, placed int32
	said := ""
	for _, s := range r.slots {
		if !r.kind.GangMember(s.id.Type) {
			continue
		}
		members++
		if s.pod != nil && !s.replacing && s.pod.DeletionTimestamp == nil && isPlaced(s.pod) {
			placed++
			continue
		}
		if said == "" && s.pod != nil {
			said = schedulerMessage(s.pod)
		}
	}
	if placed == members {
		r.setCondition(v1beta1.ConditionGangScheduled, metav1.ConditionTrue, ReasonGangPlaced,
			fmt.Sprintf("all %d pods of the gang are placed (%s)", members, r.c.gang))
		return
	}
	message := fmt.Sprintf("waiting for room for the whole gang: %d of %d pods placed (%s)", placed, members, r.c.gang)
	if said != "" {
		message += "; the scheduler says: " + said
	}
	r.setCondition(v1beta1.ConditionGangScheduled, metav1.ConditionFalse, v1beta1.ReasonWaitingForGang, message)
}

// isPlaced says whether the scheduler has given a pod a node (a terminated
// pod had one).
func isPlaced(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" || p.Status.Phase == corev1.PodRunning || isTerminated(p)
}

// schedulerMessage is why the scheduler left a pod unplaced: the message of
// its PodScheduled=False condition, or "".
func schedulerMessage(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return c.Message
		}
	}
	return ""
}

// syncGang keeps the group objects before the pods are acted on: for an
// active job that asks for a gang, the group exists first; a finished job's
// group goes with its pods under clean-up policies All and Unfinished and
// stays under None; a paused job keeps its group for the resume; a job that
// no longer asks for a gang loses it. It returns whether pods may be
// created now.
func (r *reconciler) syncGang(ctx context.Context) (bool, error) {
	backend := r.c.gang
	if backend == nil {
		return true, nil
	}
	if r.status.Phase.IsFinished() {
		if policy := cleanUpPolicy(r.spec); policy != v1beta1.CleanUpPolicyNone {
			return false, backend.remove(ctx, r, fmt.Sprintf("the job finished (clean-up policy %s)", policy))
		}
		return false, nil
	}
	if podbuilder.T9kScheduler(r.spec) == nil {
		return true, backend.remove(ctx, r, "the job no longer asks for gang scheduling")
	}
	if r.gang == nil {
		return true, nil
	}
	return backend.ensure(ctx, r, r.gang)
}

// gangObjectMeta is the metadata of a group object of the job.
func (r *reconciler) gangObjectMeta(want *gangGroup) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      want.Name,
		Namespace: r.job.GetNamespace(),
		Labels:    r.asOwner().Labels(),
		Annotations: map[string]string{
			AnnotationQueue:    want.Queue,
			AnnotationPriority: strconv.Itoa(int(want.Priority)),
		},
		OwnerReferences: []metav1.OwnerReference{r.asOwner().ControllerRef()},
	}
}

// createdGangObject reports the create of a group object. AlreadyExists is
// an error to retry: the cache, behind or not, decides on the next
// reconcile whether the object is the job's.
func (r *reconciler) createdGangObject(kind, name string, want *gangGroup, err error) error {
	switch {
	case err == nil:
		r.logger.V(2).Info("Created gang object", "kind", kind, "name", name, "minCount", want.MinCount)
		r.c.recorder.Eventf(r.job, corev1.EventTypeNormal, owner.ReasonSuccessfulCreate,
			"Created %s %s: the gang of %d pods is placed all or nothing", kind, name, want.Size)
		return nil
	case apierrors.IsAlreadyExists(err):
		return fmt.Errorf("%s %s exists but is not in the cache yet: %w", kind, name, err)
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil
	default:
		r.c.recorder.Eventf(r.job, corev1.EventTypeWarning, owner.ReasonFailedCreate, "Error creating %s %s: %v", kind, name, err)
		return fmt.Errorf("creating %s %s: %w", kind, name, err)
	}
}

// checkGangObject refuses a group object of the job's name that the job
// does not control: its pods would join someone else's group.
func (r *reconciler) checkGangObject(kind string, obj metav1.Object) error {
	if r.asOwner().Controls(obj) {
		return nil
	}
	r.c.recorder.Eventf(r.job, corev1.EventTypeWarning, owner.ReasonNameConflict,
		"%s %s exists and is not controlled by the job; its pods are not created while it is there", kind, obj.GetName())
	return fmt.Errorf("%s %s exists and is not controlled by the job", kind, obj.GetName())
}

// resizedGangObject reports a changed minimum count.
func (r *reconciler) resizedGangObject(kind, name string, from, to int32, err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("setting the minimum count of %s %s to %d: %w", kind, name, to, err)
	}
	r.c.recorder.Eventf(r.job, corev1.EventTypeNormal, owner.ReasonSuccessfulUpdate,
		"Updated %s %s: the gang needs %d pods placed together, was %d", kind, name, to, from)
	return nil
}
