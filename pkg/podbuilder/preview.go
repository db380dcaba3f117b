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

package podbuilder

import (
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// PodPreview is the pod the controller would create for the first replica of
// one replica type.
type PodPreview struct {
	// ReplicaSpec is the index of the replica type in spec.replicaSpecs.
	ReplicaSpec int
	Pod         *corev1.Pod
}

// AdapterFor returns the adapter of a job's kind: its Go type is named
// after the kind (jobclient's tests hold the types to the table of kinds).
func AdapterFor(job v1beta1.TrainingJob) (Adapter, error) {
	if t := reflect.TypeOf(job); t != nil && t.Kind() == reflect.Pointer {
		if a, ok := AdapterOf(t.Elem().Name()); ok {
			return a, nil
		}
	}
	return nil, fmt.Errorf("%T is not a training job kind", job)
}

// Preview returns, for each replica type of the job that has replicas, in
// the order of spec.replicaSpecs, the pod the controller would create for
// its first replica: the template with the labels, hostname, restart
// policy, command, environment and run mode the controller gives it. The API
// server has the cluster judge these pods before it accepts a job. The
// preview has no owner reference, since the job may not exist yet, and
// neither gang nor queue placement, which the cluster decides later; the
// replicas of a type differ only in their index.
func Preview(job v1beta1.TrainingJob) ([]PodPreview, error) {
	adapter, err := AdapterFor(job)
	if err != nil {
		return nil, err
	}
	b := &Builder{Adapter: adapter, Job: job, Topology: NewTopology(adapter, job, "")}
	var previews []PodPreview
	specs := job.CommonSpec().ReplicaSpecs
	for i := range specs {
		group := b.Topology.Group(specs[i].Type)
		if group == nil || group.Replicas == 0 {
			continue
		}
		pod, err := b.Pod(ReplicaID{Type: group.Type})
		if err != nil {
			return nil, err
		}
		pod.OwnerReferences = nil
		previews = append(previews, PodPreview{ReplicaSpec: i, Pod: pod})
	}
	return previews, nil
}
