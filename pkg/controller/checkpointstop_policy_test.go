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
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// TestCheckpointStopTransitions walks every transition of the checkpoint
// stop's state machine (checkpointstop_policy.go).
func TestCheckpointStopTransitions(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 30, 0, time.UTC)
	policy := &v1beta1.CheckpointPolicy{StopGraceSeconds: ptr.To[int32](60)}
	asked := metav1.NewMicroTime(now.Add(-20 * time.Second))
	askedLongAgo := metav1.NewMicroTime(now.Add(-61 * time.Second))
	pod := func(name string, annotation string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if annotation != "" {
			p.Annotations = map[string]string{v1beta1.AnnotationCheckpointRequest: annotation}
		}
		return p
	}
	seen := pod("w-0", asked.Format(metav1.RFC3339Micro))
	unseen := pod("w-1", "")
	report := func(at time.Time) *v1beta1.CheckpointRecord {
		return &v1beta1.CheckpointRecord{CheckpointValues: v1beta1.CheckpointValues{Path: "/ckpt/7", Step: ptr.To[int64](7)}, ReportTime: metav1.NewMicroTime(at)}
	}

	cases := map[string]struct {
		in checkpointStopInput
		// want is the decision; its event is compared by type and reason.
		want checkpointStop
	}{
		"no policy, pods running: goes, an interruption": {
			in:   checkpointStopInput{running: []*corev1.Pod{seen}, cacheCaughtUp: true},
			want: checkpointStop{step: stopGoes, interruption: true},
		},
		"no policy, the cache behind: goes, not counted on pods it may not have": {
			in:   checkpointStopInput{running: []*corev1.Pod{seen}},
			want: checkpointStop{step: stopGoes},
		},
		"a policy and nothing running: goes, nothing lost": {
			in:   checkpointStopInput{policy: policy, cacheCaughtUp: true},
			want: checkpointStop{step: stopGoes},
		},
		"a policy, the cache behind: waits for it before asking": {
			in:   checkpointStopInput{policy: policy, running: []*corev1.Pod{seen}},
			want: checkpointStop{step: stopAwaitsCache},
		},
		"a policy, pods running: asks every one and comes back at the grace": {
			in: checkpointStopInput{policy: policy, running: []*corev1.Pod{seen, unseen}, cacheCaughtUp: true},
			want: checkpointStop{step: stopAsks, asks: []*corev1.Pod{seen, unseen}, comeBack: now.Add(time.Minute),
				event: &pendingEvent{eventType: corev1.EventTypeNormal, reason: ReasonCheckpointRequested}},
		},
		"asked, no answer yet: asks the pods that have not seen the request": {
			in: checkpointStopInput{policy: policy, request: &asked, running: []*corev1.Pod{seen, unseen},
				cacheCaughtUp: true},
			want: checkpointStop{step: stopAwaitsCheckpoint, asks: []*corev1.Pod{unseen},
				comeBack: asked.Add(time.Minute)},
		},
		"asked, a checkpoint from before the request: still waits": {
			in: checkpointStopInput{policy: policy, request: &asked, latest: report(asked.Add(-time.Second)),
				running: []*corev1.Pod{seen}, cacheCaughtUp: true},
			want: checkpointStop{step: stopAwaitsCheckpoint, comeBack: asked.Add(time.Minute)},
		},
		"asked, a checkpoint after it: goes, answered": {
			in: checkpointStopInput{policy: policy, request: &asked, latest: report(asked.Add(5 * time.Second)),
				running: []*corev1.Pod{seen}, cacheCaughtUp: true},
			want: checkpointStop{step: stopAfterCheckpoint, interruption: true, answered: ptr.To(true),
				event: &pendingEvent{eventType: corev1.EventTypeNormal, reason: ReasonCheckpointWritten}},
		},
		"asked, the grace passed: goes, unanswered": {
			in: checkpointStopInput{policy: policy, request: &askedLongAgo, running: []*corev1.Pod{seen},
				cacheCaughtUp: true},
			want: checkpointStop{step: stopAfterTimeout, interruption: true, answered: ptr.To(false),
				event: &pendingEvent{eventType: corev1.EventTypeWarning, reason: ReasonCheckpointTimedOut}},
		},
		"asked, no pod left to answer: goes at once, unanswered": {
			in: checkpointStopInput{policy: policy, request: &asked, cacheCaughtUp: true},
			want: checkpointStop{step: stopAfterTimeout, interruption: true, answered: ptr.To(false),
				event: &pendingEvent{eventType: corev1.EventTypeWarning, reason: ReasonCheckpointTimedOut}},
		},
		"asked under a policy without a grace: one second is the grace": {
			in: checkpointStopInput{policy: &v1beta1.CheckpointPolicy{}, request: &asked, running: []*corev1.Pod{seen},
				cacheCaughtUp: true},
			want: checkpointStop{step: stopAfterTimeout, interruption: true, answered: ptr.To(false),
				event: &pendingEvent{eventType: corev1.EventTypeWarning, reason: ReasonCheckpointTimedOut}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.in.now, tc.in.reason = now, StopPause
			got := decideCheckpointStop(tc.in)
			if got.step != tc.want.step {
				t.Fatalf("step = %s, want %s", got.step, tc.want.step)
			}
			if got.goes() != (tc.want.step == stopGoes || tc.want.step == stopAfterCheckpoint || tc.want.step == stopAfterTimeout) {
				t.Errorf("goes() = %v for step %s", got.goes(), got.step)
			}
			if !slices.Equal(names(got.asks), names(tc.want.asks)) {
				t.Errorf("asks = %v, want %v", names(got.asks), names(tc.want.asks))
			}
			if !got.comeBack.Equal(tc.want.comeBack) {
				t.Errorf("comeBack = %v, want %v", got.comeBack, tc.want.comeBack)
			}
			if got.interruption != tc.want.interruption || !ptrEqual(got.answered, tc.want.answered) {
				t.Errorf("interruption, answered = %v, %v; want %v, %v",
					got.interruption, deref(got.answered), tc.want.interruption, deref(tc.want.answered))
			}
			switch {
			case (got.event == nil) != (tc.want.event == nil):
				t.Errorf("event = %+v, want %+v", got.event, tc.want.event)
			case got.event != nil && (got.event.eventType != tc.want.event.eventType || got.event.reason != tc.want.event.reason):
				t.Errorf("event = %s %s, want %s %s", got.event.eventType, got.event.reason, tc.want.event.eventType, tc.want.event.reason)
			}
		})
	}
}

func ptrEqual(a, b *bool) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func deref(b *bool) string {
	if b == nil {
		return "nil"
	}
	if *b {
		return "true"
	}
	return "false"
}
