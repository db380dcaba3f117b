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

// Package jobclient is every training job kind as a client program sees it:
// the names the API gives the kind, and its generated typed client behind
// the TrainingJob view, so that a tool (kubectl training, the dashboard)
// writes each verb once for every kind. A new kind is one more entry in
// Kinds.
package jobclient

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/generated/clientset/versioned"
)

// Kind is one training job kind.
type Kind struct {
	// Name is the API kind, e.g. TensorFlowTrainingJob.
	Name string
	// Resource is the plural resource, e.g. tensorflowtrainingjobs.
	Resource string
	// ShortName is what kubectl accepts for the resource, e.g. tj.
	ShortName string
	// TrainingContainer is the name of the container that runs the training
	// program; without one, a replica's first container is.
	TrainingContainer string
	// New returns an empty job of the kind, as informers need.
	New func() v1beta1.TrainingJob
	// Client returns the kind's client in a namespace ("" for all).
	Client func(c versioned.Interface, namespace string) Client
}

// Client is what tools do with a kind's typed client, with the kind's types
// behind the TrainingJob view.
type Client interface {
	Get(ctx context.Context, name string) (v1beta1.TrainingJob, error)
	// List returns the jobs; ListObject returns the kind's list object, as
	// an informer's ListFunc must.
	List(ctx context.Context, opts metav1.ListOptions) ([]v1beta1.TrainingJob, error)
	ListObject(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	// Create and Update fail when job is of another kind.
	Create(ctx context.Context, job v1beta1.TrainingJob, opts metav1.CreateOptions) (v1beta1.TrainingJob, error)
	Update(ctx context.Context, job v1beta1.TrainingJob, opts metav1.UpdateOptions) (v1beta1.TrainingJob, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Pause(ctx context.Context, name string, opts metav1.CreateOptions) (v1beta1.TrainingJob, error)
	Resume(ctx context.Context, name string, opts metav1.CreateOptions) (v1beta1.TrainingJob, error)
	Debug(ctx context.Context, name string, request *v1beta1.DebugRequest, opts metav1.CreateOptions) (v1beta1.TrainingJob, error)
	// PatchStatus applies a JSON merge patch to the job's status subresource.
	PatchStatus(ctx context.Context, name string, patch []byte, opts metav1.PatchOptions) (v1beta1.TrainingJob, error)
	// Scale sets the replicas of an elastic job through its scale
	// subresource, as kubectl scale does; the API refuses a kind without one
	// (404) and a job that is not elastic or a count outside its bounds (422).
	Scale(ctx context.Context, name string, replicas int32) (*autoscalingv1.Scale, error)
	// ProgressHistory reads the metrics of every stored progress report of
	// the job (its progresshistory subresource).
	ProgressHistory(ctx context.Context, name string) (*v1beta1.ProgressHistory, error)
}

// typedClient is the generated client of one kind: J is its job type and L
// its list type.
type typedClient[J v1beta1.TrainingJob, L runtime.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (J, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Create(ctx context.Context, job J, opts metav1.CreateOptions) (J, error)
	Update(ctx context.Context, job J, opts metav1.UpdateOptions) (J, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Pause(ctx context.Context, name string, request *v1beta1.PauseRequest, opts metav1.CreateOptions) (J, error)
	Resume(ctx context.Context, name string, request *v1beta1.ResumeRequest, opts metav1.CreateOptions) (J, error)
	Debug(ctx context.Context, name string, request *v1beta1.DebugRequest, opts metav1.CreateOptions) (J, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (J, error)
	GetProgressHistory(ctx context.Context, name string, opts metav1.GetOptions) (*v1beta1.ProgressHistory, error)
}

// kindClient adapts a generated client to Client.
type kindClient[J v1beta1.TrainingJob, L runtime.Object] struct {
	typed typedClient[J, L]
	items func(L) []J
	// rest, resource and namespace reach the subresources the generated
	// client has no method for: scale.
	rest      rest.Interface
	resource  string
	namespace string
}

func (c kindClient[J, L]) Get(ctx context.Context, name string) (v1beta1.TrainingJob, error) {
	return c.typed.Get(ctx, name, metav1.GetOptions{})
}

func (c kindClient[J, L]) List(ctx context.Context, opts metav1.ListOptions) ([]v1beta1.TrainingJob, error) {
	list, err := c.typed.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	items := c.items(list)
	jobs := make([]v1beta1.TrainingJob, len(items))
	for i, item := range items {
		jobs[i] = item
	}
	return jobs, nil
}

func (c kindClient[J, L]) ListObject(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return c.typed.List(ctx, opts)
}

func (c kindClient[J, L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return c.typed.Watch(ctx, opts)
}

func (c kindClient[J, L]) Create(ctx context.Context, job v1beta1.TrainingJob, opts metav1.CreateOptions) (v1beta1.TrainingJob, error) {
	typed, err := ofKind[J](job, "create")
	if err != nil {
		return nil, err
	}
	return c.typed.Create(ctx, typed, opts)
}

func (c kindClient[J, L]) Update(ctx context.Context, job v1beta1.TrainingJob, opts metav1.UpdateOptions) (v1beta1.TrainingJob, error) {
	typed, err := ofKind[J](job, "update")
	if err != nil {
		return nil, err
	}
	return c.typed.Update(ctx, typed, opts)
}

// ofKind is job as the kind's type J, or an error naming both for the verb.
func ofKind[J v1beta1.TrainingJob](job v1beta1.TrainingJob, verb string) (J, error) {
	typed, ok := job.(J)
	if !ok {
		var want J
		return typed, fmt.Errorf("cannot %s a %T with the client of %T", verb, job, want)
	}
	return typed, nil
}

func (c kindClient[J, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return c.typed.Delete(ctx, name, opts)
}

func (c kindClient[J, L]) Pause(ctx context.Context, name string, opts metav1.CreateOptions) (v1beta1.TrainingJob, error) {
	return c.typed.Pause(ctx, name, &v1beta1.PauseRequest{}, opts)
}

func (c kindClient[J, L]) Resume(ctx context.Context, name string, opts metav1.CreateOptions) (v1beta1.TrainingJob, error) {
	return c.typed.Resume(ctx, name, &v1beta1.ResumeRequest{}, opts)
}

func (c kindClient[J, L]) Debug(ctx context.Context, name string, request *v1beta1.DebugRequest, opts metav1.CreateOptions) (v1beta1.TrainingJob, error) {
	return c.typed.Debug(ctx, name, request, opts)
}

func (c kindClient[J, L]) PatchStatus(ctx context.Context, name string, patch []byte, opts metav1.PatchOptions) (v1beta1.TrainingJob, error) {
	return c.typed.Patch(ctx, name, types.MergePatchType, patch, opts, "status")
}

func (c kindClient[J, L]) ProgressHistory(ctx context.Context, name string) (*v1beta1.ProgressHistory, error) {
	return c.typed.GetProgressHistory(ctx, name, metav1.GetOptions{})
}

func (c kindClient[J, L]) Scale(ctx context.Context, name string, replicas int32) (*autoscalingv1.Scale, error) {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"replicas": replicas}})
	if err != nil {
		return nil, err
	}
	// Raw: the clientset's scheme holds no autoscaling types to decode into.
	result := c.rest.Patch(types.MergePatchType).Namespace(c.namespace).Resource(c.resource).Name(name).
		SubResource("scale").Body(patch).Do(ctx)
	// Error, not Raw's error, decodes the API's Status (a 422 names the field).
	if err := result.Error(); err != nil {
		return nil, err
	}
	data, err := result.Raw()
	if err != nil {
		return nil, err
	}
	scale := &autoscalingv1.Scale{}
	if err := json.Unmarshal(data, scale); err != nil {
		return nil, fmt.Errorf("reading the scale of %s %s: %w", c.resource, name, err)
	}
	return scale, nil
}

// TensorFlow is the TensorFlowTrainingJob kind.
var TensorFlow = &Kind{
	Name:              batch.TensorFlowKind.Kind,
	Resource:          batch.TensorFlowKind.Resource,
	ShortName:         batch.TensorFlowKind.ShortName,
	TrainingContainer: batch.TensorFlowKind.TrainingContainer,
	New:               func() v1beta1.TrainingJob { return &v1beta1.TensorFlowTrainingJob{} },
	Client: func(c versioned.Interface, namespace string) Client {
		return kindClient[*v1beta1.TensorFlowTrainingJob, *v1beta1.TensorFlowTrainingJobList]{
			typed: c.BatchV1beta1().TensorFlowTrainingJobs(namespace),
			items: func(l *v1beta1.TensorFlowTrainingJobList) []*v1beta1.TensorFlowTrainingJob {
				return itemPointers(l.Items)
			},
			rest: c.BatchV1beta1().RESTClient(), resource: batch.TensorFlowKind.Resource, namespace: namespace,
		}
	},
}

// PyTorch is the PyTorchTrainingJob kind.
var PyTorch = &Kind{
	Name:              batch.PyTorchKind.Kind,
	Resource:          batch.PyTorchKind.Resource,
	ShortName:         batch.PyTorchKind.ShortName,
	TrainingContainer: batch.PyTorchKind.TrainingContainer,
	New:               func() v1beta1.TrainingJob { return &v1beta1.PyTorchTrainingJob{} },
	Client: func(c versioned.Interface, namespace string) Client {
		return kindClient[*v1beta1.PyTorchTrainingJob, *v1beta1.PyTorchTrainingJobList]{
			typed: c.BatchV1beta1().PyTorchTrainingJobs(namespace),
			items: func(l *v1beta1.PyTorchTrainingJobList) []*v1beta1.PyTorchTrainingJob { return itemPointers(l.Items) },
			rest:  c.BatchV1beta1().RESTClient(), resource: batch.PyTorchKind.Resource, namespace: namespace,
		}
	},
}

// XGBoost is the XGBoostTrainingJob kind.
var XGBoost = &Kind{
	Name:              batch.XGBoostKind.Kind,
	Resource:          batch.XGBoostKind.Resource,
	ShortName:         batch.XGBoostKind.ShortName,
	TrainingContainer: batch.XGBoostKind.TrainingContainer,
	New:               func() v1beta1.TrainingJob { return &v1beta1.XGBoostTrainingJob{} },
	Client: func(c versioned.Interface, namespace string) Client {
		return kindClient[*v1beta1.XGBoostTrainingJob, *v1beta1.XGBoostTrainingJobList]{
			typed: c.BatchV1beta1().XGBoostTrainingJobs(namespace),
			items: func(l *v1beta1.XGBoostTrainingJobList) []*v1beta1.XGBoostTrainingJob { return itemPointers(l.Items) },
			rest:  c.BatchV1beta1().RESTClient(), resource: batch.XGBoostKind.Resource, namespace: namespace,
		}
	},
}

// Generic is the GenericJob kind. Its training container is each
// replica's first.
var Generic = &Kind{
	Name:              batch.GenericKind.Kind,
	Resource:          batch.GenericKind.Resource,
	ShortName:         batch.GenericKind.ShortName,
	TrainingContainer: batch.GenericKind.TrainingContainer,
	New:               func() v1beta1.TrainingJob { return &v1beta1.GenericJob{} },
	Client: func(c versioned.Interface, namespace string) Client {
		return kindClient[*v1beta1.GenericJob, *v1beta1.GenericJobList]{
			typed: c.BatchV1beta1().GenericJobs(namespace),
			items: func(l *v1beta1.GenericJobList) []*v1beta1.GenericJob { return itemPointers(l.Items) },
			rest:  c.BatchV1beta1().RESTClient(), resource: batch.GenericKind.Resource, namespace: namespace,
		}
	},
}

// MPI is the MPIJob kind. Its training container is each replica's
// first.
var MPI = &Kind{
	Name:              batch.MPIKind.Kind,
	Resource:          batch.MPIKind.Resource,
	ShortName:         batch.MPIKind.ShortName,
	TrainingContainer: batch.MPIKind.TrainingContainer,
	New:               func() v1beta1.TrainingJob { return &v1beta1.MPIJob{} },
	Client: func(c versioned.Interface, namespace string) Client {
		return kindClient[*v1beta1.MPIJob, *v1beta1.MPIJobList]{
			typed: c.BatchV1beta1().MPIJobs(namespace),
			items: func(l *v1beta1.MPIJobList) []*v1beta1.MPIJob { return itemPointers(l.Items) },
			rest:  c.BatchV1beta1().RESTClient(), resource: batch.MPIKind.Resource, namespace: namespace,
		}
	},
}

// Kinds lists every kind, in the order of batch.Kinds (a test holds them
// together).
var Kinds = []*Kind{TensorFlow, PyTorch, XGBoost, Generic, MPI}

func itemPointers[T any](items []T) []*T {
	pointers := make([]*T, len(items))
	for i := range items {
		pointers[i] = &items[i]
	}
	return pointers
}

// Singular is the lower-case kind, as in tensorflowtrainingjob.
func (k *Kind) Singular() string { return strings.ToLower(k.Name) }

// ByResource finds the kind a plural resource names.
func ByResource(resource string) (*Kind, bool) {
	return find(func(k *Kind) bool { return k.Resource == resource })
}

// ByKind finds the kind a manifest's kind field names.
func ByKind(kind string) (*Kind, bool) {
	return find(func(k *Kind) bool { return k.Name == kind })
}

// Of returns the kind of a job object.
func Of(job v1beta1.TrainingJob) (*Kind, error) {
	for _, k := range Kinds {
		if reflect.TypeOf(k.New()) == reflect.TypeOf(job) {
			return k, nil
		}
	}
	return nil, fmt.Errorf("%T is not a training job kind", job)
}

func find(match func(*Kind) bool) (*Kind, bool) {
	for _, k := range Kinds {
		if match(k) {
			return k, true
		}
	}
	return nil, false
}

// WithKind returns a copy of job with its apiVersion and kind set: typed
// clients decode objects without them. A copy, because informers share the
// objects they hand out.
func (k *Kind) WithKind(job v1beta1.TrainingJob) v1beta1.TrainingJob {
	job = job.DeepCopyObject().(v1beta1.TrainingJob)
	job.GetObjectKind().SetGroupVersionKind(v1beta1.SchemeGroupVersion.WithKind(k.Name))
	return job
}
