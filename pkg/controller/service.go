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
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// ensureService creates the job's Service, or adopts an orphan that carries
// the job's labels. A Service of that name that belongs to something else is
// reported and left alone.
func (r *reconciler) ensureService(ctx context.Context) error {
	name := r.job.GetName()
	svc, err := cachedObject[*corev1.Service](r.c.serviceIndexer, r.key.Namespace, name)
	switch {
	case err != nil:
		return fmt.Errorf("getting service %s: %w", name, err)
	case svc == nil:
		created, err := r.c.kubeClient.CoreV1().Services(r.key.Namespace).Create(ctx, r.builder().Service(), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// Either the cache is behind, or the name is someone else's.
			existing, err := r.c.kubeClient.CoreV1().Services(r.key.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("looking at service %s: %w", name, err)
			}
			return r.checkService(ctx, existing)
		}
		if err != nil {
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return nil
			}
			r.c.recorder.Eventf(r.job, corev1.EventTypeWarning, ReasonFailedCreate, "Error creating service %s: %v", name, err)
			return fmt.Errorf("creating service %s: %w", name, err)
		}
		r.logger.V(2).Info("Created service", "service", klog.KObj(created))
		r.c.recorder.Eventf(r.job, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created service %s", name)
		return nil
	default:
		return r.checkService(ctx, svc)
	}
}

func (r *reconciler) checkService(ctx context.Context, svc *corev1.Service) error {
	if r.controlledByJob(svc) {
		return nil
	}
	if !r.adoptable(svc) {
		r.c.recorder.Eventf(r.job, corev1.EventTypeWarning, ReasonNameConflict,
			"Service %s exists and is not controlled by the job; replicas may not find each other", svc.Name)
		return nil
	}
	patch, err := r.adoptionPatch(svc)
	if err != nil {
		return err
	}
	if _, err := r.c.kubeClient.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("adopting service %s: %w", svc.Name, err)
	}
	r.c.recorder.Eventf(r.job, corev1.EventTypeNormal, ReasonAdopted, "Adopted service %s", svc.Name)
	return nil
}
