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

package cli

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// TestClearSuspectNodes: the verb empties status.suspectNodes with a merge
// patch of the status subresource, and says which nodes it let back in;
// status shows them before.
func TestClearSuspectNodes(t *testing.T) {
	job := runningPyTorchJob()
	job.Status.SuspectNodes = []v1beta1.SuspectNode{{Name: "real-node2", Reason: v1beta1.SuspectNodePreflightFailed,
		Message: "the preflight check of resnet-worker-0 exited with 1", Time: metav1.NewTime(testNow.Add(-2 * time.Minute))}}
	f := newFixture(t, job)
	if out := f.mustRun("status", "resnet"); !strings.Contains(out, "Suspect nodes:   real-node2  PreflightFailed, 2m") {
		t.Errorf("status does not show the suspect node:\n%s", out)
	}
	f.out.Reset()
	if out := f.mustRun("clear-suspect-nodes", "pj/resnet"); out != "pj/resnet: suspect nodes cleared (real-node2)\n" {
		t.Errorf("output %q", out)
	}
	var patched bool
	for _, a := range f.training.Actions() {
		if p, ok := a.(clienttesting.PatchActionImpl); ok {
			patched = p.Subresource == "status" && string(p.Patch) == `{"status":{"suspectNodes":null}}`
		}
	}
	if !patched {
		t.Errorf("no merge patch of the status emptying suspectNodes in %v", f.training.Actions())
	}
	stored, err := f.training.BatchV1beta1().PyTorchTrainingJobs("default").Get(t.Context(), "resnet", metav1.GetOptions{})
	if err != nil || len(stored.Status.SuspectNodes) != 0 {
		t.Errorf("stored suspects %+v (%v), want none", stored.Status.SuspectNodes, err)
	}
}
