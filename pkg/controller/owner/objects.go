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

package owner

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Kind is a kind of object a job owns one of by name (its Service, its
// TensorBoard's Deployment and Service): where the controller's cache keeps
// them and the calls that write them.
type Kind[T metav1.Object] struct {
	// Name is the kind as messages and events say it ("service").
	Name string
	// TakenMeans says what a name taken by someone else costs the job.
	TakenMeans string
	Indexer    cache.Indexer
	Create     func(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	// Get and Patch may be nil for a kind the controller may not get or
	// patch (its role): such an object is only created, a name taken by an
	// object the cache does not show yet waits for the cache, and an orphan
	// is reported as taken rather than adopted.
	Get   func(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Patch func(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions,
		subresources ...string) (T, error)
}

// Result is what Ensure found or made.
type Result[T metav1.Object] struct {
	// Obj is the job's object as it stands; nil when there is none yet.
	Obj T
	// Created: this reconcile created it.
	Created bool
	// Taken: the name belongs to something else, which is reported as an
	// event and left alone.
	Taken bool
}

// Ensure makes sure the job has the object desired describes: it
// creates it when missing and adopts an orphan of that name carrying the
// job's labels.
func Ensure[T metav1.Object](ctx context.Context, j *Job, k Kind[T], desired T) (Result[T], error) {
	var none Result[T]
	name := desired.GetName()
	obj, found, err := k.Indexer.GetByKey(desired.GetNamespace() + "/" + name)
	if err != nil {
		return none, fmt.Errorf("getting %s %s: %w", k.Name, name, err)
	}
	if cached, ok := obj.(T); found && ok {
		return claim(ctx, j, k, cached)
	}
	created, err := k.Create(ctx, desired, metav1.CreateOptions{})
	switch {
	case err == nil:
		j.Logger.V(2).Info("Created "+k.Name, k.Name, klog.KObj(created))
		j.Normalf(ReasonSuccessfulCreate, "Created %s %s", k.Name, name)
		return Result[T]{Obj: created, Created: true}, nil
	case apierrors.IsAlreadyExists(err) && k.Get == nil:
		// Either the cache is behind, or the name is someone else's; the
		// cache tells on a later reconcile.
		return none, nil
	case apierrors.IsAlreadyExists(err):
		existing, err := k.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return none, fmt.Errorf("looking at %s %s: %w", k.Name, name, err)
		}
		return claim(ctx, j, k, existing)
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return none, nil
	default:
		j.Warningf(ReasonFailedCreate, "Error creating %s %s: %v", k.Name, name, err)
		return none, fmt.Errorf("creating %s %s: %w", k.Name, name, err)
	}
}

// claim returns an existing object of the job's name if the job
// controls it, adopting it first when it is an orphan with the job's
// labels.
func claim[T metav1.Object](ctx context.Context, j *Job, k Kind[T], obj T) (Result[T], error) {
	var none Result[T]
	if j.Controls(obj) {
		return Result[T]{Obj: obj}, nil
	}
	if !j.Adoptable(obj) || k.Patch == nil {
		j.Warningf(ReasonNameConflict,
			"%s %s exists and is not controlled by the job; %s", capitalized(k.Name), obj.GetName(), k.TakenMeans)
		return Result[T]{Taken: true}, nil
	}
	patch, err := j.AdoptionPatch(obj)
	if err != nil {
		return none, err
	}
	adopted, err := k.Patch(ctx, obj.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			// Gone or changed; the next reconcile sees what it became.
			return none, nil
		}
		return none, fmt.Errorf("adopting %s %s: %w", k.Name, obj.GetName(), err)
	}
	j.Normalf(ReasonAdopted, "Adopted %s %s", k.Name, obj.GetName())
	return Result[T]{Obj: adopted}, nil
}

// Delete deletes an object of the job from the cache (not nil),
// unless it is going already or not the job's.
func Delete(ctx context.Context, j *Job, kind string, obj metav1.Object, why string,
	del func(ctx context.Context, name string, opts metav1.DeleteOptions) error) error {
	if !j.Controls(obj) || obj.GetDeletionTimestamp() != nil {
		return nil
	}
	uid := obj.GetUID()
	err := del(ctx, obj.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		j.Warningf(ReasonFailedDelete, "Error deleting %s %s: %v", kind, obj.GetName(), err)
		return fmt.Errorf("deleting %s %s: %w", kind, obj.GetName(), err)
	}
	j.Logger.V(2).Info("Deleted "+kind, "name", obj.GetName(), "why", why)
	j.Normalf(ReasonSuccessfulDelete, "Deleted %s %s: %s", kind, obj.GetName(), why)
	return nil
}

// Services are the Services of a namespace, cached in indexer, as a kind a
// job owns.
func Services(client kubernetes.Interface, indexer cache.Indexer, namespace, takenMeans string) Kind[*corev1.Service] {
	c := client.CoreV1().Services(namespace)
	return Kind[*corev1.Service]{Name: "service", TakenMeans: takenMeans, Indexer: indexer, Create: c.Create, Get: c.Get, Patch: c.Patch}
}

// Deployments are the Deployments of a namespace, cached in indexer, as a
// kind a job owns. The controller's role may create, update and delete
// Deployments but not get or patch them (artifacts/deploy), so they are not
// adopted.
func Deployments(client kubernetes.Interface, indexer cache.Indexer, namespace, takenMeans string) Kind[*appsv1.Deployment] {
	c := client.AppsV1().Deployments(namespace)
	return Kind[*appsv1.Deployment]{Name: "deployment", TakenMeans: takenMeans, Indexer: indexer, Create: c.Create}
}

// Cached returns an object of a cache by namespace and name, or the zero
// value when the cache has none.
func Cached[T any](indexer cache.Indexer, namespace, name string) (T, error) {
	var zero T
	obj, ok, err := indexer.GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return zero, err
	}
	t, _ := obj.(T)
	return t, nil
}

// capitalized starts a sentence with a kind's name ("Service").
func capitalized(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
