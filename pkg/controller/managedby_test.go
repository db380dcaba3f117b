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
	"testing"

	core "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

// TestManagedBy: a job whose spec.managedBy names another controller
// (MultiKueue) is left alone: no pod, no Service, no Workload, no status
// write; one that names ours runs.
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
			var writes []string
			for _, actions := range [][]core.Action{f.kubeClient.Actions(), f.jobClient.Actions(), f.kueueClient.Actions()} {
				for _, a := range actions {
					if verb := a.GetVerb(); verb != "get" && verb != "list" && verb != "watch" {
						writes = append(writes, verb+" "+a.GetResource().Resource)
					}
				}
			}
			if tc.ours != (len(writes) > 0) {
				t.Errorf("managedBy %v: writes %v; want some only when ours", name, writes)
			}
		})
	}
}
