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
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/generated/clientset/versioned"
	jobinformers "tensorstack.dev/training/pkg/generated/informers/externalversions"
	"tensorstack.dev/training/pkg/jobclient"
	"tensorstack.dev/training/pkg/podbuilder"
)

// kindHandler is one job kind: its adapter, and the informer, cache and
// client calls behind a kind-neutral face. Every kind's is made the same
// way (newKindHandler), from its row of jobclient.Kinds.
type kindHandler struct {
	podbuilder.Adapter
	gvk      schema.GroupVersionKind
	informer cache.SharedIndexInformer

	get func(namespace, name string) (v1beta1.TrainingJob, error)
	// statusCopy returns a copy of a cached job whose status may be edited.
	// Spec and metadata are shared with the cache and must not be written.
	statusCopy func(job v1beta1.TrainingJob) (v1beta1.TrainingJob, bool)
	list       func() ([]v1beta1.TrainingJob, error)
	getFresh   func(ctx context.Context, namespace, name string) (v1beta1.TrainingJob, error)
	// listPage reads one page of the stored jobs of every namespace, and
	// the continue token of the next.
	listPage func(ctx context.Context, opts metav1.ListOptions) (jobs []v1beta1.TrainingJob, next string, err error)
	// patchStatus sends a merge patch (statusPatch) to the job's status.
	patchStatus func(ctx context.Context, job v1beta1.TrainingJob, patch []byte) (v1beta1.TrainingJob, error)
	delete      func(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error
}

// newKindHandlers makes the handler of every kind.
func newKindHandlers(client versioned.Interface, factory jobinformers.SharedInformerFactory) ([]*kindHandler, error) {
	handlers := make([]*kindHandler, 0, len(jobclient.Kinds))
	for _, k := range jobclient.Kinds {
		h, err := newKindHandler(k, client, factory)
		if err != nil {
			return nil, err
		}
		handlers = append(handlers, h)
	}
	return handlers, nil
}

// newKindHandler puts a kind's informer (the factory's, so its list
// options and cache transform hold), its cache and its client behind the
// kind-neutral kindHandler.
func newKindHandler(k *jobclient.Kind, client versioned.Interface, factory jobinformers.SharedInformerFactory) (*kindHandler, error) {
	adapter, ok := podbuilder.AdapterOf(k.Name)
	if !ok {
		return nil, fmt.Errorf("the pod builder has no adapter for %s", k.Name)
	}
	gvr := v1beta1.SchemeGroupVersion.WithResource(k.Resource)
	generic, err := factory.ForResource(gvr)
	if err != nil {
		return nil, fmt.Errorf("the informer of %s: %w", k.Name, err)
	}
	informer := generic.Informer()
	jobType := reflect.TypeOf(k.New())
	asJob := func(obj any) (v1beta1.TrainingJob, bool) {
		job, ok := obj.(v1beta1.TrainingJob)
		return job, ok && reflect.TypeOf(job) == jobType
	}
	return &kindHandler{
		Adapter:  adapter,
		gvk:      v1beta1.SchemeGroupVersion.WithKind(k.Name),
		informer: informer,
		get: func(ns, name string) (v1beta1.TrainingJob, error) {
			obj, exists, err := informer.GetIndexer().GetByKey(ns + "/" + name)
			switch {
			case err != nil:
				return nil, err
			case !exists:
				return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
			}
			job, ok := asJob(obj)
			if !ok {
				return nil, fmt.Errorf("the cache of %s holds a %T", k.Resource, obj)
			}
			return job, nil
		},
		statusCopy: func(job v1beta1.TrainingJob) (v1beta1.TrainingJob, bool) {
			if _, ok := asJob(job); !ok {
				return nil, false
			}
			// A shallow copy of the struct, then a status of its own.
			c := reflect.New(jobType.Elem())
			c.Elem().Set(reflect.ValueOf(job).Elem())
			out := c.Interface().(v1beta1.TrainingJob)
			job.JobStatus().DeepCopyInto(out.JobStatus())
			return out, true
		},
		list: func() ([]v1beta1.TrainingJob, error) {
			objs := informer.GetIndexer().List()
			jobs := make([]v1beta1.TrainingJob, 0, len(objs))
			for _, obj := range objs {
				if job, ok := asJob(obj); ok {
					jobs = append(jobs, job)
				}
			}
			return jobs, nil
		},
		getFresh: func(ctx context.Context, ns, name string) (v1beta1.TrainingJob, error) {
			return k.Client(client, ns).Get(ctx, name)
		},
		patchStatus: func(ctx context.Context, job v1beta1.TrainingJob, patch []byte) (v1beta1.TrainingJob, error) {
			return k.Client(client, job.GetNamespace()).PatchStatus(ctx, job.GetName(), patch, metav1.PatchOptions{})
		},
		delete: func(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error {
			return k.Client(client, ns).Delete(ctx, name, opts)
		},
		listPage: func(ctx context.Context, opts metav1.ListOptions) ([]v1beta1.TrainingJob, string, error) {
			list, err := k.Client(client, metav1.NamespaceAll).ListObject(ctx, opts)
			if err != nil {
				return nil, "", err
			}
			return jobsOfList(list)
		},
	}, nil
}

// jobsOfList reads the jobs of a kind's list object, and its continue
// token.
func jobsOfList(list runtime.Object) ([]v1beta1.TrainingJob, string, error) {
	accessor, err := meta.ListAccessor(list)
	if err != nil {
		return nil, "", err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, "", err
	}
	jobs := make([]v1beta1.TrainingJob, len(items))
	for i, item := range items {
		job, ok := item.(v1beta1.TrainingJob)
		if !ok {
			return nil, "", fmt.Errorf("a list of jobs holds a %T", item)
		}
		jobs[i] = job
	}
	return jobs, accessor.GetContinue(), nil
}
