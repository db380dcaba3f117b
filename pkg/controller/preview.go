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
	"fmt"

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

// PreviewPods returns, for each replica type of the job that has replicas,
// in the order of spec.replicaSpecs, the pod the controller would create for
// its first replica: the template with the labels, hostname, restart
// policy, command, environment and run mode the controller gives it. The API
// server has the cluster judge these pods before it accepts a job. The
// preview has no owner reference: the job may not exist yet, and the
// replicas of a type differ only in their index.
func PreviewPods(job v1beta1.TrainingJob) ([]PodPreview, error) {
	var adapter Adapter
	switch job.(type) {
	case *v1beta1.TensorFlowTrainingJob:
		adapter = tensorFlowAdapter{}
	case *v1beta1.PyTorchTrainingJob:
		adapter = pyTorchAdapter{}
	default:
		return nil, fmt.Errorf("%T is not a training job kind", job)
	}
	r := &reconciler{kind: &kindHandler{Adapter: adapter}}
	r.job, r.spec, r.status = job, job.CommonSpec(), job.JobStatus()
	r.topo = newTopology(adapter, job, "")

	var previews []PodPreview
	for i := range r.spec.ReplicaSpecs {
		group := r.topo.Group(normalizeType(r.spec.ReplicaSpecs[i].Type))
		if group == nil || group.Replicas == 0 {
			continue
		}
		id := ReplicaID{Type: group.Type}
		pod, err := r.newPod(&slot{id: id, group: group, name: PodName(job.GetName(), id)})
		if err != nil {
			return nil, err
		}
		pod.OwnerReferences = nil
		previews = append(previews, PodPreview{ReplicaSpec: i, Pod: pod})
	}
	return previews, nil
}
