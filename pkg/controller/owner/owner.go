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

// Package owner keeps the objects a training job owns: it says which objects
// are the job's, adopts orphans that carry the job's labels, creates and
// deletes the objects the job owns by name, and reports each of these as an
// event on the job. The controller and its integrations (TensorBoard, the
// gang schedulers, Kueue) share it, so that every object a job owns is
// claimed the same way.
package owner

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// Reasons of the events about the objects a job owns.
const (
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonSuccessfulUpdate = "SuccessfulUpdate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	ReasonFailedCreate     = "FailedCreate"
	ReasonFailedDelete     = "FailedDelete"
	ReasonNameConflict     = "NameConflict"
	ReasonAdopted          = "Adopted"
)

// Job is a training job as the owner of objects, with where its events go.
type Job struct {
	// Object is the job; its kind must be set (events need it).
	Object   v1beta1.TrainingJob
	Kind     string
	Recorder record.EventRecorder
	Logger   klog.Logger
}

// Labels are the labels of every object made for the job.
func (j *Job) Labels() map[string]string {
	return v1beta1.JobLabels(j.Kind, j.Object.GetName())
}

// ControllerRef makes the job the controller of an object.
func (j *Job) ControllerRef() metav1.OwnerReference {
	return v1beta1.JobControllerRef(j.Object, j.Kind)
}

// ObjectMeta is the metadata of an object made for the job: in its
// namespace, with its labels, controlled by it.
func (j *Job) ObjectMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       j.Object.GetNamespace(),
		Labels:          j.Labels(),
		OwnerReferences: []metav1.OwnerReference{j.ControllerRef()},
	}
}

// Controls says whether the object's controller is the job.
func (j *Job) Controls(obj metav1.Object) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && ref.UID == j.Object.GetUID()
}

// Adoptable says whether an object without a controller carries the job's
// labels, so the job may take it over.
func (j *Job) Adoptable(obj metav1.Object) bool {
	if metav1.GetControllerOfNoCopy(obj) != nil || obj.GetDeletionTimestamp() != nil {
		return false
	}
	l := obj.GetLabels()
	return l[v1beta1.LabelJobName] == j.Object.GetName() && l[v1beta1.LabelJobKind] == j.Kind
}

// AdoptionPatch makes the job the controller of an object. The UID and
// resourceVersion make it fail if the object changed in the meantime.
func (j *Job) AdoptionPatch(obj metav1.Object) ([]byte, error) {
	refs := append(append([]metav1.OwnerReference(nil), obj.GetOwnerReferences()...), j.ControllerRef())
	return json.Marshal(map[string]any{
		"metadata": map[string]any{
			"ownerReferences": refs,
			"uid":             obj.GetUID(),
			"resourceVersion": obj.GetResourceVersion(),
		},
	})
}

// Eventf records an event on the job.
func (j *Job) Eventf(eventType, reason, format string, args ...any) {
	j.Recorder.Eventf(j.Object, eventType, reason, format, args...)
}

// Normalf and Warningf record a Normal and a Warning event on the job.
func (j *Job) Normalf(reason, format string, args ...any) {
	j.Eventf(corev1.EventTypeNormal, reason, format, args...)
}

func (j *Job) Warningf(reason, format string, args ...any) {
	j.Eventf(corev1.EventTypeWarning, reason, format, args...)
}
