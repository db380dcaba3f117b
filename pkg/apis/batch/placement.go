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

package batch

// A queued job asks Kueue's topology-aware scheduling (TAS) to keep pods
// within one topology domain (a rack, a block: a level of a Kueue Topology,
// named by its node label) with the annotations Kueue's own integrations
// read from pod templates:
//   - on a replica's pod template, for that replica type's pods;
//   - on the job, for every pod of the job, in one domain together.
//
// Required keeps the pods in one domain of the level or leaves the job
// queued; preferred packs them as tightly as the free capacity allows,
// going up the levels. A job uses one place or the other, and one of the
// two per place.
const (
	AnnotationRequiredTopology  = "kueue.x-k8s.io/podset-required-topology"
	AnnotationPreferredTopology = "kueue.x-k8s.io/podset-preferred-topology"
)

// TopologyRequest is a replica type's request for topology-aware
// placement.
type TopologyRequest struct {
	// Level is the node label of the topology level.
	Level string
	// Required: all the pods in one domain, or none runs.
	Required bool
	// WholeJob: the request is the job's, for its pods of every type.
	WholeJob bool
}

// TopologyOf reads a replica type's topology request from its pod
// template's annotations, else from the job's; nil when neither asks.
func TopologyOf(job, template map[string]string) *TopologyRequest {
	if r := topologyIn(template); r != nil {
		return r
	}
	if r := topologyIn(job); r != nil {
		r.WholeJob = true
		return r
	}
	return nil
}

func topologyIn(annotations map[string]string) *TopologyRequest {
	if level := annotations[AnnotationRequiredTopology]; level != "" {
		return &TopologyRequest{Level: level, Required: true}
	}
	if level := annotations[AnnotationPreferredTopology]; level != "" {
		return &TopologyRequest{Level: level}
	}
	return nil
}

// MaxWholeJobTopologyTypes is how many replica types (with replicas) a job
// asking for one domain for all its pods may have: Kueue places pod sets
// together only in groups of two, one of them a single pod (a master or
// chief with its workers).
const MaxWholeJobTopologyTypes = 2
