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
	"k8s.io/apimachinery/pkg/labels"
)

// An elastic PyTorch job (spec.elastic.enabled) runs its elastic total of
// replicas (batch.ElasticTotal: expectedReplicas, which the scale
// subresource sets), by scaling its last replica type in rank order
// (Topology.scaleElastic). Scaling out adds the next indexes; scaling in
// leaves the highest indexes outside the job, and their pods are deleted as
// pods of no replica: neither a failure nor a restart. The pods' identity
// (Shape, environment, torchrun's --nnodes=min:max) does not depend on the
// count, so no surviving pod is replaced; torchrun's agents re-form the
// group with the replicas there are.

// With Kueue, an elastic job's pod set asks for minCount minReplicas less
// the other types' replicas, so Kueue may admit it partially (its
// PartialAdmission feature). The job then runs the admitted count, and
// replicas beyond it, whether Kueue held them back at admission or the job
// was scaled out after it, wait: an admitted Workload's pod sets cannot
// change, so they run once the job is admitted again (after a preemption,
// or a pause and resume). Scaling in needs no admission.

// ReasonScaled is the event of an elastic job whose replica count changed.
const ReasonScaled = "Scaled"

// fillElasticStatus reports an elastic job's size as its scale subresource
// shows it, and records a change of size.
func (r *reconciler) fillElasticStatus() {
	st := r.status
	if r.topo.Elastic == nil {
		st.Replicas, st.Selector = nil, ""
		return
	}
	var current int32
	for _, s := range r.slots {
		if s.pod != nil && s.pod.DeletionTimestamp == nil {
			current++
		}
	}
	st.Replicas = &current
	st.Selector = labels.SelectorFromSet(r.jobOwner.Labels()).String()

	var before int32
	for _, t := range r.old.Tasks {
		before += int32(len(t.ReplicaStatus))
	}
	now := int32(len(r.slots))
	// A job that has not started is not scaled: its first admission may
	// still cut its count.
	if r.old.StartTime != nil && before != now && !r.scaleNoted {
		r.scaleNoted = true
		st.LastScaleTime = r.metaNow()
		r.event(corev1.EventTypeNormal, ReasonScaled, "Scaled from %d to %d replicas", before, now)
	}
}

// resizing says whether the job's replicas changed under running pods: a
// pod beyond the new count, or one made for the old shape, must go.
func (r *reconciler) resizing() bool {
	for _, p := range r.extra {
		if p.DeletionTimestamp == nil {
			return true
		}
	}
	want := r.topo.Shape()
	for _, s := range r.slots {
		if p := s.pod; p != nil && p.DeletionTimestamp == nil && !isTerminated(p) && madeForOtherShape(p, want) {
			return true
		}
	}
	return false
}
