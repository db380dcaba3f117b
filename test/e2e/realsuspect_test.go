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
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// TestRealNodesPreflightLeavesANodeOut: a job whose preflight check fails
// on real-node2 (the node it prefers) makes real-node2 suspect, and its
// replica is created again on real-node and trains. Meanwhile another job
// pinned to real-node2 runs there: a suspect node is the job's own
// business. kubectl training clear-suspect-nodes empties the list, and the
// failed check's log is kept in the job's attempt.
func TestRealNodesPreflightLeavesANodeOut(t *testing.T) {
	f := onRealNodes(t, "real-preflight", 2)
	applyJob(f, framework.NewPyTorchJob("checked").WithReplicas("master", 1).BackoffLimit(1).
		Preflight("sh", "-c", `echo "checking $TENSORSTACK_NODE_NAME"; test "$TENSORSTACK_NODE_NAME" != real-node2`).
		GracePeriod(1).PreferNode("real-node2").Image(framework.TrainingImage).Requests("50m", "32Mi").
		// Trains until the test lets it finish.
		Command("sh", "-c", `echo "training on $(hostname)"; until [ -e /tmp/done ]; do sleep 0.2; done`))
	ref := f.Ref(framework.KindPyTorch, "checked")
	job := f.WaitForJob(ref, "real-node2 suspect and the replica running", realNodeTimeout, func(job v1beta1.TrainingJob) (bool, error) {
		st := job.JobStatus()
		return len(st.SuspectNodes) == 1 && st.Phase == v1beta1.JobRunning, nil
	})
	st := job.JobStatus()
	if n := st.SuspectNodes[0]; n.Name != "real-node2" || n.Reason != v1beta1.SuspectNodePreflightFailed {
		t.Errorf("suspect node %+v, want real-node2 for its failed preflight check", n)
	}
	pods := f.Pods(ref)
	if len(pods) == 0 {
		t.Fatalf("the running job has no pod")
	}
	if len(pods) != 1 || pods[0].Spec.NodeName != "real-node" {
		t.Fatalf("%d pods, on %s first: want the one replica on real-node", len(pods), pods[0].Spec.NodeName)
	}
	if st.BackoffCount != 1 {
		t.Errorf("backoffCount %d, want the node's check counted once", st.BackoffCount)
	}
	a := st.Attempts[len(st.Attempts)-1]
	if len(a.FailedReplicas) != 1 || a.FailedReplicas[0].Node != "real-node2" ||
		!strings.Contains(a.FailedReplicas[0].Logs, "checking real-node2") {
		t.Errorf("attempt %+v, want the check that failed on real-node2 with its log", a)
	}

	// Another job still uses real-node2.
	applyJob(f, framework.NewPyTorchJob("pinned").WithReplicas("master", 1).NodeSelector(corev1.LabelHostname, "real-node2").
		Image(framework.TrainingImage).Command("sh", "-c", `echo "training on real-node2"`).Requests("50m", "32Mi"))
	waitSucceeded(f, f.Ref(framework.KindPyTorch, "pinned"))

	r := f.KubectlTraining("status", ref.KubectlName())
	if r.Err != nil || !strings.Contains(r.Stdout, "real-node2  PreflightFailed") {
		t.Errorf("kubectl training status does not show real-node2 as suspect: %s", r)
	}
	if r := f.KubectlTraining("clear-suspect-nodes", ref.KubectlName()); r.Err != nil || !strings.Contains(r.Stdout, "suspect nodes cleared (real-node2)") {
		t.Errorf("clear-suspect-nodes: %s", r)
	}
	if got := f.MustGetJob(ref).JobStatus().SuspectNodes; len(got) != 0 {
		t.Errorf("suspect nodes %+v after clearing them, want none", got)
	}
	f.MustKubectl("exec", pods[0].Name, "-c", "pytorch", "--", "touch", "/tmp/done")
	waitSucceeded(f, ref)
	events, err := f.JobEvents(f.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(events, func(e corev1.Event) bool {
		return e.Reason == "NodeSuspect" && strings.Contains(e.Message, "real-node2")
	}) {
		t.Errorf("no NodeSuspect event naming real-node2")
	}
}
