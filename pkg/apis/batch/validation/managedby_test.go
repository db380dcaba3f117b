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

package validation

import (
	"testing"

	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

// TestManagedBy: spec.managedBy names ours or MultiKueue, nothing else, and
// never changes once the job exists.
func TestManagedBy(t *testing.T) {
	managedBy := func(v *string) func(*batch.PyTorchTrainingJob) {
		return func(j *batch.PyTorchTrainingJob) { j.Spec.ManagedBy = v }
	}
	for _, v := range []*string{nil, ptr.To(""), ptr.To(batch.ManagedByTrainingController), ptr.To(batch.ManagedByMultiKueue)} {
		expectErrors(t, ValidatePyTorchTrainingJob(ptJob(managedBy(v))))
	}
	expectErrors(t, ValidatePyTorchTrainingJob(ptJob(managedBy(ptr.To("example.com/other")))), notSupported("spec.managedBy"))
	tf := tfJob(func(j *batch.TensorFlowTrainingJob) { j.Spec.ManagedBy = ptr.To("kubeflow.org/training-operator") })
	expectErrors(t, ValidateTensorFlowTrainingJob(tf), notSupported("spec.managedBy"))

	old := ptJob(managedBy(ptr.To(batch.ManagedByMultiKueue)))
	expectErrors(t, ValidatePyTorchTrainingJobUpdate(ptJob(managedBy(nil)), old), invalid("spec.managedBy"))
	expectErrors(t, ValidatePyTorchTrainingJobUpdate(ptJob(managedBy(ptr.To(batch.ManagedByMultiKueue))), old))
	expectErrors(t, ValidatePyTorchTrainingJobUpdate(ptJob(managedBy(ptr.To(batch.ManagedByMultiKueue))), ptJob()),
		invalid("spec.managedBy"))
	// Unset and empty are the same: ours.
	expectErrors(t, ValidatePyTorchTrainingJobUpdate(ptJob(managedBy(ptr.To(""))), ptJob()))
}
