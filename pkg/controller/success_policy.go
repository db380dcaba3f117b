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
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// jobSucceeded applies a job's success policy to what its replicas did:
// AllWorkers and AnyWorker ask the worker replicas; the default asks the
// kind (the chief or worker 0 of a TensorFlow job, the master or every
// replica of a PyTorch job).
func jobSucceeded(a podbuilder.Adapter, t *podbuilder.Topology, policy v1beta1.SuccessPolicy, phases podbuilder.ReplicaPhases) bool {
	switch policy {
	case v1beta1.SuccessPolicyAllWorkers, v1beta1.SuccessPolicyAnyWorker:
		workers := t.Group(v1beta1.ReplicaTypeWorker)
		if workers == nil || workers.Replicas == 0 {
			// Validation asks for workers; without any, nothing decides.
			return false
		}
		anyWorker := policy == v1beta1.SuccessPolicyAnyWorker
		for i := int32(0); i < workers.Replicas; i++ {
			if phases.Succeeded(podbuilder.ReplicaID{Type: workers.Type, Index: i}) == anyWorker {
				return anyWorker
			}
		}
		return !anyWorker
	default:
		return a.Succeeded(t, phases)
	}
}
