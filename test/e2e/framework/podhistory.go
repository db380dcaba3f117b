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

package framework

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// PodIncarnation is one pod object (one UID) seen under a pod name.
type PodIncarnation struct {
	UID       types.UID
	Name      string
	Labels    map[string]string
	Created   time.Time
	FirstSeen time.Time
	// FirstFinalizers are the finalizers of the first version seen,
	// Finalizers every finalizer any version had.
	FirstFinalizers, Finalizers []string
	// Phases are the distinct consecutive pod phases seen.
	Phases []corev1.PodPhase
	// Deleted is when the deletion (deletionTimestamp) was first seen;
	// Gone when the object disappeared.
	Deleted, Gone time.Time
}

// Reached says whether the pod was ever seen in phase p.
func (p *PodIncarnation) Reached(phase corev1.PodPhase) bool {
	return slices.Contains(p.Phases, phase)
}

// PodHistory records, through a watch of a namespace's pods for as long as
// it runs, every pod UID ever seen under each pod name with the phases it
// went through. Watches resume after control-plane outages (an informer
// relists), so a pod that lived only inside an outage can be missed; Observe
// adds what a List saw.
type PodHistory struct {
	mu     sync.Mutex
	byName map[string][]*PodIncarnation
	byUID  map[types.UID]*PodIncarnation
	stop   chan struct{}
	once   sync.Once
}

// WatchPodHistory starts recording the pods of namespace. Stop ends it.
func WatchPodHistory(ctx context.Context, kube kubernetes.Interface, namespace string) (*PodHistory, error) {
	h := &PodHistory{byName: map[string][]*PodIncarnation{}, byUID: map[types.UID]*PodIncarnation{}, stop: make(chan struct{})}
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(namespace))
	inf := factory.Core().V1().Pods().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { h.observe(obj, false) },
		UpdateFunc: func(_, obj any) { h.observe(obj, false) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			h.observe(obj, true)
		},
	})
	if err != nil {
		return nil, err
	}
	factory.Start(h.stop)
	syncCtx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		h.Stop()
		return nil, fmt.Errorf("pod watch of namespace %s did not sync", namespace)
	}
	return h, nil
}

// Stop ends the watch; what was recorded stays readable.
func (h *PodHistory) Stop() { h.once.Do(func() { close(h.stop) }) }

// Observe records pods seen by other means (a List).
func (h *PodHistory) Observe(pods []corev1.Pod) {
	for i := range pods {
		h.observe(&pods[i], false)
	}
}

func (h *PodHistory) observe(obj any, gone bool) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.UID == "" {
		return
	}
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	inc := h.byUID[pod.UID]
	if inc == nil {
		inc = &PodIncarnation{
			UID: pod.UID, Name: pod.Name, Labels: pod.Labels, Created: pod.CreationTimestamp.Time,
			FirstSeen: now, FirstFinalizers: slices.Clone(pod.Finalizers),
		}
		h.byUID[pod.UID] = inc
		h.byName[pod.Name] = append(h.byName[pod.Name], inc)
		sort.SliceStable(h.byName[pod.Name], func(i, j int) bool {
			return h.byName[pod.Name][i].Created.Before(h.byName[pod.Name][j].Created)
		})
	}
	for _, fin := range pod.Finalizers {
		if !slices.Contains(inc.Finalizers, fin) {
			inc.Finalizers = append(inc.Finalizers, fin)
		}
	}
	if ph := pod.Status.Phase; ph != "" && (len(inc.Phases) == 0 || inc.Phases[len(inc.Phases)-1] != ph) {
		inc.Phases = append(inc.Phases, ph)
	}
	if pod.DeletionTimestamp != nil && inc.Deleted.IsZero() {
		inc.Deleted = now
	}
	if gone && inc.Gone.IsZero() {
		inc.Gone = now
	}
}

// Incarnations returns copies of the pods seen under name, oldest first.
func (h *PodHistory) Incarnations(name string) []PodIncarnation {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]PodIncarnation, 0, len(h.byName[name]))
	for _, inc := range h.byName[name] {
		c := *inc
		c.Phases = slices.Clone(inc.Phases)
		c.FirstFinalizers, c.Finalizers = slices.Clone(inc.FirstFinalizers), slices.Clone(inc.Finalizers)
		out = append(out, c)
	}
	return out
}

// Names returns every pod name seen, sorted.
func (h *PodHistory) Names() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	names := make([]string, 0, len(h.byName))
	for n := range h.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Count is how many distinct pods (UIDs) were seen.
func (h *PodHistory) Count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.byUID)
}
