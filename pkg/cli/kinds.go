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

package cli

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/generated/clientset/versioned"
)

// jobKind is one of the two training job kinds. Every command is written
// once against the TrainingJob view; the kind supplies the names and the
// typed client behind it.
type jobKind struct {
	// Kind is the API kind, e.g. TensorFlowTrainingJob.
	Kind string
	// Resource is the plural resource name, e.g. tensorflowtrainingjobs.
	Resource string
	// ShortName is what kubectl accepts for the resource, e.g. tj.
	ShortName string
	// TrainingContainer is the name of the container that runs the training
	// program; without one, a replica's first container is.
	TrainingContainer string
	// decidingReplica is the replica whose outcome decides the job, the one
	// `logs` shows when no replica is named.
	decidingReplica func(spec *v1beta1.TrainingJobSpec) (replicaRef, bool)
	// client returns the kind's client in a namespace.
	client func(c versioned.Interface, namespace string) jobClient
}

// jobClient is the part of a kind's typed client the commands use, with the
// kind's types behind the TrainingJob view.
type jobClient interface {
	Get(ctx context.Context, name string) (v1beta1.TrainingJob, error)
	List(ctx context.Context, opts metav1.ListOptions) ([]v1beta1.TrainingJob, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Create(ctx context.Context, job v1beta1.TrainingJob, opts metav1.CreateOptions) (v1beta1.TrainingJob, error)
	Pause(ctx context.Context, name string, opts metav1.CreateOptions) (v1beta1.TrainingJob, error)
	Resume(ctx context.Context, name string, opts metav1.CreateOptions) (v1beta1.TrainingJob, error)
	Debug(ctx context.Context, name string, request *v1beta1.DebugRequest, opts metav1.CreateOptions) (v1beta1.TrainingJob, error)
	// PatchStatus applies a JSON merge patch to the job's status subresource.
	PatchStatus(ctx context.Context, name string, patch []byte, opts metav1.PatchOptions) (v1beta1.TrainingJob, error)
}

// typedJobClient is the generated client of one kind: J is the job type and
// L its list type.
type typedJobClient[J v1beta1.TrainingJob, L runtime.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (J, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Create(ctx context.Context, job J, opts metav1.CreateOptions) (J, error)
	Pause(ctx context.Context, name string, request *v1beta1.PauseRequest, opts metav1.CreateOptions) (J, error)
	Resume(ctx context.Context, name string, request *v1beta1.ResumeRequest, opts metav1.CreateOptions) (J, error)
	Debug(ctx context.Context, name string, request *v1beta1.DebugRequest, opts metav1.CreateOptions) (J, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (J, error)
}

// kindClient adapts a generated client to jobClient.
type kindClient[J v1beta1.TrainingJob, L runtime.Object] struct {
	typed typedJobClient[J, L]
	items func(L) []J
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

func (c kindClient[J, L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return c.typed.Watch(ctx, opts)
}

func (c kindClient[J, L]) Create(ctx context.Context, job v1beta1.TrainingJob, opts metav1.CreateOptions) (v1beta1.TrainingJob, error) {
	typed, ok := job.(J)
	if !ok {
		var want J
		return nil, fmt.Errorf("cannot create a %T with the client of %T", job, want)
	}
	return c.typed.Create(ctx, typed, opts)
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

var tensorFlowKind = &jobKind{
	Kind:              "TensorFlowTrainingJob",
	Resource:          v1beta1.TensorFlowTrainingJobResource,
	ShortName:         "tj",
	TrainingContainer: v1beta1.TensorFlowContainerName,
	// The chief decides a TensorFlow job; without one, worker 0 does.
	decidingReplica: func(spec *v1beta1.TrainingJobSpec) (replicaRef, bool) {
		for _, t := range []v1beta1.ReplicaType{v1beta1.ReplicaTypeChief, v1beta1.ReplicaTypeWorker} {
			if replicaCount(spec, t) > 0 {
				return replicaRef{Type: t}, true
			}
		}
		return firstReplica(spec)
	},
	client: func(c versioned.Interface, namespace string) jobClient {
		return kindClient[*v1beta1.TensorFlowTrainingJob, *v1beta1.TensorFlowTrainingJobList]{
			typed: c.BatchV1beta1().TensorFlowTrainingJobs(namespace),
			items: func(l *v1beta1.TensorFlowTrainingJobList) []*v1beta1.TensorFlowTrainingJob {
				return itemPointers(l.Items)
			},
		}
	},
}

var pyTorchKind = &jobKind{
	Kind:              "PyTorchTrainingJob",
	Resource:          v1beta1.PyTorchTrainingJobResource,
	ShortName:         "pj",
	TrainingContainer: v1beta1.PyTorchContainerName,
	// The master replica (type master, else index 0 of the first listed
	// type) is also the one MASTER_ADDR points at.
	decidingReplica: func(spec *v1beta1.TrainingJobSpec) (replicaRef, bool) {
		if replicaCount(spec, v1beta1.ReplicaTypeMaster) > 0 {
			return replicaRef{Type: v1beta1.ReplicaTypeMaster}, true
		}
		return firstReplica(spec)
	},
	client: func(c versioned.Interface, namespace string) jobClient {
		return kindClient[*v1beta1.PyTorchTrainingJob, *v1beta1.PyTorchTrainingJobList]{
			typed: c.BatchV1beta1().PyTorchTrainingJobs(namespace),
			items: func(l *v1beta1.PyTorchTrainingJobList) []*v1beta1.PyTorchTrainingJob {
				return itemPointers(l.Items)
			},
		}
	},
}

// jobKinds lists both kinds in the order commands look them up and list them.
var jobKinds = []*jobKind{tensorFlowKind, pyTorchKind}

func itemPointers[T any](items []T) []*T {
	pointers := make([]*T, len(items))
	for i := range items {
		pointers[i] = &items[i]
	}
	return pointers
}

// Singular is the lower-case kind, as in tensorflowtrainingjob.
func (k *jobKind) Singular() string { return strings.ToLower(k.Kind) }

// Ref is how the commands name a job of this kind: tj/NAME.
func (k *jobKind) Ref(name string) string { return k.ShortName + "/" + name }

// kindOf returns the kind of a job object.
func kindOf(job v1beta1.TrainingJob) (*jobKind, error) {
	switch job.(type) {
	case *v1beta1.TensorFlowTrainingJob:
		return tensorFlowKind, nil
	case *v1beta1.PyTorchTrainingJob:
		return pyTorchKind, nil
	default:
		return nil, fmt.Errorf("%T is not a training job kind", job)
	}
}

// kindNamed finds the kind a kubectl-style resource word names: the short
// name, the singular or plural resource or the kind, case-insensitively, with
// or without the group (and version) after a dot.
func kindNamed(word string) (*jobKind, bool) {
	word = strings.ToLower(word)
	resource, group, qualified := strings.Cut(word, ".")
	if qualified && group != v1beta1.GroupName && group != v1beta1.SchemeGroupVersion.Version+"."+v1beta1.GroupName {
		return nil, false
	}
	for _, k := range jobKinds {
		if resource == k.ShortName || resource == k.Singular() || resource == k.Resource {
			return k, true
		}
	}
	return nil, false
}
