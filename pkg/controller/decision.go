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
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
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

// discard replaces a pod the job no longer wants as it is (another run mode
// or another topology): at once, without counting it.
func (d *decision) discard(s *slot, why string) {
	s.replacing, s.phase = true, v1beta1.ReplicaDeleted
	s.restartAt, s.reason = nil, ""
	d.delete(s.pod, why)
}

// requeueAt keeps the earliest time asked for.
func (d *decision) requeueAt(t time.Time) {
	if d.comeBack.IsZero() || t.Before(d.comeBack) {
		d.comeBack = t
	}
}

// and is d followed by what a later step decided, as one decision: a
// condition both set ends as the later one sets it.
func (d decision) and(later decision) decision {
	out := decision{
		conditions: append(slices.Clip(d.conditions), later.conditions...),
		events:     append(slices.Clip(d.events), later.events...),
		deletes:    append(slices.Clip(d.deletes), later.deletes...),
		comeBack:   d.comeBack,
		deleteJob:  d.deleteJob || later.deleteJob,
	}
	if !later.comeBack.IsZero() {
		out.requeueAt(later.comeBack)
	}
	return out
}

// after is how long from now until comeBack, at least a millisecond so a
// time already past still asks for a look; zero when no time was asked.
func (d *decision) after(now time.Time) time.Duration {
	if d.comeBack.IsZero() {
		return 0
	}
	return max(d.comeBack.Sub(now), time.Millisecond)
}

// ending is how a step ended the job: the phase it ends in, the reason and
// message of its conditions and event, and what the step decided with it,
// applied before the finish.
type ending struct {
	phase           v1beta1.JobPhase
	reason, message string
	with            decision
}

func jobFailed(reason, message string) *ending {
	return &ending{phase: v1beta1.JobFailed, reason: reason, message: message}
}

// apiTime is t as the API stores times, to the second, so that a time the
// plan compares stays equal once written and read back.
func apiTime(t time.Time) metav1.Time {
	return metav1.NewTime(t).Rfc3339Copy()
}

// deletion is a pod the plan deletes, and why (the event says so).
type deletion struct {
	pod *corev1.Pod
	why string
}
