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

package dashboard

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/generated/clientset/versioned"
)

// jobKind is one training job kind as the dashboard's URLs and pages name it.
type jobKind struct {
	// Kind is the API kind, e.g. PyTorchTrainingJob.
	Kind string
	// Resource is the plural resource, e.g. pytorchtrainingjobs; the URLs
	// of the dashboard's API name kinds by it, as the Kubernetes API does.
	Resource string
	// newJob returns an empty job of the kind, which informers need.
	newJob func() v1beta1.TrainingJob
	// client returns the kind's client in a namespace ("" for all).
	client func(c versioned.Interface, namespace string) jobClient
}

// jobClient is what the dashboard does with a kind's typed client, with the
// kind's types behind the TrainingJob view, so that each handler is written
// once for both kinds.
type jobClient interface {
	// List returns the kind's list object, as an informer's ListFunc must.
	List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Get(ctx context.Context, name string) (v1beta1.TrainingJob, error)
	Create(ctx context.Context, job v1beta1.TrainingJob, opts metav1.CreateOptions) (v1beta1.TrainingJob, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Pause(ctx context.Context, name string) (v1beta1.TrainingJob, error)
	Resume(ctx context.Context, name string) (v1beta1.TrainingJob, error)
}

// typedJobClient is the generated client of one kind: J is its job type and
// L its list type.
type typedJobClient[J v1beta1.TrainingJob, L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (J, error)
	Create(ctx context.Context, job J, opts metav1.CreateOptions) (J, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Pause(ctx context.Context, name string, request *v1beta1.PauseRequest, opts metav1.CreateOptions) (J, error)
	Resume(ctx context.Context, name string, request *v1beta1.ResumeRequest, opts metav1.CreateOptions) (J, error)
}

// typedClient adapts a generated client to jobClient.
type typedClient[J v1beta1.TrainingJob, L runtime.Object] struct {
	typed typedJobClient[J, L]
}

func (c typedClient[J, L]) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return c.typed.List(ctx, opts)
}

func (c typedClient[J, L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return c.typed.Watch(ctx, opts)
}

func (c typedClient[J, L]) Get(ctx context.Context, name string) (v1beta1.TrainingJob, error) {
	return c.typed.Get(ctx, name, metav1.GetOptions{})
}

func (c typedClient[J, L]) Create(ctx context.Context, job v1beta1.TrainingJob, opts metav1.CreateOptions) (v1beta1.TrainingJob, error) {
	// The caller decoded job by its kind, so the assertion holds.
	return c.typed.Create(ctx, job.(J), opts)
}

func (c typedClient[J, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return c.typed.Delete(ctx, name, opts)
}

func (c typedClient[J, L]) Pause(ctx context.Context, name string) (v1beta1.TrainingJob, error) {
	return c.typed.Pause(ctx, name, &v1beta1.PauseRequest{}, metav1.CreateOptions{})
}

func (c typedClient[J, L]) Resume(ctx context.Context, name string) (v1beta1.TrainingJob, error) {
	return c.typed.Resume(ctx, name, &v1beta1.ResumeRequest{}, metav1.CreateOptions{})
}

// jobKinds lists every kind, in the order the list shows them.
var jobKinds = []jobKind{
	{
		Kind:     "TensorFlowTrainingJob",
		Resource: v1beta1.TensorFlowTrainingJobResource,
		newJob:   func() v1beta1.TrainingJob { return &v1beta1.TensorFlowTrainingJob{} },
		client: func(c versioned.Interface, namespace string) jobClient {
			return typedClient[*v1beta1.TensorFlowTrainingJob, *v1beta1.TensorFlowTrainingJobList]{
				typed: c.BatchV1beta1().TensorFlowTrainingJobs(namespace),
			}
		},
	},
	{
		Kind:     "PyTorchTrainingJob",
		Resource: v1beta1.PyTorchTrainingJobResource,
		newJob:   func() v1beta1.TrainingJob { return &v1beta1.PyTorchTrainingJob{} },
		client: func(c versioned.Interface, namespace string) jobClient {
			return typedClient[*v1beta1.PyTorchTrainingJob, *v1beta1.PyTorchTrainingJobList]{
				typed: c.BatchV1beta1().PyTorchTrainingJobs(namespace),
			}
		},
	},
}

// kindByResource finds the kind a URL's resource segment names.
func kindByResource(resource string) (jobKind, bool) {
	return findKind(func(k jobKind) bool { return k.Resource == resource })
}

// kindByKind finds the kind a manifest's kind field names.
func kindByKind(kind string) (jobKind, bool) {
	return findKind(func(k jobKind) bool { return k.Kind == kind })
}

func findKind(match func(jobKind) bool) (jobKind, bool) {
	for _, k := range jobKinds {
		if match(k) {
			return k, true
		}
	}
	return jobKind{}, false
}

// withKind returns a copy of job with its apiVersion and kind set: the typed
// clients decode objects without them, and the page and the YAML need them.
// A copy, because informers share the objects they hand out.
func (k jobKind) withKind(job v1beta1.TrainingJob) v1beta1.TrainingJob {
	job = job.DeepCopyObject().(v1beta1.TrainingJob)
	job.GetObjectKind().SetGroupVersionKind(v1beta1.SchemeGroupVersion.WithKind(k.Kind))
	return job
}
