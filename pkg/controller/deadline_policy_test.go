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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// TestDeadlinePolicy: the job fails once it has been active for its
// activeDeadlineSeconds, and is looked at again when they run out.
func TestDeadlinePolicy(t *testing.T) {
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	started := metav1.NewTime(start)
	minute := &v1beta1.TrainingJobSpec{RunPolicy: v1beta1.RunPolicy{ActiveDeadlineSeconds: ptr.To[int64](60)}}
	cases := map[string]struct {
		spec      *v1beta1.TrainingJobSpec
		startTime *metav1.Time
		now       time.Time
		want      deadlineDecision
	}{
		"no deadline: nothing to do": {
			spec: &v1beta1.TrainingJobSpec{}, startTime: &started, now: start.Add(24 * time.Hour),
		},
		"before the deadline: come back when it falls": {
			spec: minute, startTime: &started, now: start.Add(59 * time.Second),
			want: deadlineDecision{comeBack: start.Add(time.Minute)},
		},
		"not started yet: the deadline counts from now": {
			spec: minute, now: start,
			want: deadlineDecision{comeBack: start.Add(time.Minute)},
		},
		"at the deadline: the job fails": {
			spec: minute, startTime: &started, now: start.Add(time.Minute),
			want: deadlineDecision{exceeded: true, message: "the job was active longer than activeDeadlineSeconds (60s)"},
		},
		"long past it: the job fails": {
			spec: minute, startTime: &started, now: start.Add(time.Hour),
			want: deadlineDecision{exceeded: true, message: "the job was active longer than activeDeadlineSeconds (60s)"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := decideDeadline(tc.spec, tc.startTime, tc.now)
			if got.exceeded != tc.want.exceeded || got.message != tc.want.message || !got.comeBack.Equal(tc.want.comeBack) {
				t.Errorf("decideDeadline = %+v, want %+v", got, tc.want)
			}
		})
	}
}
