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

package controller

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/controller/kueue"
	"tensorstack.dev/training/pkg/podbuilder"
)

// TestManagedBy: a job whose spec.managedBy names MultiKueue gets its
// Workload (which MultiKueue dispatches to a worker cluster) and nothing
// else: no pod, no Service, no status write; one that names ours runs.
func TestManagedBy(t *testing.T) {
	for _, tc := range []struct {
		managedBy *string
		ours      bool
	}{
		{ptr.To(batch.ManagedByMultiKueue), false},
		{ptr.To(batch.ManagedByTrainingController), true},
		{nil, true},
	} {
		name := "unset"
		if tc.managedBy != nil {
			name = *tc.managedBy
		}
		t.Run(name, func(t *testing.T) {
			b := gpuJob("p").withGang("user-queue", 0)
			b.spec().ManagedBy = tc.managedBy
			job := b.obj()
			f := newKueueFixture(t, nil, job)
			f.step(job)
			pods, err := f.kubeClient.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			services, err := f.kubeClient.CoreV1().Services("ns").List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			wl := f.workload(kueue.WorkloadName(podbuilder.PyTorchKind, "p"))
			if wl == nil || len(wl.Spec.PodSets) != 2 || !metav1.IsControlledBy(wl, job) {
				t.Fatalf("managedBy %v: Workload %+v; want one with the job's two pod sets, controlled by the job", name, wl)
			}
			phase := f.job(job).JobStatus().Phase
			if tc.ours {
				if len(pods.Items) == 0 && len(services.Items) == 0 || phase == "" {
					t.Errorf("managedBy %v: %d pods, %d services, phase %q; want the job run here", name, len(pods.Items), len(services.Items), phase)
				}
				return
			}
			if len(pods.Items) != 0 || len(services.Items) != 0 || phase != "" {
				t.Errorf("managedBy %v: %d pods, %d services, phase %q; want nothing but the Workload", name, len(pods.Items), len(services.Items), phase)
			}
		})
	}
}
