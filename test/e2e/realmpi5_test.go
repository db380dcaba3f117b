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
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"tensorstack.dev/training/internal/skips"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"

	"tensorstack.dev/training/test/e2e/framework"
)

// mpi5Image is the training image with Debian trixie's Open MPI 5
// (hack/build-node-images.sh, NODE_IMAGE_MPI5), and mpi5Archive its archive,
// which a real node imports when it is built.
const (
	mpi5Image   = "localhost/tensorstack/training-mpi5:v1"
	mpi5Archive = "_output/images/training-mpi5.tar"
)

var mpiLibraryLine = regexp.MustCompile(`rank=(\d) library=(.*)`)

// TestRealNodesMPI5AllReduce: the MPI example with Open MPI 5, whose mpirun
// starts the ranks through PRRTE and reads only PRRTE's variables for the
// hostfile, the ssh options and full host names: each rank runs on a worker
// of its own, on two real nodes, and none on the launcher. Told only Open
// MPI 4's variables, mpirun runs both ranks on the launcher and the job
// still succeeds; the hosts the ranks print tell.
func TestRealNodesMPI5AllReduce(t *testing.T) {
	f := onRealNodes(t, "real-mpi5", 2)
	if _, err := os.Stat(filepath.Join(f.Env.RepoRoot, mpi5Archive)); err != nil {
		skips.Test(t, "test-e2e", "no Open MPI 5 training image ("+mpi5Archive+"): make test-build, or NODE_IMAGE_MPI5=1 make node, "+
			"builds it, and the real nodes import it when they start", skips.RequireRealNodes)
	}
	data, err := os.ReadFile(filepath.Join(f.Env.RepoRoot, "artifacts", "examples", "mpi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	job := &v1beta1.MPIJob{}
	if err := yaml.Unmarshal(data, job); err != nil {
		t.Fatal(err)
	}
	job.Name, job.Namespace = "mpi5-allreduce", f.Namespace
	for i := range job.Spec.ReplicaSpecs {
		spec := &job.Spec.ReplicaSpecs[i]
		spec.Template.Spec.Containers[0].Image = mpi5Image
		if a := spec.Template.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
			a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchLabels[v1beta1.LabelJobName] = job.Name
		}
	}
	if err := f.CreateJob(f.Context(), job); err != nil {
		t.Fatal(err)
	}
	ref := f.Ref(framework.KindMPI, job.Name)
	pods := f.WaitForPods(ref, "every replica placed", realNodeTimeout, func(pods []corev1.Pod) (bool, error) {
		placed := 0
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				placed++
			}
		}
		return placed == 3, nil
	})
	checkOnRealNode(t, pods)
	// A rank prints its pod's hostname (worker-0, launcher-0): where it ran.
	nodeOf := map[string]string{}
	workerNodes := map[string]bool{}
	for _, p := range pods {
		nodeOf[p.Spec.Hostname] = p.Spec.NodeName
		if strings.Contains(p.Name, "-worker-") {
			workerNodes[p.Spec.NodeName] = true
		}
	}
	if len(workerNodes) != 2 {
		t.Fatalf("the workers are on %v, want two nodes", workerNodes)
	}
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
	rankNodes := map[string]bool{}
	for rank, host := range hosts {
		if !strings.HasPrefix(host, "worker-") {
			t.Errorf("rank %s ran on %s (node %q), want a worker: mpirun did not read the hostfile", rank, host, nodeOf[host])
			continue
		}
		rankNodes[nodeOf[host]] = true
	}
	if hosts["0"] == hosts["1"] {
		t.Errorf("both ranks ran on %s, want one per worker", hosts["0"])
	}
	for node := range workerNodes {
		if !rankNodes[node] {
			t.Errorf("no rank ran on node %s, a worker's; the ranks ran on %v (hosts %v)", node, rankNodes, hosts)
		}
	}
	libraries := map[string]string{}
	for _, m := range mpiLibraryLine.FindAllStringSubmatch(r.Stdout, -1) {
		libraries[m[1]] = m[2]
	}
	for _, rank := range []string{"0", "1"} {
		if !strings.HasPrefix(libraries[rank], "Open MPI v5") {
			t.Errorf("rank %s runs %q, want Open MPI v5:\n%s", rank, libraries[rank], r.Stdout)
		}
	}
	t.Logf("ranks on %v (nodes %v); the workers on %v; MPI: %s", hosts, rankNodes, workerNodes, libraries["0"])
}
