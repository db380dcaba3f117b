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
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/test/e2e/framework"
)

var mpiRankLine = regexp.MustCompile(`rank=(\d) size=2 host=(\S+) sum=3`)

// TestRealNodesMPIAllReduce: the MPI example runs for real on the two real
// nodes: mpirun on the launcher reaches both workers over SSH with the
// job's key pair and hostfile, one rank on each node (the example keeps
// its workers apart); mpi4py's allreduce
// gives both the right sum, and the ranks' output reaches the launcher's
// log, which kubectl training logs shows.
func TestRealNodesMPIAllReduce(t *testing.T) {
	f := onRealNodes(t, "real-mpi", 2)
	applyExample(f, "mpi.yaml")
	ref := f.Ref(framework.KindMPI, "mpi-allreduce")
	workers := f.WaitForPods(ref, "both workers placed", realNodeTimeout, func(pods []corev1.Pod) (bool, error) {
		placed := 0
		for _, p := range pods {
			if strings.Contains(p.Name, "-worker-") && p.Spec.NodeName != "" {
				placed++
			}
		}
		return placed == 2, nil
	})
	nodes := map[string]bool{}
	for _, p := range workers {
		if strings.Contains(p.Name, "-worker-") {
			nodes[p.Spec.NodeName] = true
		}
	}
	if len(nodes) != 2 {
		t.Errorf("the workers are on %v, want two nodes", nodes)
	}
	checkOnRealNode(t, workers)
	waitSucceeded(f, ref)

	r := f.KubectlTraining("logs", ref.KubectlName())
	if r.Err != nil {
		t.Fatalf("kubectl training logs: %s", r)
	}
	hosts := map[string]string{}
	for _, m := range mpiRankLine.FindAllStringSubmatch(r.Stdout, -1) {
		hosts[m[1]] = m[2]
	}
	if len(hosts) != 2 {
		t.Fatalf("ranks that reported the sum 3 of 2: %v, want 0 and 1:\n%s", hosts, r.Stdout)
	}
	if hosts["0"] == hosts["1"] {
		t.Errorf("both ranks ran on %s, want one per worker", hosts["0"])
	}
	for _, want := range []string{"rank=0 round=5 mean=0.500", "rank=1 round=5 mean=0.500"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("the launcher's log lacks %q:\n%s", want, r.Stdout)
		}
	}
	t.Logf("ranks on %v; the workers on %v", hosts, nodes)
}
