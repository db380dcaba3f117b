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
	"unicode/utf8"

	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// randomBytesScript writes 3,000 random bytes to /dev/termination-log and
// 12,000 to its log in lines of 600, then a last line of text, and exits 1.
// Its last 20 lines (what a failed replica's tail asks for) are over four
// times the tail's 2,048 bytes, where a read cut by the kubelet
// (PodLogOptions.LimitBytes) ends before the last line.
const randomBytesScript = `import os, sys
with open("/dev/termination-log", "wb") as f:
    f.write(os.urandom(3000))
out = sys.stdout.buffer
for _ in range(20):
    out.write(os.urandom(700).replace(b"\n", b"")[:600] + b"\n")
out.write(b"x" * 1500 + b" the last line: giving up\n")
out.flush()
sys.exit(1)
`

// TestRealNodeOutputThatIsNotText: a replica whose termination message and
// log are random bytes fails its job, and the job's status keeps what it
// can of them as text: its attempt lists the replica with its exit code and
// its log's end, the real last line included.
func TestRealNodeOutputThatIsNotText(t *testing.T) {
	f := onRealNode(t, "real-text")
	applyJob(f, framework.NewPyTorchJob("bytes").WithReplicas("master", 1).BackoffLimit(0).
		Image(framework.TrainingImage).Requests("50m", "32Mi").
		ReplicaCommand("master", "python3", "-c", randomBytesScript))
	ref := f.Ref(framework.KindPyTorch, "bytes")
	f.WaitForPhase(ref, v1beta1.JobFailed)
	st := f.MustGetJob(ref).JobStatus()
	if len(st.Attempts) == 0 || len(st.Attempts[len(st.Attempts)-1].FailedReplicas) != 1 {
		t.Fatalf("attempts %+v, want the master in the last one's failed replicas", st.Attempts)
	}
	m := st.Attempts[len(st.Attempts)-1].FailedReplicas[0]
	if m.Name != "bytes-master-0" || ptr.Deref(m.ExitCode, -1) != 1 {
		t.Errorf("failed replica %+v, want bytes-master-0 with exit code 1", m)
	}
	if !utf8.ValidString(m.Logs) || len(m.Logs) > batch.MaxAttemptLogBytes || !strings.HasSuffix(m.Logs, " the last line: giving up\n") {
		t.Errorf("failed replica's log tail (%d bytes, UTF-8 %t) %q: want at most %d bytes of text ending with its last line",
			len(m.Logs), utf8.ValidString(m.Logs), m.Logs, batch.MaxAttemptLogBytes)
	}
	for _, task := range st.Tasks {
		for _, r := range task.ReplicaStatus {
			for _, c := range r.Containers {
				if term := c.LastTermination; term != nil && (!utf8.ValidString(term.Message) || len(term.Message) > batch.MaxTerminationMessageBytes) {
					t.Errorf("container %s's termination message (%d bytes) is not text within %d bytes: %q",
						c.Name, len(term.Message), batch.MaxTerminationMessageBytes, term.Message)
				}
			}
		}
	}
}
