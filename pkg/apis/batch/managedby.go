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

// The controllers spec.managedBy may name. A job names another controller
// when something else runs it: Kueue's MultiKueue dispatches it to a worker
// cluster, where it runs as a job of ours, and copies the worker's status
// back onto it. As with Kubeflow's jobs, JobSet and Trainer, the field is
// fixed once the job exists.
const (
	ManagedByTrainingController = GroupName + "/training-controller"
	ManagedByMultiKueue         = "kueue.x-k8s.io/multikueue"
)

// ManagedByUs says whether training-controller-manager runs a job whose
// spec.managedBy is managedBy.
func ManagedByUs(managedBy *string) bool {
	return managedBy == nil || *managedBy == "" || *managedBy == ManagedByTrainingController
}

// DispatchedByMultiKueue says whether Kueue's MultiKueue runs a job whose
// spec.managedBy is managedBy, in a worker cluster.
func DispatchedByMultiKueue(managedBy *string) bool {
	return managedBy != nil && *managedBy == ManagedByMultiKueue
}
