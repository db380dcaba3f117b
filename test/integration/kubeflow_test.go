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
	"strconv"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/kubeflow"
	"tensorstack.dev/training/pkg/kubeflow/kubeflowtest"
	"tensorstack.dev/training/test/integration/framework"
)

// TestKubeflowExamplesAccepted converts Kubeflow's own example jobs
// (training-operator's and mpi-operator's) and creates each, dry run,
// through the generated clientset:
// the server must accept every one as converted, and store none.
func TestKubeflowExamplesAccepted(t *testing.T) {
	examples := kubeflowtest.AllExamples(t)
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	for _, example := range examples {
		t.Run(example.Name(), func(t *testing.T) {
			converted, err := kubeflow.ConvertObject(example.Object)
			if err != nil {
				t.Fatalf("converting: %v", err)
			}
			job, ok := converted.Object.(v1beta1.TrainingJob)
			if !ok {
				t.Fatalf("converted into %T, not a training job", converted.Object)
			}
			namespace := job.GetNamespace()
			if namespace == "" {
				namespace = metav1.NamespaceDefault // kubectl's default context
			}

			var created v1beta1.TrainingJob
			var get func() error
			switch job := converted.Object.(type) {
			case *v1beta1.TensorFlowTrainingJob:
				client := s.Client.BatchV1beta1().TensorFlowTrainingJobs(namespace)
				created, err = client.Create(ctx, job, dryRun)
				get = func() error { _, err := client.Get(ctx, job.Name, metav1.GetOptions{}); return err }
			case *v1beta1.PyTorchTrainingJob:
				client := s.Client.BatchV1beta1().PyTorchTrainingJobs(namespace)
				created, err = client.Create(ctx, job, dryRun)
				get = func() error { _, err := client.Get(ctx, job.Name, metav1.GetOptions{}); return err }
			case *v1beta1.XGBoostTrainingJob:
				client := s.Client.BatchV1beta1().XGBoostTrainingJobs(namespace)
				created, err = client.Create(ctx, job, dryRun)
				get = func() error { _, err := client.Get(ctx, job.Name, metav1.GetOptions{}); return err }
			case *v1beta1.MPIJob:
				client := s.Client.BatchV1beta1().MPIJobs(namespace)
				created, err = client.Create(ctx, job, dryRun)
				get = func() error { _, err := client.Get(ctx, job.Name, metav1.GetOptions{}); return err }
			default:
				t.Fatalf("converted into %T, which the test does not create", job)
			}
			if err != nil {
				t.Fatalf("dry-run create refused: %v", err)
			}

			if created.GetName() != job.GetName() {
				t.Errorf("created %q, want %q", created.GetName(), job.GetName())
			}
			gotTypes, wantTypes := replicaTypes(created), replicaTypes(job)
			if gotTypes != wantTypes {
				t.Errorf("created with replica types %s, want %s", gotTypes, wantTypes)
			}
			if err := get(); !apierrors.IsNotFound(err) {
				t.Errorf("after a dry run, get returned %v, want NotFound", err)
			}
		})
	}
}

// replicaTypes lists a job's replica types and counts in order, e.g. "master=1 worker=2".
func replicaTypes(job v1beta1.TrainingJob) string {
	var out string
	for _, r := range job.CommonSpec().ReplicaSpecs {
		n := int32(1)
		if r.Replicas != nil {
			n = *r.Replicas
		}
		if out != "" {
			out += " "
		}
		out += string(r.Type) + "=" + strconv.Itoa(int(n))
	}
	return out
}
