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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"tensorstack.dev/training/pkg/controller/owner"
)

// CoschedulingPodGroupGVR is the PodGroup of scheduler-plugins'
// coscheduling, a CRD. It is built as unstructured and served through the
// dynamic client: importing sigs.k8s.io/scheduler-plugins would pin other
// versions of k8s.io/*.
var CoschedulingPodGroupGVR = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}

const (
	coschedulingPodGroupKind = "PodGroup"
	// LabelCoschedulingPodGroup names the PodGroup a pod belongs to.
	LabelCoschedulingPodGroup = "scheduling.x-k8s.io/pod-group"
)

// coschedulingGang gang-schedules through scheduler-plugins' Coscheduling
// plugin: a PodGroup per job, named after it, with spec.minMember; members
// carry the label scheduling.x-k8s.io/pod-group and every pod of the job is
// scheduled by the scheduler that runs the plugin. The plugin admits a pod
// in PreFilter once minMember pods with the label exist, and in Permit once
// minMember are placed (those already bound count); scheduleTimeoutSeconds
// is left to the plugin's default.
type coschedulingGang struct {
	client        dynamic.NamespaceableResourceInterface
	podGroups     cache.SharedIndexInformer
	schedulerName string
}

var _ Backend = (*coschedulingGang)(nil)

func newCoschedulingGang(client dynamic.Interface, factory dynamicinformer.DynamicSharedInformerFactory, schedulerName string) *coschedulingGang {
	return &coschedulingGang{
		client:        client.Resource(CoschedulingPodGroupGVR),
		podGroups:     factory.ForResource(CoschedulingPodGroupGVR).Informer(),
		schedulerName: schedulerName,
	}
}

func (g *coschedulingGang) String() string { return "coscheduling, scheduler " + g.schedulerName }

func (g *coschedulingGang) Informers() []cache.SharedIndexInformer {
	return []cache.SharedIndexInformer{g.podGroups}
}

// newPodGroup builds the job's coscheduling PodGroup.
func (g *coschedulingGang) newPodGroup(job *owner.Job, want *Group) *unstructured.Unstructured {
	m := objectMeta(job, want)
	pg := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"minMember": int64(want.MinCount)},
	}}
	pg.SetAPIVersion(CoschedulingPodGroupGVR.GroupVersion().String())
	pg.SetKind(coschedulingPodGroupKind)
	pg.SetName(m.Name)
	pg.SetNamespace(m.Namespace)
	pg.SetLabels(m.Labels)
	pg.SetAnnotations(m.Annotations)
	pg.SetOwnerReferences(m.OwnerReferences)
	return pg
}

// minMember reads spec.minMember; -1 when it is missing or not a number.
func minMember(pg *unstructured.Unstructured) int64 {
	n, ok, err := unstructured.NestedInt64(pg.Object, "spec", "minMember")
	if !ok || err != nil {
		return -1
	}
	return n
}

func (g *coschedulingGang) Ensure(ctx context.Context, job *owner.Job, want *Group) (bool, error) {
	ns := job.Object.GetNamespace()
	pg, err := owner.Cached[*unstructured.Unstructured](g.podGroups.GetIndexer(), ns, want.Name)
	if err != nil {
		return false, fmt.Errorf("getting PodGroup %s: %w", want.Name, err)
	}
	if pg == nil {
		_, err := g.client.Namespace(ns).Create(ctx, g.newPodGroup(job, want), metav1.CreateOptions{})
		// The pods wait for the PodGroup to show up in the cache: the
		// plugin refuses a labelled pod whose PodGroup it cannot find.
		return false, created(job, "PodGroup", want.Name, want, err)
	}
	if err := check(job, "PodGroup", pg); err != nil {
		return false, err
	}
	if pg.GetDeletionTimestamp() != nil {
		return false, nil
	}
	if from := minMember(pg); from != int64(want.MinCount) {
		patch := fmt.Sprintf(`{"spec":{"minMember":%d}}`, want.MinCount)
		_, err := g.client.Namespace(ns).Patch(ctx, pg.GetName(), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if err := resized(job, "PodGroup", pg.GetName(), int32(from), want.MinCount, err); err != nil {
			return false, err
		}
	}
	return true, nil
}

func (g *coschedulingGang) Remove(ctx context.Context, job *owner.Job, why string) error {
	ns, name := job.Object.GetNamespace(), job.Object.GetName()
	pg, err := owner.Cached[*unstructured.Unstructured](g.podGroups.GetIndexer(), ns, name)
	if err != nil {
		return fmt.Errorf("getting PodGroup %s: %w", name, err)
	}
	if pg == nil {
		return nil
	}
	return owner.Delete(ctx, job, "PodGroup", pg, why, func(ctx context.Context, name string, opts metav1.DeleteOptions) error {
		return g.client.Namespace(ns).Delete(ctx, name, opts)
	})
}

// Join labels a member with its PodGroup. Every pod of the job, a
// TensorFlow evaluator too, goes to the coscheduling scheduler, so that one
// scheduler places the job; a template's schedulerName gives way to it.
func (g *coschedulingGang) Join(pod *corev1.Pod, group string, member bool) {
	pod.Spec.SchedulerName = g.schedulerName
	if member {
		pod.Labels[LabelCoschedulingPodGroup] = group
	}
}
