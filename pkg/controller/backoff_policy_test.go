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
	"k8s.io/utils/ptr"
)

func TestRestartBackoffDelays(t *testing.T) {
	b := RestartBackoff{}.withDefaults()
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, 320 * time.Second, 6 * time.Minute, 6 * time.Minute}
	for i, w := range want {
		if got := b.Delay(int32(i + 1)); got != w {
			t.Errorf("Delay(%d) = %v, want %v", i+1, got, w)
		}
	}
	if got := b.Delay(1 << 30); got != DefaultRestartBackoffMax {
		t.Errorf("Delay(huge) = %v, want the cap", got)
	}
}

// TestRestartTiming: when a replica whose pod exited starts again, and how
// its run of restarts is counted.
func TestRestartTiming(t *testing.T) {
	b := RestartBackoff{}.withDefaults()
	now := time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC)
	// exited is a pod that started at start and whose container ended at end.
	exited := func(start, end time.Time) *corev1.Pod {
		p := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, StartTime: ptr.To(metav1.NewTime(start))}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: metav1.NewTime(end)}}}}
		return p
	}
	at := func(d time.Duration) *metav1.Time { return ptr.To(metav1.NewTime(now.Add(d))) }
	cases := map[string]struct {
		pod   *corev1.Pod
		count int32
		want  replicaRestart
	}{
		"a first failure that just happened waits the base": {
			pod: exited(now.Add(-time.Minute), now), want: replicaRestart{count: 1, at: at(10 * time.Second)},
		},
		"the wait counts from the exit, not from now": {
			pod: exited(now.Add(-time.Minute), now.Add(-4*time.Second)), want: replicaRestart{count: 1, at: at(6 * time.Second)},
		},
		"an exit longer ago than the delay starts at once": {
			pod: exited(now.Add(-time.Minute), now.Add(-30*time.Second)), want: replicaRestart{count: 1},
		},
		"the third restart in a row waits four times the base": {
			pod: exited(now.Add(-time.Minute), now), count: 2, want: replicaRestart{count: 3, at: at(40 * time.Second)},
		},
		"a pod that ran for the reset period starts the run anew": {
			pod: exited(now.Add(-b.Reset), now), count: 5, want: replicaRestart{count: 1, at: at(10 * time.Second)},
		},
		"a pod that vanished counts from now": {
			count: 1, want: replicaRestart{count: 2, at: at(20 * time.Second)},
		},
		"an exit between seconds waits for the next whole second": {
			pod:  exited(now.Add(-time.Minute), now.Add(-1500*time.Millisecond)),
			want: replicaRestart{count: 1, at: at(9 * time.Second)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := decideRestart(tc.pod, tc.count, b, now)
			if got.count != tc.want.count {
				t.Errorf("count = %d, want %d", got.count, tc.want.count)
			}
			switch {
			case (got.at == nil) != (tc.want.at == nil):
				t.Errorf("at = %v, want %v", got.at, tc.want.at)
			case got.at != nil && !got.at.Equal(tc.want.at):
				t.Errorf("at = %v, want %v", got.at.UTC(), tc.want.at.UTC())
			}
		})
	}
}

func TestExitTime(t *testing.T) {
	at := func(s int) metav1.Time { return metav1.NewTime(testStart.Add(time.Duration(s) * time.Second)) }
	terminated := func(s int) corev1.ContainerStatus {
		return corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: at(s)}}}
	}
	notReady := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: at(30)}
	deleting := func(p *corev1.Pod) *corev1.Pod {
		d := at(100)
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &d, ptr.To[int64](30)
		return p
	}
	cases := []struct {
		name   string
		pod    *corev1.Pod
		want   int
		wantOK bool
	}{
		{"the latest container", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed,
			ContainerStatuses: []corev1.ContainerStatus{terminated(10), terminated(20)}, Conditions: []corev1.PodCondition{notReady}}}, 20, true},
		{"a failed pod without container ends: when it turned not Ready", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed,
			Conditions: []corev1.PodCondition{notReady}}}, 30, true},
		{"a running pod not Ready has not ended", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{notReady}}}, 0, false},
		{"a deleted pod: when the deletion began", deleting(&corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}), 70, true},
		{"nothing to go by", &corev1.Pod{}, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := exitTime(tc.pod)
			if ok != tc.wantOK || (ok && !got.Equal(at(tc.want).Time)) {
				t.Errorf("exitTime = %v, %v; want %v, %v", got, ok, at(tc.want).Time, tc.wantOK)
			}
		})
	}
}
