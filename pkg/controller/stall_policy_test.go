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
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// TestStallPolicy: when the watchdog's clock runs, when it runs out, and
// what each stallPolicy then does.
func TestStallPolicy(t *testing.T) {
	now := time.Date(2026, 7, 1, 9, 0, 0, 0, time.UTC)
	minute := ptr.To[int64](60)
	advanced := func(ago time.Duration) *v1beta1.ProgressStatus {
		at := metav1.NewMicroTime(now.Add(-ago))
		return &v1beta1.ProgressStatus{ProgressValues: v1beta1.ProgressValues{Step: ptr.To[int64](42)}, Reporter: "j-worker-0", ReportTime: &at, AdvanceTime: &at}
	}
	cases := map[string]struct {
		in   stallInput
		want stallDecision
		// message, when set, is a part the decision's message must hold.
		message string
	}{
		"no deadline: unwatched": {
			in:   stallInput{allRunning: true, runningSince: now.Add(-time.Hour)},
			want: stallDecision{step: stallUnwatched},
		},
		"a debug run: unwatched": {
			in:   stallInput{deadline: minute, debug: true, allRunning: true, runningSince: now.Add(-time.Hour)},
			want: stallDecision{step: stallUnwatched},
		},
		"a replica not running: the clock stops": {
			in:   stallInput{deadline: minute, runningSince: now.Add(-time.Hour)},
			want: stallDecision{step: stallClockStopped},
		},
		"running for less than the deadline: come back when it falls": {
			in:   stallInput{deadline: minute, allRunning: true, runningSince: now.Add(-50 * time.Second)},
			want: stallDecision{step: stallProgressing, comeBack: now.Add(10 * time.Second)},
		},
		"a recent step moves the clock": {
			in: stallInput{deadline: minute, allRunning: true, runningSince: now.Add(-time.Hour),
				progress: advanced(30 * time.Second)},
			want: stallDecision{step: stallProgressing, comeBack: now.Add(30 * time.Second)},
		},
		"a step from before the replicas started does not": {
			in: stallInput{deadline: minute, allRunning: true, runningSince: now.Add(-30 * time.Second),
				progress: advanced(time.Hour)},
			want: stallDecision{step: stallProgressing, comeBack: now.Add(30 * time.Second)},
		},
		"stalled under None: reported only": {
			in:      stallInput{deadline: minute, allRunning: true, runningSince: now.Add(-2 * time.Minute)},
			want:    stallDecision{step: stallStalled, action: stallReport},
			message: "the job never reported progress",
		},
		"stalled under Fail: the job fails": {
			in: stallInput{deadline: minute, policy: v1beta1.StallPolicyFail, allRunning: true,
				runningSince: now.Add(-time.Hour), progress: advanced(time.Minute)},
			want:    stallDecision{step: stallStalled, action: stallFails},
			message: "was at step 42, from j-worker-0",
		},
		"stalled under Restart: every replica restarts": {
			in: stallInput{deadline: minute, policy: v1beta1.StallPolicyRestart, allRunning: true,
				runningSince: now.Add(-time.Hour), backoffCount: 2, backoffLimit: 3},
			want: stallDecision{step: stallStalled, action: stallRestarts},
		},
		"stalled under Restart with no restart left: the job fails": {
			in: stallInput{deadline: minute, policy: v1beta1.StallPolicyRestart, allRunning: true,
				runningSince: now.Add(-time.Hour), backoffCount: 3, backoffLimit: 3},
			want: stallDecision{step: stallStalled, action: stallOutOfRestarts},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.in.now = now
			got := decideStall(tc.in)
			if got.step != tc.want.step || got.action != tc.want.action || !got.comeBack.Equal(tc.want.comeBack) {
				t.Errorf("decideStall = %s %s %v, want %s %s %v", got.step, got.action, got.comeBack,
					tc.want.step, tc.want.action, tc.want.comeBack)
			}
			if (got.step == stallStalled) != (got.message != "") {
				t.Errorf("message %q for step %s", got.message, got.step)
			}
			if !strings.Contains(got.message, tc.message) {
				t.Errorf("message %q does not say %q", got.message, tc.message)
			}
		})
	}
}
