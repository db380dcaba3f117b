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
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// Reasons of the Paused condition and its events.
const (
	ReasonPausing = "Pausing"
	ReasonPaused  = "Paused"
	ReasonResumed = "Resumed"
)

// The pause and debug rules, over API types alone: what a stopped job's
// replicas record, where a pause stands, and which pods debug mode runs
// again or replaces. stops.go carries them out.

// stoppedReplicaPhase is what the status records for a replica of a stopped
// job: Deleted for one that has a pod, or had one (its entry carries a pod
// UID), so that a resume counts its pod as replaced, not vanished; podless
// for one that never had a pod.
func stoppedReplicaPhase(hasPod bool, prev *v1beta1.ReplicaStatus, podless v1beta1.ReplicaPhase) v1beta1.ReplicaPhase {
	if hasPod || (prev != nil && prev.UID != "") {
		return v1beta1.ReplicaDeleted
	}
	return podless
}

// phaseBeforeStop is how a replica stands for the success policy when a
// stop (a pause, an eviction) comes to remove its pod: as its pod says,
// except that a pod already being deleted counts as stopped, since a pod
// that exits 0 on the stop's signal has not succeeded. A replica whose
// success the status recorded keeps it after its pod is gone, as outside a
// stop.
func phaseBeforeStop(pod *corev1.Pod, prev *v1beta1.ReplicaStatus) v1beta1.ReplicaPhase {
	switch {
	case pod == nil && prev != nil && prev.Phase == v1beta1.ReplicaSucceeded:
		return v1beta1.ReplicaSucceeded
	case pod == nil:
		return stoppedReplicaPhase(false, prev, v1beta1.ReplicaCreating)
	case pod.DeletionTimestamp != nil:
		return v1beta1.ReplicaDeleted
	}
	return podPhase(pod)
}

// pauseState says where a pause stands with remaining pods still to go: the
// Paused condition's reason and message, and whether the job is Paused.
func pauseState(remaining int) (reason, message string, paused bool) {
	if remaining > 0 {
		return ReasonPausing, fmt.Sprintf("waiting for %d pods to terminate", remaining), false
	}
	return ReasonPaused, "the job is paused: it has no pods", true
}

// rerunsAfterSuccess says whether a replica whose pod succeeded runs again:
// in debug mode every replica does, otherwise only under RestartPolicy
// Always.
func rerunsAfterSuccess(debug bool, policy v1beta1.RestartPolicy) bool {
	return debug || restartsOnSuccess(policy)
}

// runModeChanged says whether a pod was made for the other run mode (debug
// or immediate) and so must be replaced. Pods that predate the annotation
// are kept.
func runModeChanged(pod *corev1.Pod, debug bool) bool {
	made := pod.Annotations[podbuilder.AnnotationRunMode]
	return made != "" && made != podbuilder.RunMode(debug)
}
