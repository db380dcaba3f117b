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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/podbuilder"
)

// TestStartOrderPolicy: the waiting replicas are released once every
// leader's pod is Ready, and only those still waiting.
func TestStartOrderPolicy(t *testing.T) {
	pod := func(name string, ready bool, gate string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if gate != "" {
			p.Annotations = map[string]string{podbuilder.AnnotationStartupGate: gate}
		}
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
		return p
	}
	leaving := func(p *corev1.Pod) *corev1.Pod {
		now := metav1.Now()
		p.DeletionTimestamp = &now
		return p
	}
	master := pod("j-master-0", true, "")
	waiting := pod("j-worker-0", false, podbuilder.StartupGateClosed)
	released := pod("j-worker-1", false, podbuilder.StartupGateOpen)
	cases := map[string]struct {
		in   startGatesInput
		want startGates
		// release are the names of the pods to release.
		release []string
	}{
		"the leader is Ready: the waiting workers are released": {
			in:      startGatesInput{leaders: []*corev1.Pod{master}, pods: []*corev1.Pod{master, waiting, released}},
			want:    startGates{open: true},
			release: []string{"j-worker-0"},
		},
		"the leader is not Ready: all wait": {
			in: startGatesInput{leaders: []*corev1.Pod{pod("j-master-0", false, "")}, pods: []*corev1.Pod{waiting}},
		},
		"a leader without a pod: all wait": {
			in: startGatesInput{leaders: []*corev1.Pod{master, nil}, pods: []*corev1.Pod{master, waiting}},
		},
		"a leader on its way out: all wait": {
			in: startGatesInput{leaders: []*corev1.Pod{leaving(pod("j-master-0", true, ""))}, pods: []*corev1.Pod{waiting}},
		},
		"a waiting pod on its way out is not released": {
			in:   startGatesInput{leaders: []*corev1.Pod{master}, pods: []*corev1.Pod{leaving(pod("j-worker-0", false, podbuilder.StartupGateClosed))}},
			want: startGates{open: true},
		},
		"a kind without leaders: open": {
			in:      startGatesInput{pods: []*corev1.Pod{waiting}},
			want:    startGates{open: true},
			release: []string{"j-worker-0"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := decideStartGates(tc.in)
			if got.open != tc.want.open || !slices.Equal(names(got.release), tc.release) {
				t.Errorf("decideStartGates = open %v, release %v; want open %v, release %v",
					got.open, names(got.release), tc.want.open, tc.release)
			}
		})
	}
}
