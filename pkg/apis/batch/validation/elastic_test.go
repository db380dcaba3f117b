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

package validation

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

// TestAdmittedGenericJobScalesOutOnlyPaused: a running elastic GenericJob
// its Kueue queue admitted may scale in, but not out: its pods, told the
// new size, would wait for replicas its Workload has no room for. Paused,
// or not queued, it may.
func TestAdmittedGenericJobScalesOutOnlyPaused(t *testing.T) {
	running := func(admitted bool) *batch.GenericJob {
		j := genericJob(nil, replica("worker", 2, "main"))
		j.Spec.Elastic = &batch.ElasticConfig{Enabled: true, MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](4),
			ExpectedReplicas: ptr.To[int32](2)}
		j.Status.Phase = batch.JobRunning
		if admitted {
			j.Status.Conditions = []metav1.Condition{{Type: batch.ConditionQueued, Status: metav1.ConditionFalse,
				Reason: batch.ReasonAdmitted}}
		}
		return j
	}
	scaled := func(old *batch.GenericJob, n int32, pause bool) *batch.GenericJob {
		j := old.DeepCopy()
		j.Spec.Elastic.ExpectedReplicas = ptr.To(n)
		if pause {
			j.Spec.RunMode = &batch.RunMode{Pause: &batch.PauseMode{Enabled: true}}
		}
		return j
	}
	forbidden := wantErr{field.ErrorTypeForbidden, "spec.elastic.expectedReplicas"}
	for _, tc := range []struct {
		name     string
		admitted bool
		to       int32
		pause    bool
		want     []wantErr
	}{
		{"admitted, out", true, 3, false, []wantErr{forbidden}},
		{"admitted, in", true, 1, false, nil},
		{"admitted, out with a pause", true, 3, true, nil},
		{"not queued, out", false, 3, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := running(tc.admitted)
			expectErrors(t, validateAdmittedScaleOut(scaled(old, tc.to, tc.pause), old), tc.want...)
		})
	}
	paused := running(true)
	paused.Status.Phase = batch.JobPaused
	expectErrors(t, validateAdmittedScaleOut(scaled(paused, 4, false), paused))
}
