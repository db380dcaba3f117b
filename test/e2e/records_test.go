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
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// recordsOf are the records of the deleted jobs named name in the
// framework's namespace.
func recordsOf(ctx context.Context, f *framework.Framework, name string) ([]v1beta1.TrainingJobRecord, error) {
	list, err := f.Training.BatchV1beta1().TrainingJobRecords(f.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{v1beta1.LabelJobName: name}).String(),
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// TestDeletedJobsLeaveRecords: a job deleted by a user (in the foreground,
// so the record is written when the garbage collector lets the job go) and
// a job its TTL deleted each leave one record, with the job as it was and
// the controller's events about it; kubectl get and kubectl training
// history show them.
func TestDeletedJobsLeaveRecords(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "records")
	running := f.Create(framework.NewPyTorchJob("recorded").WithReplicas("master", 1).WithReplicas("worker", 1))
	short := f.Create(framework.NewTFJob("short-lived").WithReplicas("worker", 1).ExitCode(0).RunFor("1s").TTL(1).CleanUp(v1beta1.CleanUpPolicyNone))
	f.WaitForRunningPods(running, 2)
	job := f.WaitForPhase(running, v1beta1.JobRunning)
	fg := metav1.DeletePropagationForeground
	if err := f.Training.BatchV1beta1().PyTorchTrainingJobs(f.Namespace).Delete(f.Context(), running.Name,
		metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	f.WaitForJobGone(running, framework.GCTimeout)
	f.WaitForJobGone(short, framework.Timeout)

	records, err := recordsOf(f.Context(), f, running.Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 1 {
		t.Fatalf("%d records of %s, want 1: %+v", len(records), running, records)
	}
	r := records[0]
	if r.JobUID != job.GetUID() || r.JobKind != "PyTorchTrainingJob" || r.Phase != v1beta1.JobRunning {
		t.Errorf("record of %s %s (%s) in phase %s, want the running PyTorchTrainingJob %s", r.JobKind, r.JobName, r.JobUID, r.Phase, job.GetUID())
	}
	var kept v1beta1.PyTorchTrainingJob
	if err := json.Unmarshal(r.Job.Raw, &kept); err != nil || kept.UID != job.GetUID() || len(kept.Status.Conditions) == 0 {
		t.Errorf("the record's job: uid %s, %d conditions, %v", kept.UID, len(kept.Status.Conditions), err)
	}
	created := false
	for _, e := range r.Events {
		created = created || e.Reason == "SuccessfulCreate" && strings.Contains(e.Message, "Created pod")
	}
	if !created {
		t.Errorf("the record's events %+v do not say the controller created the pods", r.Events)
	}

	ttl, err := recordsOf(f.Context(), f, short.Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(ttl) != 1 || ttl[0].Phase != v1beta1.JobSucceeded || ttl[0].CompletionTime == nil {
		t.Errorf("records of the job its TTL deleted: %+v, want one of a Succeeded job", ttl)
	}

	table := parseTable(t, f.MustKubectl("get", "tjr"))
	if row := table.row(t, r.Name); row["JOB"] != running.Name || row["KIND"] != "PyTorchTrainingJob" || row["PHASE"] != "Running" {
		t.Errorf("kubectl get tjr: row %v", row)
	}
	history := f.KubectlTraining("history", running.Name)
	if history.Err != nil || !strings.Contains(history.Stdout, "Record:") || !strings.Contains(history.Stdout, string(job.GetUID())) {
		t.Errorf("kubectl training history %s: %s", running.Name, history)
	}
	// Records are the server's to write.
	forged := "apiVersion: batch.tensorstack.dev/v1beta1\nkind: TrainingJobRecord\nmetadata: {name: forged}\njobKind: PyTorchTrainingJob\n"
	if c := f.KubectlInput(forged, "create", "--validate=false", "-n", f.Namespace, "-f", "-"); c.Err == nil || !strings.Contains(c.Stderr, "MethodNotAllowed") {
		t.Errorf("kubectl create of a record: %s, want MethodNotAllowed", c)
	}
}

// TestNamespaceDeletionTakesRecords: a namespace's deletion deletes its
// jobs, each of which leaves a record, and then the records, so the
// namespace goes and nothing of it is left.
func TestNamespaceDeletionTakesRecords(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "records-ns")
	ref := f.Create(framework.NewPyTorchJob("in-doomed-ns").WithReplicas("master", 1))
	f.WaitForRunningPods(ref, 1)
	if err := f.Training.BatchV1beta1().PyTorchTrainingJobs(f.Namespace).Delete(f.Context(), "in-doomed-ns", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Create(framework.NewPyTorchJob("with-its-ns").WithReplicas("master", 1))
	f.Eventually(framework.Timeout, "the deleted job's record", func(ctx context.Context) (bool, error) {
		records, err := recordsOf(ctx, f, "in-doomed-ns")
		return len(records) == 1, err
	})
	if err := f.Kube.CoreV1().Namespaces().Delete(f.Context(), f.Namespace, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Eventually(framework.GCTimeout, "the namespace to go", func(ctx context.Context) (bool, error) {
		_, err := f.Kube.CoreV1().Namespaces().Get(ctx, f.Namespace, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	list, err := f.Training.BatchV1beta1().TrainingJobRecords(f.Namespace).List(f.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		var names []string
		for _, r := range list.Items {
			names = append(names, r.Name)
		}
		t.Errorf("records left of the deleted namespace %s: %s", f.Namespace, fmt.Sprint(names))
	}
}
