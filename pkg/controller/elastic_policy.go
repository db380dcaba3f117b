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
	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/pkg/controller/kueue"
	"tensorstack.dev/training/pkg/podbuilder"
)

// An elastic job (spec.elastic.enabled: PyTorch, or a GenericJob) runs its
// elastic total of replicas (batch.ElasticTotal: expectedReplicas, which
// the scale subresource sets), by scaling its last replica type in rank
// order (Topology.scaleElastic). Scaling out adds the next indexes; scaling
// in leaves the highest indexes outside the job, and their pods are deleted
// as pods of no replica: neither a failure nor a restart. A PyTorch pod's
// identity (Shape, environment, torchrun's --nnodes=min:max) does not
// depend on the count, so no surviving pod is replaced; torchrun's agents
// re-form the group with the replicas there are. A GenericJob re-forms at
// each size (ElasticRange.Reform): its pods were told the count, so each
// is replaced, after a checkpoint, as for any change of Shape.

// With Kueue, an elastic job's pod set asks for minCount minReplicas less
// the other types' replicas, so Kueue may admit it partially (its
// PartialAdmission feature). The job then runs the admitted count, and
// replicas beyond it, whether Kueue held them back at admission or the job
// was scaled out after it, wait: an admitted Workload's pod sets cannot
// change, so they run once the job is admitted again (after a preemption,
// or a pause and resume). Scaling in needs no admission.

// The functions here give an elastic job's sizes over its topology and its
// Workload alone.

// admittedCount is how many replicas of the group at index gi the job runs:
// all of them, unless Kueue admitted fewer of an elastic job's scaled group
// (queue is the job's Workload; nil when it is not queued).
func admittedCount(topo *podbuilder.Topology, gi int, queue *kueue.State) int32 {
	g := &topo.Groups[gi]
	if !topo.Scaled(gi) || queue == nil || !queue.Admitted {
		return g.Replicas
	}
	if n, ok := queue.AdmittedCounts[g.Type]; ok && n < g.Replicas {
		return n
	}
	return g.Replicas
}

// elasticMinCount is the minCount of an elastic job's scaled pod set: the
// fewest of its replicas the job trains with; 0 when the pod set is not
// scaled or cannot be admitted partially.
func elasticMinCount(topo *podbuilder.Topology, gi int) int32 {
	if !topo.Scaled(gi) || topo.Elastic.Reform {
		// A job that re-forms at each size runs every replica its pods
		// were told of, or none.
		return 0
	}
	g := &topo.Groups[gi]
	n := max(topo.Elastic.Min-(topo.Total-g.Replicas), 1)
	if n >= g.Replicas {
		return 0
	}
	return n
}

// madeForOtherShape says whether a pod was built for other replica counts
// than want (Topology.Shape). Pods that predate the annotation are kept.
func madeForOtherShape(p *corev1.Pod, want string) bool {
	made := p.Annotations[podbuilder.AnnotationTopology]
	return made != "" && made != want
}
