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
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// Jobs made from the runtimes the training-apiserver ships, on the real
// nodes: the person who trains gives a program and a node count, never a
// pod template.

// followTimeout bounds a `kubectl training run --follow` on the real nodes.
const followTimeout = realNodeTimeout + time.Minute

// exampleScript is the path of one of the examples' scripts.
func exampleScript(name string) string {
	return filepath.Join("..", "..", "artifacts", "examples", "scripts", name)
}

// exitCode is the exit code of a kubectl run, 0 when it succeeded.
func exitCode(r framework.KubectlResult) int {
	var exit *exec.ExitError
	if errors.As(r.Err, &exit) {
		return exit.ExitCode()
	}
	if r.Err != nil {
		return -1
	}
	return 0
}

// TestRealNodesRunScripts: `kubectl training run --file` of the mpi4py and
// XGBoost examples with the shipped mpi and xgboost runtimes, across both
// real nodes, follows each to its end and exits 0; a program that exits 3
// makes it exit 1 and say why.
func TestRealNodesRunScripts(t *testing.T) {
	f := onRealNodes(t, "real-run", 2)

	r := f.KubectlTrainingFor(followTimeout, "run", "allreduce", "--runtime", "mpi", "--nodes", "2",
		"--file", exampleScript("mpi_allreduce.py"), "--follow")
	if exitCode(r) != 0 {
		t.Fatalf("run of the mpi4py script: exit %d\n%s\n%s", exitCode(r), r, f.DumpJob(f.Ref(framework.KindMPI, "allreduce")))
	}
	// Every rank's line, through the launcher's log, which --follow streamed:
	// two ranks, each holding the sum 1+2. mpirun may join two ranks'
	// output on one line, so the lines are not anchored.
	if n := len(regexp.MustCompile(`rank=\d size=2 host=\S+ sum=3`).FindAllString(r.Stdout, -1)); n != 2 {
		t.Errorf("the followed log shows %d ranks with the sum 3, want 2:\n%s", n, r.Stdout)
	}
	mpi := f.MustGetJob(f.Ref(framework.KindMPI, "allreduce"))
	if rt := mpi.JobStatus().Runtime; rt == nil || rt.Name != "mpi" || rt.Kind != "ClusterTrainingRuntime" {
		t.Errorf("status.runtime %+v, want the mpi ClusterTrainingRuntime", rt)
	}
	if got := *mpi.CommonSpec().ReplicaSpecs[1].Replicas; got != 2 {
		t.Errorf("%d workers, want --nodes 2", got)
	}

	r = f.KubectlTrainingFor(followTimeout, "run", "boost", "--runtime", "xgboost", "--nodes", "2",
		"--env", "ROUNDS=10", "--file", exampleScript("xgboost_train.py"), "--follow")
	if exitCode(r) != 0 {
		t.Fatalf("run of the XGBoost script: exit %d\n%s\n%s", exitCode(r), r, f.DumpJob(f.Ref(framework.KindXGBoost, "boost")))
	}
	for _, p := range f.Pods(f.Ref(framework.KindXGBoost, "boost")) {
		if p.Spec.NodeName == "" || !strings.HasPrefix(p.Spec.NodeName, "real-") {
			t.Errorf("pod %s ran on %q, not a real node", p.Name, p.Spec.NodeName)
		}
	}

	r = f.KubectlTrainingFor(followTimeout, "run", "fails", "--runtime", "generic", "--nodes", "1", "--follow", "--",
		"python3", "-c", "import sys; print('about to fail'); sys.exit(3)")
	if code := exitCode(r); code != 1 || !strings.Contains(r.Stdout, "about to fail") || !strings.Contains(r.Stderr, "3") {
		t.Errorf("run of a program that exits 3: exit %d, want 1 with the reason naming the exit code\n%s", code, r)
	}
	if job := f.MustGetJob(f.Ref(framework.KindGeneric, "fails")); job.JobStatus().Phase != v1beta1.JobFailed {
		t.Errorf("phase %s, want Failed", job.JobStatus().Phase)
	}
}

