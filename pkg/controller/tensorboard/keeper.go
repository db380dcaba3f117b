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

package tensorboard

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/owner"
)

// Keeper keeps the TensorBoards of jobs, through the controller's client
// and its caches of Deployments and Services (those with the job-name
// label).
type Keeper struct {
	Client      kubernetes.Interface
	Deployments cache.Indexer
	Services    cache.Indexer
}

// Sync runs the TensorBoard tb asks for (also after the job finished: that
// is when its logs are read most), or removes the job's when tb is nil. It
// returns what status.tensorboard says now, given what it said before
// (prev); nil when no TensorBoard is asked for. The status is returned with
// an error too.
func (k *Keeper) Sync(ctx context.Context, job *owner.Job, tb *v1beta1.TensorBoardSpec,
	prev *v1beta1.DependentStatus) (*v1beta1.DependentStatus, error) {
	if tb == nil {
		return nil, k.remove(ctx, job)
	}
	st := &v1beta1.DependentStatus{Name: statusName, Type: corev1.EventTypeNormal}
	if prev != nil {
		st.Action = prev.Action
	}
	desired, err := Deployment(job, tb)
	if err != nil {
		st.Reason, st.Note, st.Type = ReasonInvalidSpec, err.Error(), corev1.EventTypeWarning
		return st, nil
	}
	dep, err := k.ensureDeployment(ctx, job, st, desired)
	if err != nil || st.Reason == owner.ReasonNameConflict {
		return st, err
	}
	services := owner.Services(k.Client, k.Services, job.Object.GetNamespace(), "the TensorBoard cannot be reached through it")
	if _, err := owner.Ensure(ctx, job, services, Service(job)); err != nil {
		return st, err
	}
	availability(st, dep)
	return st, nil
}

// remove deletes the job's TensorBoard Deployment and Service.
func (k *Keeper) remove(ctx context.Context, job *owner.Job) error {
	name, ns := Name(job.Object.GetName()), job.Object.GetNamespace()
	const why = "no TensorBoard is asked for"
	dep, err := owner.Cached[*appsv1.Deployment](k.Deployments, ns, name)
	if err != nil {
		return fmt.Errorf("getting deployment %s: %w", name, err)
	}
	if dep != nil {
		if err := owner.Delete(ctx, job, "deployment", dep, why, k.Client.AppsV1().Deployments(ns).Delete); err != nil {
			return err
		}
	}
	svc, err := owner.Cached[*corev1.Service](k.Services, ns, name)
	if err != nil {
		return fmt.Errorf("getting service %s: %w", name, err)
	}
	if svc != nil {
		return owner.Delete(ctx, job, "service", svc, why, k.Client.CoreV1().Services(ns).Delete)
	}
	return nil
}

// ensureDeployment creates, adopts or updates the TensorBoard's
// Deployment and records in st what it did; it returns the Deployment, nil
// while there is none.
func (k *Keeper) ensureDeployment(ctx context.Context, job *owner.Job, st *v1beta1.DependentStatus,
	desired *appsv1.Deployment) (*appsv1.Deployment, error) {
	deployments := owner.Deployments(k.Client, k.Deployments, desired.Namespace, "the TensorBoard does not run")
	got, err := owner.Ensure(ctx, job, deployments, desired)
	switch {
	case err != nil:
		st.Reason, st.Note, st.Type = ReasonCreateFailed, err.Error(), corev1.EventTypeWarning
		return nil, err
	case got.Taken:
		st.Reason, st.Type = owner.ReasonNameConflict, corev1.EventTypeWarning
		st.Note = fmt.Sprintf("deployment %s exists and is not controlled by the job", desired.Name)
		return nil, nil
	case got.Created:
		st.Action = actionCreate
		return got.Obj, nil
	}
	dep := got.Obj
	if dep == nil || dep.Annotations[AnnotationSpec] == desired.Annotations[AnnotationSpec] {
		return dep, nil
	}
	update := dep.DeepCopy()
	if update.Annotations == nil {
		update.Annotations = map[string]string{}
	}
	update.Annotations[AnnotationSpec] = desired.Annotations[AnnotationSpec]
	update.Spec.Template = desired.Spec.Template
	updated, err := k.Client.AppsV1().Deployments(dep.Namespace).Update(ctx, update, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("updating deployment %s: %w", dep.Name, err)
	}
	st.Action = actionUpdate
	job.Normalf(owner.ReasonSuccessfulUpdate, "Updated deployment %s: the tensorboardSpec changed", dep.Name)
	return updated, nil
}

// availability reports the Deployment's availability in st.
func availability(st *v1beta1.DependentStatus, dep *appsv1.Deployment) {
	if dep == nil {
		st.Reason, st.Note = ReasonCreating, "waiting for the deployment to appear"
		return
	}
	st.Dependent = &corev1.ObjectReference{
		APIVersion: appsv1.SchemeGroupVersion.String(),
		Kind:       "Deployment",
		Namespace:  dep.Namespace,
		Name:       dep.Name,
		UID:        dep.UID,
	}
	st.Reason, st.Note = ReasonCreating, "waiting for the deployment to become available"
	for _, c := range dep.Status.Conditions {
		if c.Type != appsv1.DeploymentAvailable {
			continue
		}
		st.Note = c.Message
		if c.Status == corev1.ConditionTrue {
			st.Ready, st.Reason = true, ReasonAvailable
		} else {
			st.Reason = ReasonUnavailable
		}
	}
}
