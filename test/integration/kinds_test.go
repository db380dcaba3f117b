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

package integration

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/integration/framework"
)

// jobPointer is either job kind's versioned type.
type jobPointer interface {
	*v1beta1.TensorFlowTrainingJob | *v1beta1.PyTorchTrainingJob | *v1beta1.XGBoostTrainingJob | *v1beta1.GenericJob |
		*v1beta1.MPIJob
	v1beta1.TrainingJob
}

// jobClient is the part of a kind's generated typed client the tests use.
type jobClient[J jobPointer, L any] interface {
	Create(ctx context.Context, job J, opts metav1.CreateOptions) (J, error)
	Update(ctx context.Context, job J, opts metav1.UpdateOptions) (J, error)
	UpdateStatus(ctx context.Context, job J, opts metav1.UpdateOptions) (J, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Get(ctx context.Context, name string, opts metav1.GetOptions) (J, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Pause(ctx context.Context, name string, request *v1beta1.PauseRequest, opts metav1.CreateOptions) (J, error)
	Resume(ctx context.Context, name string, request *v1beta1.ResumeRequest, opts metav1.CreateOptions) (J, error)
	Debug(ctx context.Context, name string, request *v1beta1.DebugRequest, opts metav1.CreateOptions) (J, error)
}

// kind is one job kind as the tests drive it.
type kind[J jobPointer, L any] struct {
	resource string
	client   func(namespace string) jobClient[J, L]
	// newJob returns a valid job with the given replica types, one replica each.
	newJob func(name string, types ...v1beta1.ReplicaType) J
	items  func(L) []J
}

func tensorflowKind(s *framework.TestServer) kind[*v1beta1.TensorFlowTrainingJob, *v1beta1.TensorFlowTrainingJobList] {
	return kind[*v1beta1.TensorFlowTrainingJob, *v1beta1.TensorFlowTrainingJobList]{
		resource: v1beta1.TensorFlowTrainingJobResource,
		client: func(ns string) jobClient[*v1beta1.TensorFlowTrainingJob, *v1beta1.TensorFlowTrainingJobList] {
			return s.Client.BatchV1beta1().TensorFlowTrainingJobs(ns)
		},
		newJob: func(name string, types ...v1beta1.ReplicaType) *v1beta1.TensorFlowTrainingJob {
			if len(types) == 0 {
				types = []v1beta1.ReplicaType{v1beta1.ReplicaTypeWorker}
			}
			return &v1beta1.TensorFlowTrainingJob{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: v1beta1.TensorFlowTrainingJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{
					ReplicaSpecs: replicaSpecs(v1beta1.TensorFlowContainerName, types),
				}},
			}
		},
		items: func(l *v1beta1.TensorFlowTrainingJobList) []*v1beta1.TensorFlowTrainingJob {
			return pointersTo(l.Items)
		},
	}
}

func pytorchKind(s *framework.TestServer) kind[*v1beta1.PyTorchTrainingJob, *v1beta1.PyTorchTrainingJobList] {
	return kind[*v1beta1.PyTorchTrainingJob, *v1beta1.PyTorchTrainingJobList]{
		resource: v1beta1.PyTorchTrainingJobResource,
		client: func(ns string) jobClient[*v1beta1.PyTorchTrainingJob, *v1beta1.PyTorchTrainingJobList] {
			return s.Client.BatchV1beta1().PyTorchTrainingJobs(ns)
		},
		newJob: func(name string, types ...v1beta1.ReplicaType) *v1beta1.PyTorchTrainingJob {
			if len(types) == 0 {
				types = []v1beta1.ReplicaType{v1beta1.ReplicaTypeMaster, v1beta1.ReplicaTypeWorker}
			}
			return &v1beta1.PyTorchTrainingJob{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: v1beta1.PyTorchTrainingJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{
					ReplicaSpecs: replicaSpecs(v1beta1.PyTorchContainerName, types),
				}},
			}
		},
		items: func(l *v1beta1.PyTorchTrainingJobList) []*v1beta1.PyTorchTrainingJob { return pointersTo(l.Items) },
	}
}

func xgboostKind(s *framework.TestServer) kind[*v1beta1.XGBoostTrainingJob, *v1beta1.XGBoostTrainingJobList] {
	return kind[*v1beta1.XGBoostTrainingJob, *v1beta1.XGBoostTrainingJobList]{
		resource: v1beta1.XGBoostTrainingJobResource,
		client: func(ns string) jobClient[*v1beta1.XGBoostTrainingJob, *v1beta1.XGBoostTrainingJobList] {
			return s.Client.BatchV1beta1().XGBoostTrainingJobs(ns)
		},
		newJob: func(name string, types ...v1beta1.ReplicaType) *v1beta1.XGBoostTrainingJob {
			if len(types) == 0 {
				types = []v1beta1.ReplicaType{v1beta1.ReplicaTypeMaster, v1beta1.ReplicaTypeWorker}
			}
			return &v1beta1.XGBoostTrainingJob{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: v1beta1.XGBoostTrainingJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{
					ReplicaSpecs: replicaSpecs(v1beta1.XGBoostContainerName, types),
				}},
			}
		},
		items: func(l *v1beta1.XGBoostTrainingJobList) []*v1beta1.XGBoostTrainingJob { return pointersTo(l.Items) },
	}
}

