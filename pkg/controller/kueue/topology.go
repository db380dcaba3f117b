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

package kueue

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// Topology-aware scheduling (TAS): a job's topology request
// (batch.TopologyOf) becomes its pod sets' topologyRequest. Kueue admits
// such a Workload with a topology assignment, the domains and how many pods
// go to each; the controller then creates the pods behind Kueue's topology
// scheduling gate, labelled with their pod set and annotated with their
// Workload, and Kueue's ungater lifts the gate with each pod's node
// selector for its domain, in the order of the replica index.

// labelPodSet is the label by which Kueue's ungater finds a pod set's pods.
const labelPodSet = "kueue.x-k8s.io/podset"

// wholeJobGroup is the pod set group of a job that asks for one domain for
// all its pods.
const wholeJobGroup = "job"

// topologyRequests are the topologyRequests of the pod sets of the groups
// with replicas, by group index (nil where the job asks for none). A
// request for the whole job groups its pod sets where Kueue takes a group,
// two pod sets placed together; a job of one pod set needs none, and
// validation refuses the whole-job request for more. Pods rank by their
// replica index, but for a group: Kueue ranks a group's pods as one
// sequence, the single pod first, while replica indexes restart at 0 in
// each type, so the ungater places a group's pods without ranks.
func topologyRequests(jobAnnotations map[string]string, groups []podbuilder.ReplicaGroup) []*kueuev1beta2.PodSetTopologyRequest {
	requests := make([]*batch.TopologyRequest, len(groups))
	wholeJob := 0
	for gi, g := range groups {
		if g.Replicas == 0 {
			continue
		}
		requests[gi] = batch.TopologyOf(jobAnnotations, g.Spec.Template.Annotations)
		if requests[gi] != nil && requests[gi].WholeJob {
			wholeJob++
		}
	}
	grouped := wholeJob == batch.MaxWholeJobTopologyTypes
	out := make([]*kueuev1beta2.PodSetTopologyRequest, len(groups))
	for gi, r := range requests {
		if r == nil {
			continue
		}
		req := &kueuev1beta2.PodSetTopologyRequest{}
		if r.Required {
			req.Required = ptr.To(r.Level)
		} else {
			req.Preferred = ptr.To(r.Level)
		}
		if r.WholeJob && grouped {
			req.PodSetGroupName = ptr.To(wholeJobGroup)
		} else {
			req.PodIndexLabel = ptr.To(v1beta1.LabelReplicaIndex)
		}
		out[gi] = req
	}
	return out
}

// topologyAnnotation is the annotation by which Kueue's ungater knows a pod
// of a TAS pod set (it acts on the events of pods that carry one): the pod
// set's request, or unconstrained when Kueue placed a pod set that asked
// for none.
func topologyAnnotation(req *kueuev1beta2.PodSetTopologyRequest) (key, value string) {
	switch {
	case req != nil && req.Required != nil:
		return kueuev1beta2.PodSetRequiredTopologyAnnotation, *req.Required
	case req != nil && req.Preferred != nil:
		return kueuev1beta2.PodSetPreferredTopologyAnnotation, *req.Preferred
	default:
		return kueuev1beta2.PodSetUnconstrainedTopologyAnnotation, "true"
	}
}

// placeInTopology holds a pod set's pods at Kueue's topology gate until
// Kueue gives each its domain.
func placeInTopology(p *podbuilder.Placement, wl *kueuev1beta2.Workload, podSet kueuev1beta2.PodSetReference) {
	p.SchedulingGates = append(p.SchedulingGates, kueuev1beta2.TopologySchedulingGate)
	p.Labels[labelPodSet] = string(podSet)
	p.Annotations[kueuev1beta2.WorkloadAnnotation] = wl.Name
	var req *kueuev1beta2.PodSetTopologyRequest
	if i := slices.IndexFunc(wl.Spec.PodSets, func(ps kueuev1beta2.PodSet) bool { return ps.Name == podSet }); i >= 0 {
		req = wl.Spec.PodSets[i].TopologyRequest
	}
	key, value := topologyAnnotation(req)
	p.Annotations[key] = value
}

// RequestedLevels are the topology levels the Workload's pod sets ask for,
// each once, in pod set order: Kueue's refusals name the flavor, not the
// level.
func RequestedLevels(wl *kueuev1beta2.Workload) []string {
	var levels []string
	for _, ps := range wl.Spec.PodSets {
		r := ps.TopologyRequest
		if r == nil {
			continue
		}
		for _, level := range []*string{r.Required, r.Preferred} {
			if level != nil && !slices.Contains(levels, *level) {
				levels = append(levels, *level)
			}
		}
	}
	return levels
}

// AssignedNodes are the nodes a Workload's topology assignments name, in
// order, each once: the values of the hostname level of every pod set's
// assignment. Empty when no assignment reaches down to single nodes.
func AssignedNodes(wl *kueuev1beta2.Workload) []string {
	if wl.Status.Admission == nil {
		return nil
	}
	var nodes []string
	add := func(node string) {
		if !slices.Contains(nodes, node) {
			nodes = append(nodes, node)
		}
	}
	for _, a := range wl.Status.Admission.PodSetAssignments {
		ta := a.TopologyAssignment
		if ta == nil {
			continue
		}
		level := slices.Index(ta.Levels, corev1.LabelHostname)
		if level < 0 {
			continue
		}
		for _, s := range ta.Slices {
			if level >= len(s.ValuesPerLevel) {
				continue
			}
			values := s.ValuesPerLevel[level]
			switch {
			case values.Universal != nil:
				add(*values.Universal)
			case values.Individual != nil:
				prefix, suffix := ptr.Deref(values.Individual.Prefix, ""), ptr.Deref(values.Individual.Suffix, "")
				for _, root := range values.Individual.Roots {
					add(prefix + root + suffix)
				}
			}
		}
	}
	return nodes
}
