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

// Package gang places a training job's pods all or nothing, through one of
// the gang schedulers a cluster may run. Each Backend keeps a job's group
// objects in its scheduler's API and makes pods join them; the controller
// decides what the group is (Group) and when it is needed.
package gang

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/owner"
	"tensorstack.dev/training/pkg/controller/served"
)

// Gang scheduling: a job with spec.scheduler.t9kScheduler has its pods
// placed all or nothing, by one of two backends chosen when the controller
// starts (see the controller's doc.go for the decisions):
//
//   - workload (workload.go): Kubernetes' Workload API
//     (scheduling.k8s.io/v1beta1, KEP-4671), a Workload and a PodGroup per
//     job, pods joining through spec.schedulingGroup; kube-scheduler's
//     GangScheduling plugin does the rest.
//   - coscheduling (coscheduling.go): scheduler-plugins' PodGroup CRD
//     (scheduling.x-k8s.io/v1alpha1), pods joining through a label and
//     scheduled by the scheduler that runs the Coscheduling plugin.
//
// Either way the group is created, and seen in the controller's cache,
// before the pods that join it.

// Scheduler names a gang scheduling backend, the value of the
// controller-manager's --gang-scheduler flag.
type Scheduler string

const (
	// SchedulerAuto picks the Workload API when the cluster serves it,
	// else coscheduling when its PodGroups are served, else none.
	SchedulerAuto Scheduler = "auto"
	// SchedulerWorkload uses the Workload API.
	SchedulerWorkload Scheduler = "workload"
	// SchedulerCoscheduling uses scheduler-plugins' coscheduling.
	SchedulerCoscheduling Scheduler = "coscheduling"
	// SchedulerNone gang-schedules nothing: jobs that ask for a gang
	// say so in their GangScheduled condition.
	SchedulerNone Scheduler = "none"
)

// Schedulers are the accepted values of --gang-scheduler.
var Schedulers = []Scheduler{SchedulerAuto, SchedulerWorkload, SchedulerCoscheduling, SchedulerNone}

// Parse checks a --gang-scheduler value.
func Parse(s string) (Scheduler, error) {
	for _, g := range Schedulers {
		if string(g) == s {
			return g, nil
		}
	}
	names := make([]string, len(Schedulers))
	for i, g := range Schedulers {
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
	// group, for people reading it; Kueue admission reads the
	// queue from the job. An annotation, because a queue name may be longer
	// than a label value.
	AnnotationQueue = v1beta1.GroupName + "/queue"
	// AnnotationPriority records spec.scheduler.t9kScheduler.priority, which
	// the PriorityClass buckets (podbuilder.PriorityClassName) round.
	AnnotationPriority = v1beta1.GroupName + "/priority"
)

var (
	workloadAPI     = served.Resource{GroupVersion: schedulingv1beta1.SchemeGroupVersion.String(), Resource: "workloads"}
	coschedulingAPI = served.Resource{GroupVersion: CoschedulingPodGroupGVR.GroupVersion().String(), Resource: CoschedulingPodGroupGVR.Resource}
)

// Resolve decides, once at start-up, which backend the
// controller runs with. auto takes the Workload API when the cluster serves
// scheduling.k8s.io/v1beta1 workloads, else coscheduling when it serves
// scheduling.x-k8s.io/v1alpha1 podgroups, else none. A backend asked for by
// name must be served: its informers could never sync otherwise.
func Resolve(ctx context.Context, d discovery.ServerResourcesInterfaceWithContext,
	requested Scheduler) (Scheduler, error) {
	switch requested {
	case SchedulerNone:
		return SchedulerNone, nil
	case SchedulerWorkload, SchedulerCoscheduling:
		api := workloadAPI
		if requested == SchedulerCoscheduling {
			api = coschedulingAPI
		}
		ok, err := served.Is(ctx, d, api)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", fmt.Errorf("--gang-scheduler=%s: the cluster does not serve %s %s", requested, api.GroupVersion, api.Resource)
		}
		return requested, nil
	case SchedulerAuto:
		for _, candidate := range []struct {
			backend Scheduler
			api     served.Resource
		}{{SchedulerWorkload, workloadAPI}, {SchedulerCoscheduling, coschedulingAPI}} {
			ok, err := served.Is(ctx, d, candidate.api)
			if err != nil {
				return "", err
			}
			if ok {
				return candidate.backend, nil
			}
		}
		return SchedulerNone, nil
	default:
		return "", fmt.Errorf("unknown gang scheduler %q", requested)
	}
}

