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

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// ownedKind is a kind of object a job owns one of by name (its Service, its
// TensorBoard's Deployment and Service): where the controller's cache keeps
// them and the calls that write them.
type ownedKind[T metav1.Object] struct {
	// name is the kind as messages and events say it ("service").
	name string
	// takenMeans says what a name taken by someone else costs the job.
	takenMeans string
	indexer    cache.Indexer
	create     func(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	get        func(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	patch      func(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions,
		subresources ...string) (T, error)
}

// owned is what ensureOwned found or made.
type owned[T metav1.Object] struct {
	// obj is the job's object as it stands; nil when there is none yet.
	obj T
	// created: this reconcile created it.
	created bool
	// taken: the name belongs to something else, which is reported as an
	// event and left alone.
	taken bool
}

// ensureOwned makes sure the job has the object desired describes: it
// creates it when missing and adopts an orphan of that name carrying the
// job's labels.
func ensureOwned[T metav1.Object](ctx context.Context, r *reconciler, k ownedKind[T], desired T) (owned[T], error) {
	var none owned[T]
	name := desired.GetName()
	obj, found, err := k.indexer.GetByKey(r.key.Namespace + "/" + name)
	if err != nil {
		return none, fmt.Errorf("getting %s %s: %w", k.name, name, err)
	}
	if cached, ok := obj.(T); found && ok {
		return claimOwned(ctx, r, k, cached)
	}
	created, err := k.create(ctx, desired, metav1.CreateOptions{})
	switch {
	case err == nil:
		r.logger.V(2).Info("Created "+k.name, k.name, klog.KObj(created))
		r.c.recorder.Eventf(r.job, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created %s %s", k.name, name)
		return owned[T]{obj: created, created: true}, nil
	case apierrors.IsAlreadyExists(err):
		// Either the cache is behind, or the name is someone else's.
		existing, err := k.get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return none, fmt.Errorf("looking at %s %s: %w", k.name, name, err)
		}
		return claimOwned(ctx, r, k, existing)
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return none, nil
	default:
		r.c.recorder.Eventf(r.job, corev1.EventTypeWarning, ReasonFailedCreate, "Error creating %s %s: %v", k.name, name, err)
		return none, fmt.Errorf("creating %s %s: %w", k.name, name, err)
	}
}

// claimOwned returns an existing object of the job's name if the job
// controls it, adopting it first when it is an orphan with the job's
// labels.
func claimOwned[T metav1.Object](ctx context.Context, r *reconciler, k ownedKind[T], obj T) (owned[T], error) {
	var none owned[T]
	if r.controlledByJob(obj) {
		return owned[T]{obj: obj}, nil
	}
	if !r.adoptable(obj) {
		r.c.recorder.Eventf(r.job, corev1.EventTypeWarning, ReasonNameConflict,
			"The %s %s exists and is not controlled by the job; %s", k.name, obj.GetName(), k.takenMeans)
		return owned[T]{taken: true}, nil
	}
	patch, err := r.adoptionPatch(obj)
	if err != nil {
		return none, err
	}
	adopted, err := k.patch(ctx, obj.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			// Gone or changed; the next reconcile sees what it became.
			return none, nil
		}
		return none, fmt.Errorf("adopting %s %s: %w", k.name, obj.GetName(), err)
	}
	r.c.recorder.Eventf(r.job, corev1.EventTypeNormal, ReasonAdopted, "Adopted %s %s", k.name, obj.GetName())
	return owned[T]{obj: adopted}, nil
}

// services are the Services of a namespace as an owned kind.
func (c *Controller) services(namespace, takenMeans string) ownedKind[*corev1.Service] {
	client := c.kubeClient.CoreV1().Services(namespace)
	return ownedKind[*corev1.Service]{name: "service", takenMeans: takenMeans, indexer: c.serviceIndexer,
		create: client.Create, get: client.Get, patch: client.Patch}
}

// deployments are the Deployments of a namespace as an owned kind.
func (c *Controller) deployments(namespace, takenMeans string) ownedKind[*appsv1.Deployment] {
	client := c.kubeClient.AppsV1().Deployments(namespace)
	return ownedKind[*appsv1.Deployment]{name: "deployment", takenMeans: takenMeans, indexer: c.deploymentIndexer,
		create: client.Create, get: client.Get, patch: client.Patch}
}

// deleteOwned deletes an object of the job from the cache (not nil),
// unless it is going already or not the job's.
func (r *reconciler) deleteOwned(ctx context.Context, kind string, obj metav1.Object, why string,
	del func(ctx context.Context, name string, opts metav1.DeleteOptions) error) error {
	if !r.controlledByJob(obj) || obj.GetDeletionTimestamp() != nil {
		return nil
	}
	uid := obj.GetUID()
	err := del(ctx, obj.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		r.c.recorder.Eventf(r.job, corev1.EventTypeWarning, ReasonFailedDelete, "Error deleting %s %s: %v", kind, obj.GetName(), err)
		return fmt.Errorf("deleting %s %s: %w", kind, obj.GetName(), err)
	}
	r.logger.V(2).Info("Deleted "+kind, "name", obj.GetName(), "why", why)
	r.c.recorder.Eventf(r.job, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted %s %s: %s", kind, obj.GetName(), why)
	return nil
}
