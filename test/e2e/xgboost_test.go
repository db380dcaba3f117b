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

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// TestXGBoostJobRunsToSuccess: an XGBoostTrainingJob of a master and two
// workers on the kwok nodes gets a pod per replica, each told the tracker
// on the master, the number of replicas and its own rank; it succeeds with
// its master, and kubectl finds it by its short name and in the
// trainingjobs category.
func TestXGBoostJobRunsToSuccess(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "xgboost")
	ref := f.Create(framework.NewXGBoostJob("higgs").WithReplicas("master", 1).WithReplicas("worker", 2).
		ExitCode(0).RunFor("3s").CleanUp(v1beta1.CleanUpPolicyNone))
	f.WaitForPhase(ref, v1beta1.JobSucceeded)

	pods := f.Pods(ref)
	if len(pods) != 3 {
		t.Fatalf("%d pods, want 3: %s", len(pods), f.DumpJob(ref))
	}
	master := "master-0.higgs." + f.Namespace + ".svc"
	ranks := map[string]string{"higgs-master-0": "0", "higgs-worker-0": "1", "higgs-worker-1": "2"}
	for _, p := range pods {
		env := map[string]string{}
		for _, e := range p.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		rank, ok := ranks[p.Name]
		if !ok {
			t.Errorf("pod %s is not one of the job's replicas", p.Name)
			continue
		}
		if !strings.HasPrefix(env["DMLC_TRACKER_URI"], master) || env["MASTER_ADDR"] != env["DMLC_TRACKER_URI"] ||
			env["DMLC_TRACKER_PORT"] != "9999" || env["DMLC_NUM_WORKER"] != "3" || env["WORLD_SIZE"] != "3" ||
			env["DMLC_TASK_ID"] != rank || env["RANK"] != rank {
			t.Errorf("pod %s: environment %v, want the tracker at %s..., 3 workers, rank %s", p.Name, env, master, rank)
		}
	}

	out := f.MustKubectl("get", "xj", "-n", f.Namespace, "-o", "name")
	if strings.TrimSpace(out) != "xgboosttrainingjob.batch.tensorstack.dev/higgs" {
		t.Errorf("kubectl get xj: %q", out)
	}
	out = f.MustKubectl("get", "trainingjobs", "-n", f.Namespace)
	if !strings.Contains(out, "higgs") || !strings.Contains(out, "Succeeded") {
		t.Errorf("kubectl get trainingjobs does not show the job as Succeeded:\n%s", out)
	}
}
