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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/generated/clientset/versioned"
	jobinformers "tensorstack.dev/training/pkg/generated/informers/externalversions"
	"tensorstack.dev/training/pkg/podbuilder"
)

// kindHandler is one job kind: its adapter, and the typed informer, lister
// and client calls behind a kind-neutral face.
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

func newTensorFlowHandler(client versioned.Interface, factory jobinformers.SharedInformerFactory) *kindHandler {
	inf := factory.Batch().V1beta1().TensorFlowTrainingJobs()
	return newKindHandler(podbuilder.TensorFlow, podbuilder.TensorFlowKind, inf.Informer(), inf.Lister(),
		func(ns string) jobGetter[*v1beta1.TensorFlowTrainingJob] {
			return inf.Lister().TensorFlowTrainingJobs(ns)
		},
		func(ns string) jobClient[*v1beta1.TensorFlowTrainingJob] {
			return client.BatchV1beta1().TensorFlowTrainingJobs(ns)
		},
		func(ctx context.Context, opts metav1.ListOptions) ([]v1beta1.TrainingJob, string, error) {
			l, err := client.BatchV1beta1().TensorFlowTrainingJobs(metav1.NamespaceAll).List(ctx, opts)
			if err != nil {
				return nil, "", err
			}
			return jobsOf(l.Items), l.Continue, nil
		})
}

func newPyTorchHandler(client versioned.Interface, factory jobinformers.SharedInformerFactory) *kindHandler {
	inf := factory.Batch().V1beta1().PyTorchTrainingJobs()
	return newKindHandler(podbuilder.PyTorch, podbuilder.PyTorchKind, inf.Informer(), inf.Lister(),
		func(ns string) jobGetter[*v1beta1.PyTorchTrainingJob] { return inf.Lister().PyTorchTrainingJobs(ns) },
		func(ns string) jobClient[*v1beta1.PyTorchTrainingJob] {
			return client.BatchV1beta1().PyTorchTrainingJobs(ns)
		},
		func(ctx context.Context, opts metav1.ListOptions) ([]v1beta1.TrainingJob, string, error) {
			l, err := client.BatchV1beta1().PyTorchTrainingJobs(metav1.NamespaceAll).List(ctx, opts)
			if err != nil {
				return nil, "", err
			}
			return jobsOf(l.Items), l.Continue, nil
		})
}

func newXGBoostHandler(client versioned.Interface, factory jobinformers.SharedInformerFactory) *kindHandler {
	inf := factory.Batch().V1beta1().XGBoostTrainingJobs()
	return newKindHandler(podbuilder.XGBoost, podbuilder.XGBoostKind, inf.Informer(), inf.Lister(),
		func(ns string) jobGetter[*v1beta1.XGBoostTrainingJob] { return inf.Lister().XGBoostTrainingJobs(ns) },
		func(ns string) jobClient[*v1beta1.XGBoostTrainingJob] {
			return client.BatchV1beta1().XGBoostTrainingJobs(ns)
		},
		func(ctx context.Context, opts metav1.ListOptions) ([]v1beta1.TrainingJob, string, error) {
			l, err := client.BatchV1beta1().XGBoostTrainingJobs(metav1.NamespaceAll).List(ctx, opts)
			if err != nil {
				return nil, "", err
			}
			return jobsOf(l.Items), l.Continue, nil
		})
}

func newGenericHandler(client versioned.Interface, factory jobinformers.SharedInformerFactory) *kindHandler {
	inf := factory.Batch().V1beta1().GenericJobs()
	return newKindHandler(podbuilder.Generic, podbuilder.GenericKind, inf.Informer(), inf.Lister(),
		func(ns string) jobGetter[*v1beta1.GenericJob] { return inf.Lister().GenericJobs(ns) },
		func(ns string) jobClient[*v1beta1.GenericJob] {
			return client.BatchV1beta1().GenericJobs(ns)
		},
		func(ctx context.Context, opts metav1.ListOptions) ([]v1beta1.TrainingJob, string, error) {
			l, err := client.BatchV1beta1().GenericJobs(metav1.NamespaceAll).List(ctx, opts)
			if err != nil {
				return nil, "", err
			}
			return jobsOf(l.Items), l.Continue, nil
		})
}

