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

package gang

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/owner"
)

// WorkloadTemplateName names the one PodGroupTemplate of a job's Workload.
const WorkloadTemplateName = "gang"

// workloadGang gang-schedules through the Workload API (scheduling.k8s.io/
// v1beta1): per job a Workload, which describes the gang, and a PodGroup,
// its runtime instance, both named after the job. kube-scheduler's
// GangScheduling plugin reads only the PodGroup and the pods'
// spec.schedulingGroup.podGroupName: a pod waits in PreEnqueue until minCount
// pods of its group exist, and in Permit until minCount are placed, then all
// of them bind together.
type workloadGang struct {
	client    kubernetes.Interface
	workloads cache.SharedIndexInformer
	podGroups cache.SharedIndexInformer
}

var _ Backend = (*workloadGang)(nil)

// newWorkloadGang watches Workloads and PodGroups through the factory,
// which sees only objects with the job-name label.
func newWorkloadGang(client kubernetes.Interface, factory informers.SharedInformerFactory) *workloadGang {
	scheduling := factory.Scheduling().V1beta1()
	return &workloadGang{
		client:    client,
		workloads: scheduling.Workloads().Informer(),
		podGroups: scheduling.PodGroups().Informer(),
	}
}

func (*workloadGang) String() string { return "Workload API" }

func (g *workloadGang) Informers() []cache.SharedIndexInformer {
	return []cache.SharedIndexInformer{g.workloads, g.podGroups}
}

// gangPolicy is the all-or-nothing policy for minCount pods.
func gangPolicy(minCount int32) schedulingv1beta1.PodGroupSchedulingPolicy {
	return schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount}}
}

// disruptAll has the gang preempted or evicted as a whole: one member gone
// stalls the others anyway.
func disruptAll() *schedulingv1beta1.DisruptionMode {
	return &schedulingv1beta1.DisruptionMode{All: &schedulingv1beta1.AllDisruptionMode{}}
}

// newWorkload describes the job's gang: one template, whose minCount is the
// gang's floor (its size, or an elastic job's minReplicas).
func (g *workloadGang) newWorkload(job *owner.Job, want *Group) *schedulingv1beta1.Workload {
	return &schedulingv1beta1.Workload{
		ObjectMeta: objectMeta(job, want),
		Spec: schedulingv1beta1.WorkloadSpec{
			ControllerRef: &schedulingv1beta1.TypedLocalObjectReference{
				APIGroup: v1beta1.GroupName, Kind: job.Kind, Name: job.Object.GetName(),
			},
			PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{{
				Name:              WorkloadTemplateName,
				SchedulingPolicy:  gangPolicy(want.Floor),
				DisruptionMode:    disruptAll(),
				PriorityClassName: want.PriorityClass,
			}},
		},
	}
}

// newPodGroup is the gang the scheduler places. Its priority comes from the
// class: the Priority admission plugin refuses a PodGroup that sets
// spec.priority itself.
func (g *workloadGang) newPodGroup(job *owner.Job, want *Group) *schedulingv1beta1.PodGroup {
	return &schedulingv1beta1.PodGroup{
		ObjectMeta: objectMeta(job, want),
		Spec: schedulingv1beta1.PodGroupSpec{
			WorkloadRef:       &schedulingv1beta1.WorkloadReference{WorkloadName: want.Name, TemplateName: WorkloadTemplateName},
			SchedulingPolicy:  gangPolicy(want.MinCount),
			DisruptionMode:    disruptAll(),
			PriorityClassName: want.PriorityClass,
		},
	}
}