// TestRealNodeRuntimeCheckpointResume: a job made from the shipped
// torch-distributed runtime, given only a command, a node count and, as its
// own, where its replicas run, is paused with a checkpoint and resumed from
// it: the runtime's checkpoint contract is the job's.
func TestRealNodeRuntimeCheckpointResume(t *testing.T) {
	f := onRealNode(t, "real-runtime-ckpt")
	nodes, err := f.Kube.CoreV1().Nodes().List(f.Context(), metav1.ListOptions{LabelSelector: realNodeLabel + "=real"})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("real nodes: %v (%d)", err, len(nodes.Items))
	}
	// Both replicas on one node, whose disk holds the runtime's checkpoint
	// directory; the job gives that in replica specs merged over the
	// runtime's.
	node := nodes.Items[0].Name
	pinned := fmt.Sprintf(`{"spec": {"nodeSelector": {"kubernetes.io/hostname": %q}}}`, node)
	manifest := fmt.Sprintf(`apiVersion: batch.tensorstack.dev/v1beta1
kind: PyTorchTrainingJob
metadata:
  name: ckpt
  namespace: %s
spec:
  runtimeRef: {name: torch-distributed}
  trainer:
    numNodes: 2
    command: [python3, pytorch_ddp.py]
    env:
    - {name: STEPS, value: "100"}
    - {name: STEP_SECONDS, value: "0.5"}
    resourcesPerNode:
      requests: {cpu: 250m, memory: 512Mi}
  replicaSpecs:
  - {type: master, template: %s}
  - {type: worker, template: %s}
`, f.Namespace, pinned, pinned)
	if r := f.KubectlInput(manifest, "apply", "-f", "-"); r.Err != nil {
		t.Fatalf("kubectl apply: %s", r)
	}
	ref := f.Ref(framework.KindPyTorch, "ckpt")
	job := f.MustGetJob(ref)
	if rt := job.JobStatus().Runtime; rt == nil || rt.Name != "torch-distributed" || job.CommonSpec().RunPolicy.Checkpoint == nil {
		t.Fatalf("status.runtime %+v, checkpoint %+v: want the runtime and its contract", rt, job.CommonSpec().RunPolicy.Checkpoint)
	}
	waitForStep(f, ref, 15)
	f.MustAction(ref, "pause", "")
	paused := f.WaitForPhase(ref, v1beta1.JobPaused)
	latest := paused.JobStatus().Checkpoint
	if latest == nil || latest.Latest == nil || latest.Latest.Step == nil {
		t.Fatalf("status.checkpoint %+v: want the checkpoint written for the pause", latest)
	}
	step := *latest.Latest.Step
	if !strings.HasPrefix(latest.Latest.Path, "/checkpoints/") {
		t.Errorf("checkpoint path %s, want one under the runtime's /checkpoints", latest.Latest.Path)
	}
	f.MustAction(ref, "resume", "")
	waitSucceeded(f, ref)
	log := podLog(f, ref.Name+"-master-0") // rank 0
	m := resumedLine.FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("rank 0 never resumed:\n%s", log)
	}
	if got, _ := strconv.ParseInt(m[2], 10, 64); got != step {
		t.Errorf("resumed from step %d, want the pause's checkpoint at step %d", got, step)
	}
	after := regexp.MustCompile(fmt.Sprintf(`(?m)^rank=0 step=%d `, step+1))
	if !after.MatchString(log[strings.Index(log, m[0]):]) {
		t.Errorf("no step %d after the resume:\n%s", step+1, log)
	}
	if a := f.MustGetJob(ref).JobStatus().Accounting; a == nil || ptr.Deref(a.Recent[0].ResumeStep, -1) != step {
		t.Errorf("accounting %+v, want the pause resuming at %d", a, step)
	}
}
