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

package e2e

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// TestInPlaceOnNodesThatCannot: the stack's simulated nodes declare no
// node features, so the scheduler would leave an InPlace job's pods, which
// carry a RestartAllContainers rule, Pending there for good. The controller
// replaces them with pods built as under Recreate and says why; the job
// runs, and restarts as under Recreate: the failed worker alone is
// replaced, and counted.
func TestInPlaceOnNodesThatCannot(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "inplace-nodes")
	ref := f.Create(framework.NewPyTorchJob("flaky").WithReplicas("master", 1).WithReplicas("worker", 1).
		WithRestartPolicy("worker", v1beta1.RestartPolicyOnFailure).RestartStrategy(v1beta1.RestartStrategyInPlace).
		Forever("master").ReplicaExitCode("worker", 1).ReplicaRunFor("worker", "1s").BackoffLimit(1))
	job := f.WaitForPhase(ref, v1beta1.JobFailed)
	checkFailed(t, job, "BackoffLimitExceeded")
	st := job.JobStatus()
	if st.BackoffCount != 1 {
		t.Errorf("backoffCount %d, want the one restart before the limit", st.BackoffCount)
	}
	c := meta.FindStatusCondition(st.Conditions, v1beta1.ConditionRestartedInPlace)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1beta1.ReasonNoNodeRestartsInPlace ||
		!strings.Contains(c.Message, "RestartAllContainersOnContainerExits") {
		t.Errorf("RestartedInPlace condition %+v, want False NoNodeRestartsInPlace naming the feature the nodes lack", c)
	}
	if msg := eventMessage(f, ref, v1beta1.ReasonNoNodeRestartsInPlace); !strings.Contains(msg, "made as under Recreate") {
		t.Errorf("NoNodeRestartsInPlace event %q, want one saying the pods are made as under Recreate", msg)
	}
	if msg := eventMessage(f, ref, "Restarting"); !strings.Contains(msg, "restarting it (restart policy OnFailure") {
		t.Errorf("Restarting event %q, want the failed worker replaced alone, as under Recreate", msg)
	}
	// The worker's pods were scheduled and failed twice, in one attempt.
	if n := len(st.Attempts); n != 1 || st.Attempts[0].FailedReplicaCount != 2 {
		t.Errorf("status.attempts %+v, want one attempt in which the worker failed twice", st.Attempts)
	}
}