func (g *workloadGang) Ensure(ctx context.Context, job *owner.Job, want *Group) (bool, error) {
	ns := job.Object.GetNamespace()
	wl, err := owner.Cached[*schedulingv1beta1.Workload](g.workloads.GetIndexer(), ns, want.Name)
	if err != nil {
		return false, fmt.Errorf("getting Workload %s: %w", want.Name, err)
	}
	if wl == nil {
		_, err := g.client.SchedulingV1beta1().Workloads(ns).Create(ctx, g.newWorkload(job, want), metav1.CreateOptions{})
		if err := created(job, "Workload", want.Name, want, err); err != nil {
			return false, err
		}
	} else {
		if err := check(job, "Workload", wl); err != nil {
			return false, err
		}
		if err := g.resizeWorkload(ctx, job, wl, want.Size); err != nil {
			return false, err
		}
	}

	pg, err := owner.Cached[*schedulingv1beta1.PodGroup](g.podGroups.GetIndexer(), ns, want.Name)
	if err != nil {
		return false, fmt.Errorf("getting PodGroup %s: %w", want.Name, err)
	}
	if pg == nil {
		_, err := g.client.SchedulingV1beta1().PodGroups(ns).Create(ctx, g.newPodGroup(job, want), metav1.CreateOptions{})
		// The pods wait for the PodGroup to show up in the cache.
		return false, created(job, "PodGroup", want.Name, want, err)
	}
	if err := check(job, "PodGroup", pg); err != nil {
		return false, err
	}
	if pg.DeletionTimestamp != nil {
		// Its deletion requeues the job, which then creates it anew.
		return false, nil
	}
	if gang := pg.Spec.SchedulingPolicy.Gang; gang != nil && gang.MinCount != want.MinCount {
		patch := fmt.Sprintf(`{"spec":{"schedulingPolicy":{"gang":{"minCount":%d}}}}`, want.MinCount)
		_, err := g.client.SchedulingV1beta1().PodGroups(ns).Patch(ctx, pg.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if err := resized(job, "PodGroup", pg.Name, gang.MinCount, want.MinCount, err); err != nil {
			return false, err
		}
	}
	return true, nil
}

// resizeWorkload keeps the template's minCount at the gang's size when the
// replicas change. The list of templates is patched whole: it has no merge
// key for patches.
func (g *workloadGang) resizeWorkload(ctx context.Context, job *owner.Job, wl *schedulingv1beta1.Workload, size int32) error {
	templates := make([]schedulingv1beta1.PodGroupTemplate, len(wl.Spec.PodGroupTemplates))
	from := int32(-1)
	for i := range wl.Spec.PodGroupTemplates {
		wl.Spec.PodGroupTemplates[i].DeepCopyInto(&templates[i])
		if gang := templates[i].SchedulingPolicy.Gang; templates[i].Name == WorkloadTemplateName && gang != nil && gang.MinCount != size {
			from, gang.MinCount = gang.MinCount, size
		}
	}
	if from < 0 || wl.DeletionTimestamp != nil {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"podGroupTemplates": templates}})
	if err != nil {
		return fmt.Errorf("encoding the Workload patch: %w", err)
	}
	_, err = g.client.SchedulingV1beta1().Workloads(wl.Namespace).Patch(ctx, wl.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return resized(job, "Workload", wl.Name, from, size, err)
}

func (g *workloadGang) Remove(ctx context.Context, job *owner.Job, why string) error {
	ns, name := job.Object.GetNamespace(), job.Object.GetName()
	pg, err := owner.Cached[*schedulingv1beta1.PodGroup](g.podGroups.GetIndexer(), ns, name)
	if err != nil {
		return fmt.Errorf("getting PodGroup %s: %w", name, err)
	}
	if pg != nil {
		if err := owner.Delete(ctx, job, "PodGroup", pg, why, g.client.SchedulingV1beta1().PodGroups(ns).Delete); err != nil {
			return err
		}
	}
	wl, err := owner.Cached[*schedulingv1beta1.Workload](g.workloads.GetIndexer(), ns, name)
	if err != nil {
		return fmt.Errorf("getting Workload %s: %w", name, err)
	}
	if wl != nil {
		return owner.Delete(ctx, job, "Workload", wl, why, g.client.SchedulingV1beta1().Workloads(ns).Delete)
	}
	return nil
}

// Join makes a member join the PodGroup. Other pods are scheduled on
// their own by the same scheduler.
func (*workloadGang) Join(pod *corev1.Pod, group string, member bool) {
	if member {
		pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(group)}
	}
}
