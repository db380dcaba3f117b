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
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/apiserver"
	"tensorstack.dev/training/pkg/registry/trainingjobrecord"
	"tensorstack.dev/training/test/integration/framework"
)

// jobEvents is an EventLister of a few events per job, made up from its
// UID, so that a record can be checked against them.
type jobEvents struct {
	mu    sync.Mutex
	calls int
}

func (e *jobEvents) Events(_ context.Context, namespace string, uid types.UID) ([]corev1.Event, error) {
	e.mu.Lock()
	e.calls++
	e.mu.Unlock()
	base := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	var events []corev1.Event
	for i := range 3 {
		events = append(events, corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("e%d", i), Namespace: namespace},
			InvolvedObject: corev1.ObjectReference{UID: uid},
			Type:           corev1.EventTypeNormal, Reason: fmt.Sprintf("Step%d", i), Message: "event of " + string(uid),
			Count: 1, LastTimestamp: metav1.NewTime(base.Add(time.Duration(i) * time.Minute)),
			Source: corev1.EventSource{Component: "training-controller-manager"},
		})
	}
	return events, nil
}

func withRecords(t *testing.T, bounds trainingjobrecord.Bounds, events trainingjobrecord.EventLister) *framework.TestServer {
	return framework.StartTestServerWith(t, "", func(c *apiserver.Config) {
		c.Progress.Interval = time.Nanosecond
		c.Records = apiserver.RecordsConfig{Bounds: bounds, Events: events}
	})
}

