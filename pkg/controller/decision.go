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
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// decision is what a step of the plan decided, as a value: the conditions
// it sets, the events it records, the pods it deletes, when the job is to
// be looked at again, and whether the job itself goes. A step that returns
// one calls none of the reconciler's verbs; reconcile.go applies it
// (reconciler.apply), so what a step decides can be read, and tested, in
// one value.
type decision struct {
	conditions []conditionChange
	events     []pendingEvent
	deletes    []deletion
	// comeBack is when the job is to be reconciled again; zero for no
	// particular time.
	comeBack  time.Time
	deleteJob bool
}

// conditionChange is a condition a decision sets on the job; the
// generation and the transition time are the reconcile's.
type conditionChange struct {
	typ             string
	status          metav1.ConditionStatus
	reason, message string
}

func (d *decision) setCondition(typ string, status metav1.ConditionStatus, reason, message string) {
	d.conditions = append(d.conditions, conditionChange{typ: typ, status: status, reason: reason, message: message})
}

func (d *decision) event(eventType, reason, format string, args ...any) {
	d.events = append(d.events, pendingEvent{eventType, reason, fmt.Sprintf(format, args...)})
}

func (d *decision) delete(pod *corev1.Pod, why string) {
	d.deletes = append(d.deletes, deletion{pod: pod, why: why})
}

// requeueAt keeps the earliest time asked for.
func (d *decision) requeueAt(t time.Time) {
	if d.comeBack.IsZero() || t.Before(d.comeBack) {
		d.comeBack = t
	}
}

// deletion is a pod the plan deletes, and why (the event says so).
type deletion struct {
	pod *corev1.Pod
	why string
}
