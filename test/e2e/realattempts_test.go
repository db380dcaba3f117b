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

	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// failingWorkerScript logs three steps and a last line on stderr, then
// exits 3.
const failingWorkerScript = `import socket, sys
# The pod's hostname is the replica's: worker-0.
for step in range(1, 4):
    print("rank=1 step=%d on %s" % (step, socket.gethostname()), flush=True)
print("rank=1 giving up: the data shard is unreadable", file=sys.stderr, flush=True)
sys.exit(3)
`

// TestRealNodeAttemptsOutliveThePods: a job whose worker exits 3 every time,
// under a RestartJob rule and backoffLimit 2, is restarted twice and then
// fails. Its status keeps three attempts, each ended with its reason, and
// in each the failed worker with its node, exit code and the last lines of
// its log, readable in the status and in kubectl training status after
// every pod is gone.
func TestRealNodeAttemptsOutliveThePods(t *testing.T) {
	f := onRealNode(t, "real-attempts")
	applyJob(f, framework.NewPyTorchJob("attempts").WithReplicas("master", 1).WithReplicas("worker", 1).
		BackoffLimit(2).CleanUp(v1beta1.CleanUpPolicyAll).
		FailurePolicy(v1beta1.FailurePolicyRule{Action: v1beta1.FailurePolicyActionRestartJob,
			OnExitCodes: &v1beta1.FailurePolicyOnExitCodes{Operator: v1beta1.FailurePolicyOnExitCodesOpIn, Values: []int32{3}}}).
		Image(framework.TrainingImage).Requests("50m", "32Mi").
		ReplicaGracePeriod("master", 1).ReplicaCommand("master", "python3", "-c", "import time; time.sleep(600)").
		ReplicaCommand("worker", "python3", "-c", failingWorkerScript))
	ref := f.Ref(framework.KindPyTorch, "attempts")
	f.WaitForPhase(ref, v1beta1.JobFailed)
	f.WaitForNoPods(ref, framework.Timeout)
	st := f.MustGetJob(ref).JobStatus()
	if len(st.Attempts) != 3 || st.AttemptCount != 3 {
		t.Fatalf("%d attempts (count %d), want 3: %+v", len(st.Attempts), st.AttemptCount, st.Attempts)
	}
	const lastLine = "rank=1 giving up: the data shard is unreadable"
	wantReasons := []string{"RestartJob", "RestartJob", "BackoffLimitExceeded"}
	for i, a := range st.Attempts {
		if a.EndTime == nil || a.Reason != wantReasons[i] || a.Message == "" {
			t.Errorf("attempt %d ended at %v with %q (%q), want %s and a message", a.Number, a.EndTime, a.Reason, a.Message, wantReasons[i])
		}
		if len(a.FailedReplicas) != 1 {
			t.Errorf("attempt %d lists failed replicas %+v, want the worker", a.Number, a.FailedReplicas)
			continue
		}
		w := a.FailedReplicas[0]
		if w.Name != "attempts-worker-0" || ptr.Deref(w.ExitCode, -1) != 3 || !strings.HasPrefix(w.Node, "real-node") ||
			!strings.Contains(w.Logs, "rank=1 step=3 on worker-0") || !strings.Contains(w.Logs, lastLine) {
			t.Errorf("attempt %d failed replica %+v: want attempts-worker-0 on a real node, exit code 3, its last log lines", a.Number, w)
		}
	}
	r := f.KubectlTraining("status", ref.KubectlName())
	if r.Err != nil || !strings.Contains(r.Stdout, "Attempts: 3") || strings.Count(r.Stdout, "| "+lastLine) != 3 {
		t.Errorf("kubectl training status shows no three attempts with the worker's last line: %s", r)
	}
}
