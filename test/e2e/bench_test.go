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
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/podbuilder"
	"tensorstack.dev/training/test/e2e/framework"
)

// BenchmarkJobCreate shows what judging a job by its pods costs: a job
// create through kube-apiserver and the training-apiserver (whose
// TrainingJobPodValidation dry-runs one pod per replica type, in parallel),
// next to one such pod dry run on its own. make bench-e2e runs it twice,
// the second time with the plugins switched off, for the difference. The jobs are paused, so the
// controller creates no pods meanwhile.
func BenchmarkJobCreate(b *testing.B) {
	if !framework.Enabled() {
		b.Skip("the benchmark needs the local stack: E2E_LOCAL_DIR is not set; run it with make test-e2e")
	}
	c := framework.AdminClients()
	ctx := context.Background()
	ns, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-bench-create-"},
	}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	newJob := func(name string) *framework.JobBuilder {
		return framework.NewTFJob(name).WithReplicas("chief", 1).WithReplicas("worker", 2).Paused()
	}

	created := 0 // across the runs the benchmark makes, so names never repeat
	b.Run("job create, 2 replica types", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			created++
			if err := c.CreateJob(ctx, newJob(fmt.Sprintf("job-%d", created)).Build(ns.Name)); err != nil {
				b.Fatal(err)
			}
		}
	})

	previews, err := podbuilder.Preview(newJob("preview").Build(ns.Name))
	if err != nil {
		b.Fatal(err)
	}
	pod := previews[len(previews)-1].Pod
	pod.GenerateName, pod.Name = pod.Name+"-", ""
	b.Run("pod dry-run create, 1 replica type", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := c.Kube.CoreV1().Pods(ns.Name).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
