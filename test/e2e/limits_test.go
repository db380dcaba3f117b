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

package e2e

import (
	"encoding/json"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// etcdRequestLimit is etcd's default limit on one request, which a job's
// status must stay well under.
const etcdRequestLimit = 1536 * 1024

// TestJobAtTheReplicaCapRuns: the largest job the API accepts runs to its
// outcome on the simulated nodes, its status reports every replica and
// stays well under etcd's request limit; one replica more is refused.
func TestJobAtTheReplicaCapRuns(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "at-cap")
	over := framework.NewPyTorchJob("over-cap").WithReplicas("master", 1).WithReplicas("worker", batch.MaxTotalReplicas)
	if err := f.CreateJob(f.Context(), over.Build(f.Namespace)); !apierrors.IsInvalid(err) {
		t.Fatalf("create of a job one replica over the cap: %v, want 422", err)
	}

	ref := f.Create(framework.NewPyTorchJob("at-cap").WithReplicas("master", 1).
		WithReplicas("worker", batch.MaxTotalReplicas-1).ExitCode(0).RunFor("20s"))
	f.WaitForJob(ref, "Succeeded", 5*time.Minute, func(job v1beta1.TrainingJob) (bool, error) {
		return job.JobStatus().Phase == v1beta1.JobSucceeded, nil
	})

	raw, err := f.Training.BatchV1beta1().RESTClient().Get().Namespace(f.Namespace).
		Resource(v1beta1.PyTorchTrainingJobResource).Name("at-cap").DoRaw(f.Context())
	if err != nil {
		t.Fatal(err)
	}
	var stored v1beta1.PyTorchTrainingJob
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	status, err := json.Marshal(stored.Status)
	if err != nil {
		t.Fatal(err)
	}
	replicas := 0
	for _, task := range stored.Status.Tasks {
		replicas += len(task.ReplicaStatus)
	}
	t.Logf("job at the cap of %d replicas: %d bytes in all, status %d bytes", batch.MaxTotalReplicas, len(raw), len(status))
	if replicas != batch.MaxTotalReplicas {
		t.Errorf("status reports %d replicas, want %d", replicas, batch.MaxTotalReplicas)
	}
	if len(raw) > etcdRequestLimit/2 {
		t.Errorf("the job at the cap is %d bytes, over half of etcd's %d-byte request limit", len(raw), etcdRequestLimit)
	}
}