func newMPIHandler(client versioned.Interface, factory jobinformers.SharedInformerFactory) *kindHandler {
	inf := factory.Batch().V1beta1().MPIJobs()
	return newKindHandler(podbuilder.MPI, podbuilder.MPIKind, inf.Informer(), inf.Lister(),
		func(ns string) jobGetter[*v1beta1.MPIJob] { return inf.Lister().MPIJobs(ns) },
		func(ns string) jobClient[*v1beta1.MPIJob] {
			return client.BatchV1beta1().MPIJobs(ns)
		},
		func(ctx context.Context, opts metav1.ListOptions) ([]v1beta1.TrainingJob, string, error) {
			l, err := client.BatchV1beta1().MPIJobs(metav1.NamespaceAll).List(ctx, opts)
			if err != nil {
				return nil, "", err
			}
			return jobsOf(l.Items), l.Continue, nil
		})
}

// jobsOf addresses the items of a list as jobs.
func jobsOf[T any, P jobPointer[T]](items []T) []v1beta1.TrainingJob {
	jobs := make([]v1beta1.TrainingJob, len(items))
	for i := range items {
		jobs[i] = P(&items[i])
	}
	return jobs
}

// jobPointer is a kind's versioned type, addressed through its pointer.
type jobPointer[T any] interface {
	*T
	v1beta1.TrainingJob
}

// jobLister, jobGetter and jobClient are the parts of a kind's generated
// lister and typed client that a kindHandler uses.
type jobLister[P any] interface {
	List(selector labels.Selector) ([]P, error)
}

type jobGetter[P any] interface {
	Get(name string) (P, error)
}

type jobClient[P any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (P, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions,
		subresources ...string) (P, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// newKindHandler puts a kind's typed informer, lister and client behind the
// kind-neutral kindHandler.
func newKindHandler[T any, P jobPointer[T]](adapter podbuilder.Adapter, kind string, informer cache.SharedIndexInformer,
	lister jobLister[P], namespaced func(ns string) jobGetter[P], client func(ns string) jobClient[P],
	listPage func(ctx context.Context, opts metav1.ListOptions) ([]v1beta1.TrainingJob, string, error)) *kindHandler {
	return &kindHandler{
		Adapter:  adapter,
		gvk:      v1beta1.SchemeGroupVersion.WithKind(kind),
		informer: informer,
		get: func(ns, name string) (v1beta1.TrainingJob, error) {
			return namespaced(ns).Get(name)
		},
		statusCopy: func(job v1beta1.TrainingJob) (v1beta1.TrainingJob, bool) {
			j, ok := job.(P)
			if !ok {
				return nil, false
			}
			c := P(new(T))
			*c = *j
			j.JobStatus().DeepCopyInto(c.JobStatus())
			return c, true
		},
		list: func() ([]v1beta1.TrainingJob, error) {
			jobs, err := lister.List(labels.Everything())
			out := make([]v1beta1.TrainingJob, len(jobs))
			for i := range jobs {
				out[i] = jobs[i]
			}
			return out, err
		},
		getFresh: func(ctx context.Context, ns, name string) (v1beta1.TrainingJob, error) {
			return client(ns).Get(ctx, name, metav1.GetOptions{})
		},
		patchStatus: func(ctx context.Context, job v1beta1.TrainingJob, patch []byte) (v1beta1.TrainingJob, error) {
			return client(job.GetNamespace()).Patch(ctx, job.GetName(), types.MergePatchType, patch,
				metav1.PatchOptions{}, "status")
		},
		delete: func(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error {
			return client(ns).Delete(ctx, name, opts)
		},
		listPage: listPage,
	}
}
