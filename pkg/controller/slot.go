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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// slot is one replica of the job and the pod that currently runs it.
type slot struct {
	id    podbuilder.ReplicaID
	group *podbuilder.ReplicaGroup
	name  string
	pod   *corev1.Pod
	prev  *v1beta1.ReplicaStatus
	phase v1beta1.ReplicaPhase
	// replacing: the pod is being deleted to be created anew.
	replacing bool
	// exit is how the replica's pod ended, while that awaits a decision.
	exit *replicaExit
	// created is the pod this reconcile created for the replica; only its
	// own goroutine writes it (createPod).
	created *corev1.Pod
	// The restart bookkeeping the replica's status carries.
	restartCount int32
	restartAt    *metav1.Time
	reason       string
	// keepRecord: the replica's status stays as recorded (prev).
	keepRecord bool
	// newSuspect: the replica's failure made its node suspect just now.
	newSuspect bool
	// failedForGood: the replica failed and its restart policy does not
	// run it again (failForGood).
	failedForGood bool
}

func (s *slot) succeeded() bool {
	return !s.replacing && s.phase == v1beta1.ReplicaSucceeded
}
