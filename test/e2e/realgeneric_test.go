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

	"tensorstack.dev/training/test/e2e/framework"
)

// TestRealNodeGenericJob: the GenericJob example trains for real. Its
// command makes PyTorch's env:// rendezvous out of the addresses the job
// publishes, so both ranks meet over TCP at the coordinator's port and
// train; the coordinator, rank 0, reports the progress, and its success
// decides the job (the example's success rule).
func TestRealNodeGenericJob(t *testing.T) {
	f := onRealNode(t, "real-generic")
	applyExample(f, "generic.yaml")
	ref := f.Ref(framework.KindGeneric, "generic-ddp")
	seen := followProgress(t, f, ref)
	if p := seen.job.JobStatus().Progress; p == nil || ptr.Deref(p.Step, 0) != 20 || p.Reporter != ref.Name+"-coordinator-0" {
		t.Errorf("final status.progress %+v, want step 20 reported by the coordinator", p)
	}
	pods := f.Pods(ref)
	if len(pods) != 2 {
		t.Fatalf("%d pods, want 2", len(pods))
	}
	checkOnRealNode(t, pods)
	for _, p := range pods {
		out := podLog(f, p.Name)
		if !strings.Contains(out, "world=2") || !strings.Contains(out, "step=20") {
			t.Errorf("pod %s did not train with a world of 2 to step 20:\n%s", p.Name, out)
		}
	}
	r := f.KubectlTraining("logs", ref.KubectlName(), "--all-replicas")
	if r.Err != nil {
		t.Fatalf("kubectl training logs --all-replicas: %s", r)
	}
	for _, want := range []string{"rank=0 step=20", "rank=1 step=20"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("kubectl training logs --all-replicas lacks %q:\n%s", want, r.Stdout)
		}
	}
}
