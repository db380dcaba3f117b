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
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// TestGenericJobSucceedsByItsRule: a GenericJob whose success rule names
// its workers succeeds when they do, while its server would run on, and the
// server's pod, unfinished, is cleaned up; every container is told every
// replica's address, its own place and the size of the job; kubectl finds
// the job by its short name and in the trainingjobs category.
func TestGenericJobSucceedsByItsRule(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "generic")
	ref := f.Create(framework.NewGenericJob("meet").WithReplicas("server", 1).WithReplicas("worker", 2).
		ExitCode(0).RunFor("8s").Forever("server").
		SucceedsWhen(v1beta1.ReplicaRule{Replicas: []v1beta1.ReplicaSelector{{Type: "worker"}}}))
	pods := f.WaitForRunningPods(ref, 3)
	suffix := ".meet." + f.Namespace + ".svc"
	wantCluster := map[string][]string{"server": {"server-0" + suffix}, "worker": {"worker-0" + suffix, "worker-1" + suffix}}
	ranks := map[string]string{"meet-server-0": "0", "meet-worker-0": "1", "meet-worker-1": "2"}
	for _, p := range pods {
		c := framework.TrainingContainer(ref.Kind, &p)
		env := map[string]string{}
		for _, e := range c.Env {
			env[e.Name] = e.Value
		}
		var cluster map[string][]string
		if err := json.Unmarshal([]byte(env["TENSORSTACK_CLUSTER"]), &cluster); err != nil {
			t.Errorf("pod %s: TENSORSTACK_CLUSTER %q: %v", p.Name, env["TENSORSTACK_CLUSTER"], err)
		}
		if got, want := strings.Join(cluster["worker"], ","), strings.Join(wantCluster["worker"], ","); got != want ||
			env["TENSORSTACK_WORKER_HOSTS"] != want || env["TENSORSTACK_SERVER_HOSTS"] != wantCluster["server"][0] {
			t.Errorf("pod %s: cluster %v, hosts %q and %q; want %v", p.Name, cluster, env["TENSORSTACK_WORKER_HOSTS"],
				env["TENSORSTACK_SERVER_HOSTS"], wantCluster)
		}
		if env["TENSORSTACK_RANK"] != ranks[p.Name] || env["TENSORSTACK_WORLD_SIZE"] != "3" ||
			env["TENSORSTACK_REPLICA_TYPE"]+"-"+env["TENSORSTACK_REPLICA_INDEX"] != strings.TrimPrefix(p.Name, "meet-") {
			t.Errorf("pod %s: %s-%s, rank %q of %q; want rank %s of 3", p.Name, env["TENSORSTACK_REPLICA_TYPE"],
				env["TENSORSTACK_REPLICA_INDEX"], env["TENSORSTACK_RANK"], env["TENSORSTACK_WORLD_SIZE"], ranks[p.Name])
		}
	}

	f.WaitForPhase(ref, v1beta1.JobSucceeded)
	f.WaitForPods(ref, "the running server cleaned up", framework.Timeout, func(pods []corev1.Pod) (bool, error) {
		for _, p := range pods {
			if p.Name == "meet-server-0" && p.DeletionTimestamp == nil {
				return false, nil
			}
		}
		return true, nil
	})

	out := f.MustKubectl("get", "gj", "-n", f.Namespace, "-o", "name")
	if strings.TrimSpace(out) != "genericjob.batch.tensorstack.dev/meet" {
		t.Errorf("kubectl get gj: %q", out)
	}
	out = f.MustKubectl("get", "trainingjobs", "-n", f.Namespace)
	if !strings.Contains(out, "meet") || !strings.Contains(out, "Succeeded") {
		t.Errorf("kubectl get trainingjobs does not show the job as Succeeded:\n%s", out)
	}
}
