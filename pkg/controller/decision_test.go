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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// TestDecisionAnd: two steps' decisions merged keep both steps' conditions,
// events and deletes in order, the earlier of their times to come back, and
// a job delete either asked for; and the merge leaves the first decision as
// it was, since a step may still hold it.
func TestDecisionAnd(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	pod := func(name string) *corev1.Pod { return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	cases := []struct {
		name                         string
		firstComeBack, laterComeBack time.Duration // 0: none
		firstDeletesJob, laterDelete bool
		wantComeBack                 time.Duration
		wantDeleteJob                bool
	}{
		{name: "neither comes back", wantComeBack: 0},
		{name: "only the first comes back", firstComeBack: time.Minute, wantComeBack: time.Minute},
		{name: "only the later comes back", laterComeBack: time.Minute, wantComeBack: time.Minute},
		{name: "the earlier time wins", firstComeBack: time.Hour, laterComeBack: time.Minute, wantComeBack: time.Minute},
		{name: "the earlier time wins the other way", firstComeBack: time.Minute, laterComeBack: time.Hour, wantComeBack: time.Minute},
		{name: "a job delete from the first stays", firstDeletesJob: true, wantDeleteJob: true},
		{name: "a job delete from the later counts", laterDelete: true, wantDeleteJob: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var first, later decision
			first.setCondition(v1beta1.ConditionRunning, metav1.ConditionTrue, "A", "first")
			first.event(corev1.EventTypeNormal, "First", "one")
			first.delete(pod("a"), "first")
			later.setCondition(v1beta1.ConditionRunning, metav1.ConditionFalse, "B", "later")
			later.event(corev1.EventTypeWarning, "Later", "two")
			later.delete(pod("b"), "later")
			if tc.firstComeBack > 0 {
				first.requeueAt(now.Add(tc.firstComeBack))
			}
			if tc.laterComeBack > 0 {
				later.requeueAt(now.Add(tc.laterComeBack))
			}
			first.deleteJob, later.deleteJob = tc.firstDeletesJob, tc.laterDelete

			got := first.and(later)
			if len(got.conditions) != 2 || got.conditions[0].reason != "A" || got.conditions[1].reason != "B" {
				t.Errorf("conditions %+v, want the first's then the later's", got.conditions)
			}
			if len(got.events) != 2 || got.events[0].reason != "First" || got.events[1].reason != "Later" {
				t.Errorf("events %+v, want the first's then the later's", got.events)
			}
			if len(got.deletes) != 2 || got.deletes[0].pod.Name != "a" || got.deletes[1].pod.Name != "b" {
				t.Errorf("deletes %+v, want a then b", got.deletes)
			}
			if after := got.after(now); after != tc.wantComeBack {
				t.Errorf("comes back after %v, want %v", after, tc.wantComeBack)
			}
			if got.deleteJob != tc.wantDeleteJob {
				t.Errorf("deletes the job: %v, want %v", got.deleteJob, tc.wantDeleteJob)
			}
			if len(first.conditions) != 1 || len(first.events) != 1 || len(first.deletes) != 1 {
				t.Errorf("the first decision changed: %+v", first)
			}
		})
	}
}

// TestDecisionAfter: a time already past still asks for a look, at once.
func TestDecisionAfter(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	var d decision
	d.requeueAt(now.Add(-time.Minute))
	if got := d.after(now); got != time.Millisecond {
		t.Errorf("after %v for a time past, want 1ms", got)
	}
}