// TestJobRecordKeptAfterDeletion: deleting a job leaves its record in the
// job's namespace: the job as it was (spec, status, no managedFields), its
// progress history and its events, newest first. A second delete of the
// same job writes no second record; records are read-only and deletable.
func TestJobRecordKeptAfterDeletion(t *testing.T) {
	events := &jobEvents{}
	s := withRecords(t, trainingjobrecord.Bounds{}, events)
	ctx := context.Background()
	jobs := s.Client.BatchV1beta1().PyTorchTrainingJobs("history")
	job, err := jobs.Create(ctx, pytorchKind(s).newJob("train"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for step := int64(1); step <= 5; step++ {
		if _, err := jobs.ReportProgress(ctx, "train", stepReport(step, 5), metav1.CreateOptions{}); err != nil {
			t.Fatalf("report %d: %v", step, err)
		}
	}
	// A dry run deletes nothing and records nothing; a job that failed
	// validation never existed, so it has no record either.
	if err := jobs.Delete(ctx, "train", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	invalid := pytorchKind(s).newJob("invalid")
	invalid.Spec.ReplicaSpecs = nil
	if _, err := jobs.Create(ctx, invalid, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("a job without replica specs: %v, want 422", err)
	}
	if list, err := s.Client.BatchV1beta1().TrainingJobRecords("history").List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
		t.Fatalf("records after a dry-run delete and an invalid job: %v, %v; want none", list, err)
	}
	if err := jobs.Delete(ctx, "train", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := jobs.Delete(ctx, "train", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("second delete: %v, want NotFound", err)
	}

	records := s.Client.BatchV1beta1().TrainingJobRecords("history")
	list, err := records.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("%d records, want 1: %+v", len(list.Items), list.Items)
	}
	r := list.Items[0]
	if want := trainingjobrecord.Name("train", string(job.UID)); r.Name != want || r.JobName != "train" || r.JobUID != job.UID ||
		r.JobKind != "PyTorchTrainingJob" || r.Labels[v1beta1.LabelJobName] != "train" || r.Labels[v1beta1.LabelJobKind] != "PyTorchTrainingJob" {
		t.Errorf("record %s of %s %s (%s), labels %v; want %s of PyTorchTrainingJob train (%s)", r.Name, r.JobKind, r.JobName, r.JobUID, r.Labels, want, job.UID)
	}
	if r.DeletionTime.IsZero() || !r.JobCreationTime.Equal(&job.CreationTimestamp) {
		t.Errorf("deleted %v, created %v; want a deletion time and the job's creation %v", r.DeletionTime, r.JobCreationTime, job.CreationTimestamp)
	}
	var kept v1beta1.PyTorchTrainingJob
	if err := json.Unmarshal(r.Job.Raw, &kept); err != nil {
		t.Fatalf("the record's job: %v\n%s", err, r.Job.Raw)
	}
	if kept.Kind != "PyTorchTrainingJob" || kept.APIVersion != "batch.tensorstack.dev/v1beta1" || kept.UID != job.UID ||
		len(kept.ManagedFields) != 0 || len(kept.Spec.ReplicaSpecs) != len(job.Spec.ReplicaSpecs) {
		t.Errorf("the record's job: %s %s uid %s, %d managedFields, %d replica specs; want the job without managedFields",
			kept.APIVersion, kept.Kind, kept.UID, len(kept.ManagedFields), len(kept.Spec.ReplicaSpecs))
	}
	if p := kept.Status.Progress; p == nil || p.Step == nil || *p.Step != 5 {
		t.Errorf("the record's job status.progress %+v, want step 5", p)
	}
	if len(r.Progress) != 5 || *r.Progress[0].Step != 1 || *r.Progress[4].Step != 5 {
		t.Errorf("record progress %+v, want steps 1 to 5", r.Progress)
	}
	if len(r.Events) != 3 || r.Events[0].Reason != "Step2" || r.Events[2].Reason != "Step0" || r.Events[0].Message != "event of "+string(job.UID) {
		t.Errorf("record events %+v, want Step2, Step1, Step0 of the job", r.Events)
	}
	if len(r.LeftOut) != 0 {
		t.Errorf("a small job's record left out %v", r.LeftOut)
	}

	// Read-only: neither create nor update is served.
	err = s.Client.BatchV1beta1().RESTClient().Post().Namespace("history").Resource("trainingjobrecords").
		Body(&v1beta1.TrainingJobRecord{ObjectMeta: metav1.ObjectMeta{Name: "forged"}}).Do(ctx).Error()
	if !apierrors.IsMethodNotSupported(err) {
		t.Errorf("create of a record: %v, want 405", err)
	}
	err = s.Client.BatchV1beta1().RESTClient().Put().Namespace("history").Resource("trainingjobrecords").Name(r.Name).
		Body(&r).Do(ctx).Error()
	if !apierrors.IsMethodNotSupported(err) {
		t.Errorf("update of a record: %v, want 405", err)
	}
	if err := records.Delete(ctx, r.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the record: %v", err)
	}
	if _, err := records.Get(ctx, r.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the deleted record: %v, want NotFound", err)
	}
}

// TestJobRecordsBounded: a namespace keeps at most PerNamespace records,
// those of the jobs deleted last, and each of a name's jobs deleted in turn
// keeps its own; past the retention a record goes by itself.
func TestJobRecordsBounded(t *testing.T) {
	s := withRecords(t, trainingjobrecord.Bounds{PerNamespace: 3, Retention: 4 * time.Second}, nil)
	ctx := context.Background()
	jobs := s.Client.BatchV1beta1().PyTorchTrainingJobs("bounded")
	var uids []types.UID
	for i := range 5 {
		job, err := jobs.Create(ctx, pytorchKind(s).newJob("again"), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("job %d: %v", i, err)
		}
		uids = append(uids, job.UID)
		if err := jobs.Delete(ctx, "again", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	records := s.Client.BatchV1beta1().TrainingJobRecords("bounded")
	list, err := records.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[types.UID]bool{}
	for _, r := range list.Items {
		got[r.JobUID] = true
	}
	if len(list.Items) != 3 || !got[uids[2]] || !got[uids[3]] || !got[uids[4]] {
		t.Errorf("records of jobs %v, want the last three of %v", got, uids)
	}

	// Retention: every record goes within the retention and a tenth of it.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := records.List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, err
	})
	if err != nil {
		t.Errorf("records past their retention are still there: %v", err)
	}
}

// TestJobRecordOfTheLargestJob: the record of a job as large as the API
// stores, with progress reports and events of the longest messages, is
// written within MaxTrainingJobRecordBytes and says what it left out.
// (trainingjobrecord's unit tests hold a record of a job at every bound to
// the same size.)
func TestJobRecordOfTheLargestJob(t *testing.T) {
	s := withRecords(t, trainingjobrecord.Bounds{}, longEvents{})
	ctx := context.Background()
	jobs := s.Client.BatchV1beta1().GenericJobs("large")
	created, err := jobs.Create(ctx, paddedGenericJob("large", 1400*1024), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for step := int64(1); step <= 20; step++ {
		if _, err := jobs.ReportProgress(ctx, created.Name, stepReport(step, 100), metav1.CreateOptions{}); err != nil {
			t.Fatalf("report %d: %v", step, err)
		}
	}
	if err := jobs.Delete(ctx, created.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r, err := s.Client.BatchV1beta1().TrainingJobRecords("large").Get(ctx, trainingjobrecord.Name(created.Name, string(created.UID)), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the largest job's record: %v", err)
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > batch.MaxTrainingJobRecordBytes {
		t.Errorf("the record is %d bytes as JSON, over %d", len(data), batch.MaxTrainingJobRecordBytes)
	}
	if len(r.LeftOut) == 0 || r.JobUID != created.UID {
		t.Errorf("a record of %d bytes of job %s left out %v", len(data), r.JobUID, r.LeftOut)
	}
	var kept v1beta1.GenericJob
	if err := json.Unmarshal(r.Job.Raw, &kept); err != nil || kept.Name != created.Name || kept.UID != created.UID {
		t.Errorf("the record's job %s (%s): %v", kept.Name, kept.UID, err)
	}
	t.Logf("record of a job of 1.4 MiB: %d bytes as JSON, left out %v", len(data), r.LeftOut)
}

// longEvents is an EventLister of more events than a record keeps, each
// with a message longer than it keeps.
type longEvents struct{}

func (longEvents) Events(_ context.Context, namespace string, uid types.UID) ([]corev1.Event, error) {
	long := make([]byte, 4*batch.MaxRecordEventMessageBytes)
	for i := range long {
		long[i] = 'x'
	}
	var events []corev1.Event
	for i := range 2 * batch.MaxRecordEvents {
		events = append(events, corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i), Namespace: namespace},
			InvolvedObject: corev1.ObjectReference{UID: uid}, Type: corev1.EventTypeWarning, Reason: "Long", Message: string(long),
			LastTimestamp: metav1.NewTime(time.Unix(int64(i), 0))})
	}
	return events, nil
}
