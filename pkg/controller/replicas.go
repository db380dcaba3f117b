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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// buildSlots lays out the replicas the spec asks for.
func (r *reconciler) buildSlots() {
	prev := map[string]*v1beta1.ReplicaStatus{}
	for i := range r.old.Tasks {
		t := &r.old.Tasks[i]
		for j := range t.ReplicaStatus {
			prev[t.ReplicaStatus[j].Name] = &t.ReplicaStatus[j]
		}
	}
	// The topology is within batch.MaxTotalReplicas (run checks it first),
	// so these are bounded whatever the spec says.
	r.slots = make([]*slot, 0, r.topo.Total)
	r.byName = make(map[string]*slot, r.topo.Total)
	for gi := range r.topo.Groups {
		g := &r.topo.Groups[gi]
		for i := range admittedCount(r.topo, gi, r.queued.state) {
			id := podbuilder.ReplicaID{Type: g.Type, Index: i}
			s := &slot{id: id, group: g, name: podbuilder.PodName(r.job.GetName(), id)}
			s.prev = prev[s.name]
			if s.prev != nil {
				s.restartCount = s.prev.RestartCount
			}
			r.slots = append(r.slots, s)
			r.byName[s.name] = s
		}
	}
}

// assign puts the claimed pods into their slots.
func (r *reconciler) assign(pods []*corev1.Pod) {
	for _, p := range pods {
		if s := r.byName[p.Name]; s != nil {
			s.pod = p
		} else {
			r.extra = append(r.extra, p)
		}
	}
}

// podPhase is the phase of the replica a pod runs.
func podPhase(p *corev1.Pod) v1beta1.ReplicaPhase {
	switch podOutcome(p) {
	case corev1.PodPending, "":
		return v1beta1.ReplicaPending
	case corev1.PodRunning:
		return v1beta1.ReplicaRunning
	case corev1.PodSucceeded:
		return v1beta1.ReplicaSucceeded
	case corev1.PodFailed:
		return v1beta1.ReplicaFailed
	default:
		return v1beta1.ReplicaUnknown
	}
}

// Succeeded and AllSucceeded let the adapters' success rules read the
// replicas (ReplicaPhases). A replica whose success the status recorded has
// succeeded even when its pod is gone.
func (r *reconciler) Succeeded(id podbuilder.ReplicaID) bool {
	s := r.byName[podbuilder.PodName(r.job.GetName(), id)]
	return s != nil && s.succeeded()
}

func (r *reconciler) AllSucceeded() bool {
	for _, s := range r.slots {
		if !s.succeeded() {
			return false
		}
	}
	return true
}

// succeeded says whether the replicas' phases, as this reconcile set them,
// meet the job's success policy. In debug mode nothing succeeds: exits of
// debug pods never decide the job's outcome.
func (r *reconciler) succeeded(debug bool) bool {
	return !debug && r.topo.Total > 0 && jobSucceeded(r.kind.Adapter, r.topo, r.spec.RunPolicy.SuccessPolicy, r)
}

// runningPods are the job's pods that run and are not on their way out:
// the ones that could still write a checkpoint.
func (r *reconciler) runningPods() []*corev1.Pod {
	var pods []*corev1.Pod
	for _, s := range r.slots {
		if p := s.pod; p != nil && p.DeletionTimestamp == nil && !s.replacing && podOutcome(p) == corev1.PodRunning {
			pods = append(pods, p)
		}
	}
	return pods
}

// trainingStarted is when a pod's training container started running.
func (r *reconciler) trainingStarted(p *corev1.Pod) (time.Time, bool) {
	name := ""
	if i := podbuilder.TrainingContainer(r.kind, &p.Spec); i >= 0 {
		name = p.Spec.Containers[i].Name
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == name && cs.State.Running != nil {
			if t := cs.State.Running.StartedAt; !t.IsZero() {
				return t.Time, true
			}
			// A runtime that gives no start: the pod's, when it has one.
			if p.Status.StartTime != nil {
				return p.Status.StartTime.Time, true
			}
		}
	}
	return time.Time{}, false
}

// runStart is when the running replicas' training last began: when the
// last of their training containers started; the job's start time when
// none reports one.
func (r *reconciler) runStart() time.Time {
	var start time.Time
	for _, p := range r.runningPods() {
		if t, ok := r.trainingStarted(p); ok && t.After(start) {
			start = t
		}
	}
	if start.IsZero() && r.status.StartTime != nil {
		start = r.status.StartTime.Time
	}
	if start.IsZero() {
		start = r.now
	}
	return start
}

// resizing says whether the job's replicas changed under running pods: a
// pod beyond the new count, or one made for the old shape, must go.
func (r *reconciler) resizing() bool {
	for _, p := range r.extra {
		if p.DeletionTimestamp == nil {
			return true
		}
	}
	want := r.topo.Shape()
	for _, s := range r.slots {
		if p := s.pod; p != nil && p.DeletionTimestamp == nil && !isTerminated(p) && madeForOtherShape(p, want) {
			return true
		}
	}
	return false
}

// staleOwner says whether a pod of the job's name and kind is controlled by
// an earlier job of that name, which is gone since this one exists.
func (r *reconciler) staleOwner(p *corev1.Pod) bool {
	ref := metav1.GetControllerOfNoCopy(p)
	return ref != nil && ref.Kind == r.kind.Kind() && ref.Name == r.job.GetName() && ref.UID != r.job.GetUID()
}

// keepRunningPodsKeys keeps an MPI job whose pods an earlier controller made
// on the Secret those pods mount, named without the job's UID: a pod made
// now must hold the keys the running ones trust.
func (r *reconciler) keepRunningPodsKeys(pods []*corev1.Pod) {
	if !podbuilder.NeedsSSHKeys(r.kind.Adapter) {
		return
	}
	for _, p := range pods {
		if name := podbuilder.SSHSecretOf(r.job.GetName(), p); name != "" {
			r.topo.SSHSecret = name
			return
		}
	}
}

// hasPods says whether any replica of the job has a pod.
func (r *reconciler) hasPods() bool {
	for _, s := range r.slots {
		if s.pod != nil {
			return true
		}
	}
	return false
}
