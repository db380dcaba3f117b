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

// TestRealNodeAttemptsOutliveThePods: a job whose worker exits 3 every time,
// under a RestartJob rule and backoffLimit 2, is restarted twice and then
// fails. Its status keeps three attempts, each ended with its reason, and
// in each the failed worker with its node, exit code and the last lines of
// its log, readable in the status and in kubectl training status after
// every pod is gone.
func TestRealNodeAttemptsOutliveThePods(t *testing.T) {
	f := onRealNode(t, "real-attempts")
	applyManifest(f, `
apiVersion: batch.tensorstack.dev/v1beta1
kind: PyTorchTrainingJob
metadata:
  name: attempts
spec:
  runPolicy:
    backoffLimit: 2
    cleanUpPolicy: All
    failurePolicy:
      rules:
      - action: RestartJob
        onExitCodes: {operator: In, values: [3]}
  replicaSpecs:
  - type: master
    replicas: 1
    template:
      spec:
        terminationGracePeriodSeconds: 1
        containers:
        - name: pytorch
          image: localhost/tensorstack/training:v1
          command: [python3, -c, "import time; time.sleep(600)"]
          resources:
            requests: {cpu: 50m, memory: 32Mi}
  - type: worker
    replicas: 1
    template:
      spec:
        containers:
        - name: pytorch
          image: localhost/tensorstack/training:v1
          command:
          - python3
          - -c
          - |
            import socket, sys
            # The pod's hostname is the replica's: worker-0.
            for step in range(1, 4):
                print("rank=1 step=%d on %s" % (step, socket.gethostname()), flush=True)
            print("rank=1 giving up: the data shard is unreadable", file=sys.stderr, flush=True)
            sys.exit(3)
          resources:
            requests: {cpu: 50m, memory: 32Mi}
`)
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
