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
	"math"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

func TestActiveDeadlineRule(t *testing.T) {
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name    string
		seconds *int64
		want    time.Time
		wantOK  bool
	}{
		{name: "none", seconds: nil},
		{name: "zero means none", seconds: ptr.To[int64](0)},
		{name: "negative means none", seconds: ptr.To[int64](-5)},
		{name: "one second", seconds: ptr.To[int64](1), want: start.Add(time.Second), wantOK: true},
		{name: "an hour", seconds: ptr.To[int64](3600), want: start.Add(time.Hour), wantOK: true},
		{name: "at the bound", seconds: ptr.To[int64](batch.MaxActiveDeadlineSeconds),
			want: start.Add(time.Duration(batch.MaxActiveDeadlineSeconds) * time.Second), wantOK: true},
		{name: "beyond the bound is the bound, without overflow", seconds: ptr.To[int64](math.MaxInt64),
			want: start.Add(time.Duration(batch.MaxActiveDeadlineSeconds) * time.Second), wantOK: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := &v1beta1.TrainingJobSpec{RunPolicy: v1beta1.RunPolicy{ActiveDeadlineSeconds: tc.seconds}}
			got, ok := activeDeadline(spec, start)
			if ok != tc.wantOK || !got.Equal(tc.want) {
				t.Errorf("activeDeadline = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestActivePhase(t *testing.T) {
	cases := []struct {
		phase   v1beta1.JobPhase
		started bool
		want    v1beta1.JobPhase
	}{
		{phase: "", started: false, want: v1beta1.JobPending},
		{phase: "", started: true, want: v1beta1.JobRunning},
		{phase: v1beta1.JobPending, started: false, want: v1beta1.JobPending},
		{phase: v1beta1.JobPending, started: true, want: v1beta1.JobRunning},
		// A restart does not take a running job back to Pending.
		{phase: v1beta1.JobRunning, started: false, want: v1beta1.JobRunning},
		{phase: v1beta1.JobRunning, started: true, want: v1beta1.JobRunning},
		{phase: v1beta1.JobResuming, started: false, want: v1beta1.JobResuming},
		{phase: v1beta1.JobResuming, started: true, want: v1beta1.JobRunning},
	}
	for _, tc := range cases {
		if got := activePhase(tc.phase, tc.started); got != tc.want {
			t.Errorf("activePhase(%q, started %v) = %q, want %q", tc.phase, tc.started, got, tc.want)
		}
	}
}
