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

package trainingjobrecord

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/registry/trainingjob"
)

func encodeJSON(job batch.TrainingJob) ([]byte, error) { return json.Marshal(job) }

func samples(n, metrics int, name string) []batch.ProgressSample {
	out := make([]batch.ProgressSample, n)
	for i := range out {
		s := batch.ProgressSample{ReportTime: metav1.NewMicroTime(time.Unix(int64(i), 0)), Step: ptr.To(int64(i + 1))}
		for m := range metrics {
			s.Metrics = append(s.Metrics, batch.ProgressMetric{Name: fmt.Sprintf("%s%d", name, m), Value: strings.Repeat("9", batch.MaxProgressMetricValueLen)})
		}
		out[i] = s
	}
	return out
}

func events(n, messageBytes int) []corev1.Event {
	out := make([]corev1.Event, n)
	for i := range out {
		out[i] = corev1.Event{Type: corev1.EventTypeNormal, Reason: fmt.Sprintf("R%d", i), Message: strings.Repeat("é", messageBytes/2),
			LastTimestamp: metav1.NewTime(time.Unix(int64(i), 0)), Source: corev1.EventSource{Component: "c"}}
	}
	return out
}

func smallJob() *batch.GenericJob {
	job := &batch.GenericJob{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ns", UID: "0123456789abcdef",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		Annotations:   map[string]string{corev1.LastAppliedConfigAnnotation: "{}", "team": "vision"}}}
	job.Spec.ReplicaSpecs = []batch.ReplicaSpec{{Type: "worker", Replicas: ptr.To(int32(2))}}
	job.Status.Phase = batch.JobSucceeded
	job.Status.Conditions = []metav1.Condition{{Type: "Completed", Status: metav1.ConditionTrue}}
	return job
}

// TestRecordOfASmallJob: a job's record keeps it all but its managedFields
// and kubectl's copy of the manifest, the newest MaxRecordProgressSamples
// samples with the older thinned, and the newest MaxRecordEvents events,
// newest first, each message cut without splitting a character.
func TestRecordOfASmallJob(t *testing.T) {
	job := smallJob()
	r, err := build(deletedJob{job: job, kind: "GenericJob", encode: encodeJSON, samples: samples(4096, 2, "loss"), thinned: 7,
		events: events(2*batch.MaxRecordEvents, 4*batch.MaxRecordEventMessageBytes), deleted: time.Unix(5000, 0), maxBytes: batch.MaxTrainingJobRecordBytes})
	if err != nil {
		t.Fatal(err)
	}
	if r.Name != "train-01234567" || r.JobKind != "GenericJob" || r.Phase != batch.JobSucceeded || len(r.LeftOut) != 0 {
		t.Errorf("record %s of %s, phase %s, left out %v", r.Name, r.JobKind, r.Phase, r.LeftOut)
	}
	var kept batch.GenericJob
	if err := json.Unmarshal(r.Job.Raw, &kept); err != nil {
		t.Fatal(err)
	}
	if len(kept.ManagedFields) != 0 || kept.Annotations[corev1.LastAppliedConfigAnnotation] != "" || kept.Annotations["team"] != "vision" ||
		len(kept.Spec.ReplicaSpecs) != 1 || len(kept.Status.Conditions) != 1 {
		t.Errorf("the record's job: %+v", kept.ObjectMeta)
	}
	if len(job.ManagedFields) != 1 || job.Annotations[corev1.LastAppliedConfigAnnotation] == "" {
		t.Error("building the record changed the job")
	}
	if n := len(r.Progress); n > batch.MaxRecordProgressSamples || n < batch.MaxRecordProgressSamples/2 ||
		*r.Progress[n-1].Step != 4096 || *r.Progress[0].Step != 1 || r.ThinnedSamples != int64(4096-n+7) {
		t.Errorf("%d samples from step %d to %d, %d thinned; want at most %d, the first and the last, and the rest counted",
			n, *r.Progress[0].Step, *r.Progress[n-1].Step, r.ThinnedSamples, batch.MaxRecordProgressSamples)
	}
	for i := 1; i < len(r.Progress); i++ {
		if *r.Progress[i].Step <= *r.Progress[i-1].Step {
			t.Fatalf("samples out of order at %d", i)
		}
	}
	if len(r.Events) != batch.MaxRecordEvents || r.Events[0].Reason != fmt.Sprintf("R%d", 2*batch.MaxRecordEvents-1) {
		t.Errorf("%d events, the first %s; want the newest %d, newest first", len(r.Events), r.Events[0].Reason, batch.MaxRecordEvents)
	}
	for _, e := range r.Events {
		if len(e.Message) > batch.MaxRecordEventMessageBytes || !strings.HasSuffix(e.Message, "é") || e.Count != 1 {
			t.Fatalf("event message of %d bytes ending %q, count %d", len(e.Message), e.Message[len(e.Message)-2:], e.Count)
		}
	}
}

// TestRecordOfAJobAtEveryBound: the record of a job as large as the API
// stores, with every attempt's logs, a history at its bound with the most
// and longest metrics, and the most and longest events, stays within
// MaxTrainingJobRecordBytes; it keeps the job's phase, conditions and
// identity, and says what it left out.
func TestRecordOfAJobAtEveryBound(t *testing.T) {
	job := smallJob()
	// Pad the spec to the largest stored job.
	const chunk = 32 * 1024
	container := corev1.Container{Name: "main"}
	for i := 0; i*chunk < trainingjob.MaxStoredObjectBytes; i++ {
		container.Env = append(container.Env, corev1.EnvVar{Name: fmt.Sprintf("PAD_%d", i), Value: strings.Repeat("x", chunk)})
	}
	job.Spec.ReplicaSpecs[0].Template.Spec.Containers = []corev1.Container{container}
	for i := range batch.MaxAttempts {
		a := batch.Attempt{Number: int32(i + 1), Message: strings.Repeat("m", 1024)}
		for j := range batch.MaxAttemptFailedReplicas {
			a.FailedReplicas = append(a.FailedReplicas, batch.FailedReplica{Name: fmt.Sprintf("worker-%d", j), Logs: strings.Repeat("l", 16*1024)})
		}
		job.Status.Attempts = append(job.Status.Attempts, a)
	}
	r, err := build(deletedJob{job: job, kind: "GenericJob", encode: encodeJSON,
		samples: samples(batch.MaxProgressHistorySamples, batch.MaxProgressMetrics, strings.Repeat("n", batch.MaxProgressMetricNameChars-1)),
		events:  events(2*batch.MaxRecordEvents, 4*batch.MaxRecordEventMessageBytes), deleted: time.Unix(5000, 0), maxBytes: batch.MaxTrainingJobRecordBytes})
	if err != nil {
		t.Fatal(err)
	}
	size := jsonSize(r)
	if size > batch.MaxTrainingJobRecordBytes {
		t.Errorf("the record is %d bytes, over %d", size, batch.MaxTrainingJobRecordBytes)
	}
	want := []string{leftOutProgress, leftOutEvents, leftOutJobStatus, leftOutJobSpec}
	if fmt.Sprint(r.LeftOut) != fmt.Sprint(want) {
		t.Errorf("left out %v, want %v", r.LeftOut, want)
	}
	var kept batch.GenericJob
	if err := json.Unmarshal(r.Job.Raw, &kept); err != nil {
		t.Fatal(err)
	}
	if kept.UID != job.UID || kept.Status.Phase != batch.JobSucceeded || len(kept.Status.Conditions) != 1 || len(kept.Status.Attempts) != batch.MaxAttempts ||
		kept.Status.Attempts[0].FailedReplicas[0].Logs != "" || len(kept.Spec.ReplicaSpecs) != 0 {
		t.Errorf("the record's job keeps uid %s, phase %s, %d conditions, %d attempts, %d replica specs",
			kept.UID, kept.Status.Phase, len(kept.Status.Conditions), len(kept.Status.Attempts), len(kept.Spec.ReplicaSpecs))
	}
	t.Logf("a job at every bound: a record of %d bytes, left out %v", size, r.LeftOut)

	// The same job with a spec of half the size keeps its spec.
	container.Env = container.Env[:len(container.Env)/2]
	job.Spec.ReplicaSpecs[0].Template.Spec.Containers = []corev1.Container{container}
	r, err = build(deletedJob{job: job, kind: "GenericJob", encode: encodeJSON, deleted: time.Unix(5000, 0), maxBytes: batch.MaxTrainingJobRecordBytes})
	if err != nil || jsonSize(r) > batch.MaxTrainingJobRecordBytes || fmt.Sprint(r.LeftOut) != fmt.Sprint([]string{leftOutJobStatus}) {
		t.Errorf("a job of half the size: %d bytes, left out %v, %v; want its spec kept", jsonSize(r), r.LeftOut, err)
	}
}

// TestThin keeps at most the bound, the newest as they are, and counts the
// rest, down to none.
func TestThin(t *testing.T) {
	for _, tc := range []struct{ n, max int }{{0, 5}, {5, 5}, {6, 5}, {2, 1}, {3, 1}, {1, 0}, {100, 0}, {4096, 500}, {7, 2}} {
		in := samples(tc.n, 1, "m")
		out, dropped := thin(in, tc.max)
		if len(out) > tc.max || int(dropped) != tc.n-len(out) || (tc.n > 0 && tc.max > 0 && *out[len(out)-1].Step != int64(tc.n)) {
			t.Errorf("thin(%d, %d): %d kept, %d dropped", tc.n, tc.max, len(out), dropped)
		}
		if tc.n <= tc.max && len(out) != tc.n {
			t.Errorf("thin(%d, %d) dropped samples that fit", tc.n, tc.max)
		}
	}
}
