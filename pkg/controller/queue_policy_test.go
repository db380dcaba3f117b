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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/kueue"
)

// TestQueueWaitPolicy: what the Queued condition of a waiting job says, by
// what holds it.
func TestQueueWaitPolicy(t *testing.T) {
	workload := &kueuev1beta2.Workload{ObjectMeta: metav1.ObjectMeta{Name: "pj-j"}}
	topologyWorkload := workload.DeepCopy()
	topologyWorkload.Spec.PodSets = []kueuev1beta2.PodSet{{Name: "worker",
		TopologyRequest: &kueuev1beta2.PodSetTopologyRequest{Required: ptr.To("cloud.provider.com/rack")}}}
	cases := map[string]struct {
		hold    *queueHold
		state   *kueue.State
		podSets int
		reason  string
		// message is a part the condition's message must hold.
		message string
	}{
		"held: the hold says why": {
			hold:   &queueHold{v1beta1.ReasonQueueingUnavailable, "Kueue cannot be used now: not served"},
			reason: v1beta1.ReasonQueueingUnavailable, message: "not served",
		},
		"evicted: Kueue's reason": {
			state:  &kueue.State{Workload: workload, Evicted: &metav1.Condition{Reason: "Preempted", Message: "preempted by a higher priority"}},
			reason: "Preempted", message: "evicted by Kueue: preempted by a higher priority",
		},
		"a prebuilt Workload that does not fit": {
			state:  &kueue.State{Workload: workload, Mismatch: "pod set worker: count 2, the job has 3"},
			reason: v1beta1.ReasonPrebuiltWorkloadMismatch, message: "count 2, the job has 3",
		},
		"too many pod sets for a Workload": {
			state: &kueue.State{}, podSets: kueue.MaxPodSets + 1,
			reason: ReasonTooManyPodSets, message: "at most",
		},
		"no Workload yet": {
			state: &kueue.State{}, podSets: 2,
			reason: v1beta1.ReasonWaitingForAdmission, message: "waiting for its Workload in queue team-a",
		},
		"waiting for quota, with the topology it asks for": {
			state:  &kueue.State{Workload: topologyWorkload, Waiting: &metav1.Condition{Message: "insufficient quota"}},
			reason: v1beta1.ReasonWaitingForAdmission, message: "insufficient quota (the job asks for topology level cloud.provider.com/rack)",
		},
		"quota reserved, admission checks pending": {
			state:  &kueue.State{Workload: workload},
			reason: v1beta1.ReasonWaitingForAdmission, message: "waiting for admission checks",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			reason, message := queueWait(tc.hold, tc.state, "team-a", tc.podSets)
			if reason != tc.reason || !strings.Contains(message, tc.message) {
				t.Errorf("queueWait = %q, %q; want %q and a message with %q", reason, message, tc.reason, tc.message)
			}
		})
	}
}
