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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/kueue"
	"tensorstack.dev/training/pkg/podbuilder"
)

// TestElasticPolicy: how many replicas of each group an elastic job runs,
// the fewest Kueue may admit, and which pods were made for another size.
func TestElasticPolicy(t *testing.T) {
	b := newPyTorchJob("e").withReplicas("master", 1).withReplicas("worker", 3).withTorchrun(v1beta1.TorchrunConfig{Enabled: true})
	b.job.(*v1beta1.PyTorchTrainingJob).Spec.Elastic = &v1beta1.ElasticConfig{
		Enabled: true, MinReplicas: ptr.To[int32](2), MaxReplicas: ptr.To[int32](6), ExpectedReplicas: ptr.To[int32](5),
	}
	job := b.obj()
	a, err := podbuilder.AdapterFor(job)
	if err != nil {
		t.Fatal(err)
	}
	topo := podbuilder.NewTopology(a, job, "")
	const master, worker = 0, 1
	if topo.Groups[worker].Replicas != 4 {
		t.Fatalf("the elastic total of 5 gives %d workers, want 4", topo.Groups[worker].Replicas)
	}

	admitted := func(counts map[v1beta1.ReplicaType]int32) *kueue.State {
		return &kueue.State{Admitted: true, AdmittedCounts: counts}
	}
	counts := map[string]struct {
		gi    int
		queue *kueue.State
		want  int32
	}{
		"not queued: every replica":                  {gi: worker, want: 4},
		"queued, not admitted: every replica":        {gi: worker, queue: &kueue.State{}, want: 4},
		"admitted partially: the admitted count":     {gi: worker, queue: admitted(map[v1beta1.ReplicaType]int32{"worker": 2}), want: 2},
		"admitted more than it asks: what it asks":   {gi: worker, queue: admitted(map[v1beta1.ReplicaType]int32{"worker": 6}), want: 4},
		"admitted without a count for it: every one": {gi: worker, queue: admitted(nil), want: 4},
		"a group that does not scale: every replica": {gi: master, queue: admitted(map[v1beta1.ReplicaType]int32{"master": 0}), want: 1},
	}
	for name, tc := range counts {
		t.Run(name, func(t *testing.T) {
			if got := admittedCount(topo, tc.gi, tc.queue); got != tc.want {
				t.Errorf("admittedCount = %d, want %d", got, tc.want)
			}
		})
	}

	if got := elasticMinCount(topo, worker); got != 1 {
		t.Errorf("elasticMinCount(worker) = %d, want 1: minReplicas 2 less the master", got)
	}
	if got := elasticMinCount(topo, master); got != 0 {
		t.Errorf("elasticMinCount(master) = %d, want 0: only the scaled group is admitted partially", got)
	}

	made := func(shape string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "e-worker-0"}}
		if shape != "" {
			p.Annotations = map[string]string{podbuilder.AnnotationTopology: shape}
		}
		return p
	}
	want := topo.Shape()
	if madeForOtherShape(made(want), want) || madeForOtherShape(made(""), want) || !madeForOtherShape(made("master:1,worker:9"), want) {
		t.Errorf("madeForOtherShape: only a pod annotated with another shape than %q is, not one with it or without any", want)
	}
}
