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

package jobpods

import (
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller"
)

// podsToJudge returns the pods the controller would build for the job in a,
// or nil when the request makes no new pods to judge: another resource, a
// subresource such as status, or an update after which the controller
// would build the same pods as before.
func podsToJudge(a admission.Attributes, o admission.ObjectInterfaces) (v1beta1.TrainingJob, []controller.PodPreview, error) {
	if a.GetResource().Group != v1beta1.GroupName || a.GetSubresource() != "" {
		return nil, nil, nil
	}
	switch a.GetResource().Resource {
	case v1beta1.TensorFlowTrainingJobResource, v1beta1.PyTorchTrainingJobResource:
	default:
		return nil, nil, nil
	}
	job, previews, err := previewsOf(a.GetObject(), a, o)
	if err != nil || a.GetOperation() != admission.Update {
		return job, previews, err
	}
	_, before, err := previewsOf(a.GetOldObject(), a, o)
	if err != nil {
		return nil, nil, err
	}
	if apiequality.Semantic.DeepEqual(before, previews) {
		return nil, nil, nil
	}
	return job, previews, nil
}

// previewsOf converts a job as admission holds it (the internal version) to
// the served version the controller works on, and previews its pods.
func previewsOf(obj runtime.Object, a admission.Attributes, o admission.ObjectInterfaces) (v1beta1.TrainingJob, []controller.PodPreview, error) {
	if obj == nil {
		return nil, nil, fmt.Errorf("admission of %s %s/%s has no object", a.GetOperation(), a.GetNamespace(), a.GetName())
	}
	versioned, err := o.GetObjectCreater().New(a.GetKind())
	if err != nil {
		return nil, nil, err
	}
	if err := o.GetObjectConvertor().Convert(obj, versioned, nil); err != nil {
		return nil, nil, fmt.Errorf("converting the job to %s: %w", a.GetKind().GroupVersion(), err)
	}
	job, ok := versioned.(v1beta1.TrainingJob)
	if !ok {
		return nil, nil, fmt.Errorf("%T is not a training job", versioned)
	}
	previews, err := controller.PreviewPods(job)
	return job, previews, err
}
