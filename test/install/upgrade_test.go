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

package install

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// testUpgrade: release B replaces A (kubectl apply --server-side of its
// install.yaml) while a real job trains and a client creates and reads
// jobs. No request fails, the job finishes once with no replica run twice,
// and every job stored before is still there.
func testUpgrade(t *testing.T, e *env) {
	before, err := e.jobs.BatchV1beta1().PyTorchTrainingJobs(jobsNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var stored []string
	for _, j := range before.Items {
		stored = append(stored, j.Name)
	}

	// About 90 seconds of training, longer than the upgrade.
	e.run(t, exampleJob(t, "ddp-upgrade", 180), "apply", "-f", "-")
	waitFor(t, "job ddp-upgrade's pods running", 3*time.Minute, time.Second, func(ctx context.Context) (bool, error) {
		pods, err := e.kube.CoreV1().Pods(jobsNamespace).List(ctx, metav1.ListOptions{LabelSelector: v1beta1.LabelJobName + "=ddp-upgrade"})
		if err != nil || len(pods.Items) != 2 {
			return false, nil
		}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
		}
		return true, nil
	})
	pods := watchJobPods(t, e, "ddp-upgrade")
	load := startLoad(e, "upgrade-load", 200*time.Millisecond)

	start := time.Now()
	e.run(t, e.installYAML(t, "b"), "apply", "--server-side", "-f", "-")
	// The Deployments and the StatefulSet see the new templates first.
	time.Sleep(3 * time.Second)
	took := waitFor(t, "release B rolled out", 10*time.Minute, time.Second, e.rolledOut)
	t.Logf("upgrade A to B: apply to rolled out %.1fs", (took + 3*time.Second).Seconds())
	// Keep the client on for a while on the new release.
	time.Sleep(10 * time.Second)
	requests, failures, acked := load.finish()
	t.Logf("during the upgrade (%.0fs): %d requests, %d failed", time.Since(start).Seconds(), requests, len(failures))
	if len(failures) > 0 {
		t.Logf("the failed requests:\n%s", strings.Join(failures[:min(10, len(failures))], "\n"))
	}
	// The target is none. One create in about 700 still fails now and then
	// (2 runs of 7): with kube-apiserver's default routing to the Service,
	// a POST on its pooled HTTP/2 connection to a replica that is stopping
	// cannot be retried by its proxy and is answered 503
	// (kubernetes/kubernetes#135285; docs/install.md, Upgrade). The stack
	// keeps kube-apiserver's default, so the test allows that; more is a
	// regression.
	if len(failures) > max(1, requests/500) {
		t.Errorf("%d of %d requests failed during the upgrade, more than one in 500", len(failures), requests)
	}
	e.checkPods(t, e.releaseDigests(t, "b"))

	took = waitFor(t, "job ddp-upgrade Completed", 6*time.Minute, time.Second, e.completed("ddp-upgrade"))
	t.Logf("job ddp-upgrade completed %.1fs after the upgrade", took.Seconds())
	seen := pods.result()
	if len(seen) != 2 {
		t.Errorf("job ddp-upgrade had pods %v, want its 2 replicas", seen)
	}
	for name, uids := range seen {
		if uids != 1 {
			t.Errorf("pod %s of ddp-upgrade was created %d times; a replica runs once", name, uids)
		}
	}
	e.checkStored(t, append(stored, acked...))
}
