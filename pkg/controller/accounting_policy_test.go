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

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// TestAccountStatePolicy: a state change adds the time of the state left to
// its seconds and starts the next state's clock.
func TestAccountStatePolicy(t *testing.T) {
	now := time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC)
	since := func(ago time.Duration) *metav1.Time { return ptr.To(metav1.NewTime(now.Add(-ago))) }
	cases := map[string]struct {
		in    *v1beta1.Accounting
		state v1beta1.AccountingState
		want  *v1beta1.Accounting
	}{
		"finished before accounting existed: nothing": {
			state: "",
		},
		"the first state: its clock starts": {
			state: v1beta1.AccountingQueued,
			want:  &v1beta1.Accounting{State: v1beta1.AccountingQueued, StateSince: since(0)},
		},
		"the same state: nothing changes": {
			in:    &v1beta1.Accounting{State: v1beta1.AccountingRunning, StateSince: since(time.Hour)},
			state: v1beta1.AccountingRunning,
			want:  &v1beta1.Accounting{State: v1beta1.AccountingRunning, StateSince: since(time.Hour)},
		},
		"queued to starting: the queued time is added": {
			in:    &v1beta1.Accounting{State: v1beta1.AccountingQueued, StateSince: since(90 * time.Second), QueuedSeconds: 10},
			state: v1beta1.AccountingStarting,
			want:  &v1beta1.Accounting{State: v1beta1.AccountingStarting, StateSince: since(0), QueuedSeconds: 100},
		},
		"running to finished: the running time is added, no clock runs": {
			in:    &v1beta1.Accounting{State: v1beta1.AccountingRunning, StateSince: since(time.Minute)},
			state: "",
			want:  &v1beta1.Accounting{RunningSeconds: 60},
		},
		"a state without its start: the clock starts, nothing is added": {
			in:    &v1beta1.Accounting{State: v1beta1.AccountingPaused, PausedSeconds: 5},
			state: v1beta1.AccountingPaused,
			want:  &v1beta1.Accounting{State: v1beta1.AccountingPaused, StateSince: since(0), PausedSeconds: 5},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := accountState(tc.in, tc.state, now)
			if !apiEqual(got, tc.want) {
				t.Errorf("accountState = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestInterruptionPolicy: what an interruption costs, counted from the
// later of the replicas' start and the latest checkpoint.
func TestInterruptionPolicy(t *testing.T) {
	now := time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC)
	checkpoint := func(ago time.Duration, step int64) *v1beta1.CheckpointRecord {
		return &v1beta1.CheckpointRecord{CheckpointValues: v1beta1.CheckpointValues{Path: "/c", Step: ptr.To(step)}, ReportTime: metav1.NewMicroTime(now.Add(-ago))}
	}
	at := func(step int64) *v1beta1.ProgressStatus {
		return &v1beta1.ProgressStatus{ProgressValues: v1beta1.ProgressValues{Step: ptr.To(step)}}
	}
	cases := map[string]struct {
		in   interruptionInput
		want v1beta1.Interruption
	}{
		"no checkpoint: everything since the start is lost": {
			in: interruptionInput{replicas: 4, trainingSince: now.Add(-10 * time.Minute), progress: at(300)},
			want: v1beta1.Interruption{Replicas: 4, LostSeconds: 600, LostReplicaSeconds: 2400,
				LostSteps: ptr.To[int64](300)},
		},
		"a checkpoint since the start: only the time after it": {
			in: interruptionInput{replicas: 2, trainingSince: now.Add(-10 * time.Minute), latest: checkpoint(time.Minute, 250),
				progress: at(300), answered: ptr.To(true)},
			want: v1beta1.Interruption{Replicas: 2, LostSeconds: 60, LostReplicaSeconds: 120, ResumeStep: ptr.To[int64](250),
				LostSteps: ptr.To[int64](50), CheckpointAnswered: ptr.To(true)},
		},
		"a checkpoint older than the start: counted from the start": {
			in: interruptionInput{replicas: 1, trainingSince: now.Add(-30 * time.Second), latest: checkpoint(time.Hour, 100),
				progress: at(90)},
			want: v1beta1.Interruption{Replicas: 1, LostSeconds: 30, LostReplicaSeconds: 30, ResumeStep: ptr.To[int64](100),
				LostSteps: ptr.To[int64](0)},
		},
		"no progress reported: no steps counted": {
			in:   interruptionInput{replicas: 1, trainingSince: now.Add(-5 * time.Second)},
			want: v1beta1.Interruption{Replicas: 1, LostSeconds: 5, LostReplicaSeconds: 5},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.in.now, tc.in.reason = now, StopRestartJob
			tc.want.Time, tc.want.Reason = metav1.NewTime(now), StopRestartJob
			a := addInterruption(&v1beta1.Accounting{LostReplicaSeconds: 1000, Interruptions: 3}, tc.in)
			if a.Interruptions != 4 || a.LostReplicaSeconds != 1000+tc.want.LostReplicaSeconds || len(a.Recent) != 1 {
				t.Fatalf("accounting %+v: want a fourth interruption and its lost work added", a)
			}
			if !apiEqual(a.Recent[0], tc.want) {
				t.Errorf("interruption = %+v, want %+v", a.Recent[0], tc.want)
			}
		})
	}

	t.Run("only the most recent are kept", func(t *testing.T) {
		var a *v1beta1.Accounting
		for i := range batch.MaxRecentInterruptions + 3 {
			a = addInterruption(a, interruptionInput{reason: StopPause, replicas: int32(i + 1), trainingSince: now, now: now})
		}
		if int(a.Interruptions) != batch.MaxRecentInterruptions+3 || len(a.Recent) != batch.MaxRecentInterruptions ||
			a.Recent[0].Replicas != 4 {
			t.Errorf("accounting kept %d of %d interruptions, the oldest of %d replicas; want the last %d",
				len(a.Recent), a.Interruptions, a.Recent[0].Replicas, batch.MaxRecentInterruptions)
		}
	})
}

// apiEqual compares API values as the apiserver would (times to the
// instant, whatever their location).
func apiEqual(a, b any) bool { return equality.Semantic.DeepEqual(a, b) }