func genericKind(s *framework.TestServer) kind[*v1beta1.GenericJob, *v1beta1.GenericJobList] {
	return kind[*v1beta1.GenericJob, *v1beta1.GenericJobList]{
		resource: v1beta1.GenericJobResource,
		client: func(ns string) jobClient[*v1beta1.GenericJob, *v1beta1.GenericJobList] {
			return s.Client.BatchV1beta1().GenericJobs(ns)
		},
		newJob: func(name string, types ...v1beta1.ReplicaType) *v1beta1.GenericJob {
			if len(types) == 0 {
				types = []v1beta1.ReplicaType{v1beta1.ReplicaTypeMaster, v1beta1.ReplicaTypeWorker}
			}
			return &v1beta1.GenericJob{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: v1beta1.GenericJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{
					ReplicaSpecs: replicaSpecs("main", types),
				}},
			}
		},
		items: func(l *v1beta1.GenericJobList) []*v1beta1.GenericJob { return pointersTo(l.Items) },
	}
}

func mpiKind(s *framework.TestServer) kind[*v1beta1.MPIJob, *v1beta1.MPIJobList] {
	return kind[*v1beta1.MPIJob, *v1beta1.MPIJobList]{
		resource: v1beta1.MPIJobResource,
		client: func(ns string) jobClient[*v1beta1.MPIJob, *v1beta1.MPIJobList] {
			return s.Client.BatchV1beta1().MPIJobs(ns)
		},
		newJob: func(name string, types ...v1beta1.ReplicaType) *v1beta1.MPIJob {
			if len(types) == 0 {
				types = []v1beta1.ReplicaType{v1beta1.ReplicaTypeLauncher, v1beta1.ReplicaTypeWorker}
			}
			return &v1beta1.MPIJob{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: v1beta1.MPIJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{
					ReplicaSpecs: replicaSpecs("main", types),
				}},
			}
		},
		items: func(l *v1beta1.MPIJobList) []*v1beta1.MPIJob { return pointersTo(l.Items) },
	}
}

func pointersTo[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

func replicaSpecs(container string, types []v1beta1.ReplicaType) []v1beta1.ReplicaSpec {
	specs := make([]v1beta1.ReplicaSpec, 0, len(types))
	for _, t := range types {
		specs = append(specs, v1beta1.ReplicaSpec{
			Type: t,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name:    container,
				Image:   "registry.example/train:1.0",
				Command: []string{"python", "train.py"},
			}}}},
		})
	}
	return specs
}

// bothKinds runs test once per job kind, as subtests, on one server.
func bothKinds(t *testing.T, s *framework.TestServer,
	tensorflow func(*testing.T, kind[*v1beta1.TensorFlowTrainingJob, *v1beta1.TensorFlowTrainingJobList]),
	pytorch func(*testing.T, kind[*v1beta1.PyTorchTrainingJob, *v1beta1.PyTorchTrainingJobList]),
) {
	t.Run("TensorFlowTrainingJob", func(t *testing.T) { tensorflow(t, tensorflowKind(s)) })
	t.Run("PyTorchTrainingJob", func(t *testing.T) { pytorch(t, pytorchKind(s)) })
}

// everyKind is bothKinds, XGBoost's, GenericJob's and MPIJob's.
func everyKind(t *testing.T, s *framework.TestServer,
	tensorflow func(*testing.T, kind[*v1beta1.TensorFlowTrainingJob, *v1beta1.TensorFlowTrainingJobList]),
	pytorch func(*testing.T, kind[*v1beta1.PyTorchTrainingJob, *v1beta1.PyTorchTrainingJobList]),
	xgboost func(*testing.T, kind[*v1beta1.XGBoostTrainingJob, *v1beta1.XGBoostTrainingJobList]),
	generic func(*testing.T, kind[*v1beta1.GenericJob, *v1beta1.GenericJobList]),
	mpi func(*testing.T, kind[*v1beta1.MPIJob, *v1beta1.MPIJobList]),
) {
	bothKinds(t, s, tensorflow, pytorch)
	t.Run("XGBoostTrainingJob", func(t *testing.T) { xgboost(t, xgboostKind(s)) })
	t.Run("GenericJob", func(t *testing.T) { generic(t, genericKind(s)) })
	t.Run("MPIJob", func(t *testing.T) { mpi(t, mpiKind(s)) })
}
