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
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// TestManagedBy: a job whose spec.managedBy names MultiKueue is left to it:
// no pod, no Service and no status from our controller, only the Workload
// MultiKueue dispatches (TestMultiKueue dispatches one). The field cannot change, and a controller nobody runs is
// refused with the field's path.
func TestManagedBy(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "managedby")
	ref := f.Create(framework.NewPyTorchJob("remote").WithReplicas("master", 1).WithReplicas("worker", 1).
		Label("kueue.x-k8s.io/queue-name", "user-queue").ManagedBy(batch.ManagedByMultiKueue).ExitCode(0))
	ours := f.Create(framework.NewPyTorchJob("local").WithReplicas("master", 1).ExitCode(0).RunFor("2s"))
	checkSucceeded(t, f.WaitForPhase(ours, v1beta1.JobSucceeded))
	f.Consistently(5*time.Second, "the job left to MultiKueue untouched", func(ctx context.Context) error {
		job, err := f.GetJob(ctx, ref)
		if err != nil {
			return err
		}
		if st := job.JobStatus(); st.Phase != "" || len(st.Conditions) != 0 {
			return fmt.Errorf("status written: phase %q, conditions %v", st.Phase, st.Conditions)
		}
		if pods := f.Pods(ref); len(pods) != 0 {
			return fmt.Errorf("pods %v", podSummary(pods))
		}
		if _, err := f.Kube.CoreV1().Services(f.Namespace).Get(ctx, ref.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("its Service: %v", err)
		}
		if f.KueueServed() {
			// Kueue needs the Workload to dispatch the job.
			if _, err := f.Workload(ctx, ref); err != nil {
				return fmt.Errorf("its Workload, which MultiKueue dispatches: %v", err)
			}
		}
		return nil
	})

	_, err := f.Training.BatchV1beta1().PyTorchTrainingJobs(f.Namespace).Patch(f.Context(), ref.Name, "application/merge-patch+json",
		[]byte(`{"spec":{"managedBy":null}}`), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.managedBy") {
		t.Errorf("taking the job back from MultiKueue: %v, want 422 naming spec.managedBy", err)
	}
	job := framework.NewPyTorchJob("unknown").WithReplicas("master", 1).ManagedBy("example.com/other").Build(f.Namespace)
	err = f.CreateJob(f.Context(), job)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.managedBy") {
		t.Errorf("creating a job managed by an unknown controller: %v, want 422 naming spec.managedBy", err)
	}
}
