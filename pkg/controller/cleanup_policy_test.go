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

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

func TestCleanUpRemoves(t *testing.T) {
	running := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	pending := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}
	succeeded := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}
	failed := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed}}
	deleting := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: ptr.To(metav1.Now())},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	all, unfinished, none := v1beta1.CleanUpPolicyAll, v1beta1.CleanUpPolicyUnfinished, v1beta1.CleanUpPolicyNone
	cases := []struct {
		name        string
		policy      v1beta1.CleanUpPolicy
		stopRunning bool
		pod         *corev1.Pod
		want        bool
	}{
		{"All: a running pod", all, false, running, true},
		{"All: a succeeded pod", all, false, succeeded, true},
		{"All: a failed pod", all, false, failed, true},
		{"Unfinished: a running pod", unfinished, false, running, true},
		{"Unfinished: a pending pod", unfinished, false, pending, true},
		{"Unfinished: a succeeded pod stays", unfinished, false, succeeded, false},
		{"Unfinished: a failed pod stays", unfinished, false, failed, false},
		{"None: a running pod stays", none, false, running, false},
		{"None: a finished pod stays", none, false, failed, false},
		{"None, out of time: a running pod stops", none, true, running, true},
		{"None, out of time: a finished pod stays", none, true, succeeded, false},
		{"a pod already going is left alone", all, true, deleting, false},
	}
	for _, tc := range cases {
		if got := cleanUpRemoves(tc.policy, tc.stopRunning, tc.pod); got != tc.want {
			t.Errorf("%s: cleanUpRemoves = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestTTLExpiry(t *testing.T) {
	done := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		ttl    *int32
		want   time.Time
		wantOK bool
	}{
		{"no TTL keeps the job", nil, time.Time{}, false},
		{"zero deletes at once", ptr.To[int32](0), done, true},
		{"a minute", ptr.To[int32](60), done.Add(time.Minute), true},
		{"negative counts as zero", ptr.To[int32](-5), done, true},
	}
	for _, tc := range cases {
		got, ok := ttlExpiry(tc.ttl, done)
		if ok != tc.wantOK || !got.Equal(tc.want) {
			t.Errorf("%s: ttlExpiry = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.wantOK)
		}
	}
}