// Backend keeps a job's group objects in one scheduler's API.
type Backend interface {
	fmt.Stringer
	// Informers are the caches of the group objects, filtered to those
	// with the job-name label.
	Informers() []cache.SharedIndexInformer
	// Ensure creates what is missing of the job's group and keeps its
	// minimum count. ready says whether the group is in the cache and not
	// being deleted, so that pods may join it.
	Ensure(ctx context.Context, job *owner.Job, want *Group) (ready bool, err error)
	// Remove deletes the job's group objects.
	Remove(ctx context.Context, job *owner.Job, why string) error
	// Join makes a pod join the group; one that is not a member (a
	// TensorFlow evaluator) is only scheduled by the same scheduler.
	Join(pod *corev1.Pod, group string, member bool)
}

// Group is the group a job's pods are placed as, worked out once per
// reconcile.
type Group struct {
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
	// PriorityClass is podbuilder.PriorityClassName(Priority).
	PriorityClass string
}

// Config is what the backends are built on.
type Config struct {
	KubeClient    kubernetes.Interface
	KubeInformers informers.SharedInformerFactory
	// DynamicClient and DynamicInformers serve coscheduling's PodGroups,
	// a CRD; needed only with SchedulerCoscheduling.
	DynamicClient    dynamic.Interface
	DynamicInformers dynamicinformer.DynamicSharedInformerFactory
	// CoschedulingSchedulerName is the scheduler running the Coscheduling
	// plugin; DefaultCoschedulingSchedulerName when empty.
	CoschedulingSchedulerName string
}

// New builds the backend of a resolved scheduler (Resolve); nil for
// SchedulerNone, which gang-schedules nothing.
func New(s Scheduler, c Config) (Backend, error) {
	switch s {
	case "", SchedulerNone:
		return nil, nil
	case SchedulerWorkload:
		return newWorkloadGang(c.KubeClient, c.KubeInformers), nil
	case SchedulerCoscheduling:
		if c.DynamicClient == nil || c.DynamicInformers == nil {
			return nil, fmt.Errorf("the coscheduling gang scheduler needs a dynamic client and informer factory")
		}
		name := c.CoschedulingSchedulerName
		if name == "" {
			name = DefaultCoschedulingSchedulerName
		}
		return newCoschedulingGang(c.DynamicClient, c.DynamicInformers, name), nil
	default:
		return nil, fmt.Errorf("gang scheduler %q: resolve it with Resolve first", s)
	}
}

// objectMeta is the metadata of a group object of the job.
func objectMeta(job *owner.Job, want *Group) metav1.ObjectMeta {
	m := job.ObjectMeta(want.Name)
	m.Annotations = map[string]string{
		AnnotationQueue:    want.Queue,
		AnnotationPriority: strconv.Itoa(int(want.Priority)),
	}
	return m
}

// created reports the create of a group object. AlreadyExists is
// an error to retry: the cache, behind or not, decides on the next
// reconcile whether the object is the job's.
func created(job *owner.Job, kind, name string, want *Group, err error) error {
	switch {
	case err == nil:
		job.Logger.V(2).Info("Created gang object", "kind", kind, "name", name, "minCount", want.MinCount)
		job.Normalf(owner.ReasonSuccessfulCreate,
			"Created %s %s: the gang of %d pods is placed all or nothing", kind, name, want.Size)
		return nil
	case apierrors.IsAlreadyExists(err):
		return fmt.Errorf("%s %s exists but is not in the cache yet: %w", kind, name, err)
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil
	default:
		job.Warningf(owner.ReasonFailedCreate, "Error creating %s %s: %v", kind, name, err)
		return fmt.Errorf("creating %s %s: %w", kind, name, err)
	}
}

// check refuses a group object of the job's name that the job
// does not control: its pods would join someone else's group.
func check(job *owner.Job, kind string, obj metav1.Object) error {
	if job.Controls(obj) {
		return nil
	}
	job.Warningf(owner.ReasonNameConflict,
		"%s %s exists and is not controlled by the job; its pods are not created while it is there", kind, obj.GetName())
	return fmt.Errorf("%s %s exists and is not controlled by the job", kind, obj.GetName())
}

// resized reports a changed minimum count.
func resized(job *owner.Job, kind, name string, from, to int32, err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("setting the minimum count of %s %s to %d: %w", kind, name, to, err)
	}
	job.Normalf(owner.ReasonSuccessfulUpdate,
		"Updated %s %s: the gang needs %d pods placed together, was %d", kind, name, to, from)
	return nil
}
