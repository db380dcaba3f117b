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
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// historyKeys are the etcd keys of a job's progress history: beside the
// job's own key, under the resource's prefix with -progresshistory.
func historyKeys(t *testing.T, etcd *clientv3.Client, jobKey string) []string {
	t.Helper()
	prefix := strings.Replace(jobKey, "/pytorchtrainingjobs/", "/pytorchtrainingjobs-progresshistory/", 1) + "/"
	resp, err := etcd.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatalf("listing %s: %v", prefix, err)
	}
	keys := make([]string, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		keys = append(keys, string(kv.Key))
	}
	return keys
}

// checkSteps checks that a history's samples are in step order, each with
// its report's loss.
func checkSteps(t *testing.T, samples []v1beta1.ProgressSample) {
	t.Helper()
	for i, s := range samples {
		step := ptr.Deref(s.Step, -1)
		if i > 0 && step <= ptr.Deref(samples[i-1].Step, -1) {
			t.Fatalf("sample %d at step %d follows step %d: out of order", i, step, ptr.Deref(samples[i-1].Step, -1))
		}
		if want := stepReport(step, 1).Metrics[0].Value; len(s.Metrics) != 1 || s.Metrics[0].Value != want {
			t.Fatalf("sample %d (step %d): metrics %v, want loss %s", i, step, s.Metrics, want)
		}
	}
}

// TestProgressHistoryKeepsEveryStoredReport: a job's progresshistory
// subresource answers with every stored report's metrics, where
// status.progress.history keeps the last 30; the samples live in etcd in
// chunks of their own beside the job's key, and go with the job.
func TestProgressHistoryKeepsEveryStoredReport(t *testing.T) {
	// Every report is stored at once: no interval holds one back.
	s := withProgressInterval(t, time.Nanosecond)
	ctx := context.Background()
	jobs := s.Client.BatchV1beta1().PyTorchTrainingJobs("history")
	if _, err := jobs.Create(ctx, pytorchKind(s).newJob("train"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const reports = 600
	for i := int64(1); i <= reports; i++ {
		if _, err := jobs.ReportProgress(ctx, "train", stepReport(i, 10000), metav1.CreateOptions{}); err != nil {
			t.Fatalf("report %d: %v", i, err)
		}
	}
	job, err := jobs.Get(ctx, "train", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(job.Status.Progress.History); n != batch.MaxProgressHistory {
		t.Errorf("status.progress.history holds %d samples, want %d", n, batch.MaxProgressHistory)
	}
	history, err := jobs.GetProgressHistory(ctx, "train", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(history.Samples) != reports || history.ThinnedSamples != 0 || history.Name != "train" || history.UID != job.UID {
		t.Fatalf("history of %s (uid %s): %d samples, %d thinned; want %d, none thinned, of job uid %s",
			history.Name, history.UID, len(history.Samples), history.ThinnedSamples, reports, job.UID)
	}
	checkSteps(t, history.Samples)
	if first, last := ptr.Deref(history.Samples[0].Step, 0), ptr.Deref(history.Samples[reports-1].Step, 0); first != 1 || last != reports {
		t.Errorf("history from step %d to %d, want 1 to %d", first, last, reports)
	}

	etcd := s.EtcdClient()
	jobKey := etcdKey(t, etcd, "pytorchtrainingjobs", "history", "train")
	keys := historyKeys(t, etcd, jobKey)
	t.Logf("%d reports: %d history chunks in etcd (%s ...)", reports, len(keys), keys[0])
	if want := (reports + 255) / 256; len(keys) != want {
		t.Errorf("%d history chunks in etcd, want %d of at most 256 samples", len(keys), want)
	}

	if err := jobs.Delete(ctx, "train", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if keys := historyKeys(t, etcd, jobKey); len(keys) != 0 {
		t.Errorf("the deleted job's history is still in etcd: %v", keys)
	}
	if _, err := jobs.GetProgressHistory(ctx, "train", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the history of a deleted job: %v, want 404", err)
	}
}

// TestProgressHistoryThinsTheOldest: past 4096 samples, the history thins
// its oldest part instead of dropping it: the run's first steps are still
// there, the newest all are, and the count of thinned samples makes up the
// rest.
func TestProgressHistoryThinsTheOldest(t *testing.T) {
	s := withProgressInterval(t, time.Nanosecond)
	ctx := context.Background()
	jobs := s.Client.BatchV1beta1().PyTorchTrainingJobs("thin")
	if _, err := jobs.Create(ctx, pytorchKind(s).newJob("long"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const reports = batch.MaxProgressHistorySamples + 1024
	start := time.Now()
	for i := int64(1); i <= reports; i++ {
		if _, err := jobs.ReportProgress(ctx, "long", stepReport(i, 100000), metav1.CreateOptions{}); err != nil {
			t.Fatalf("report %d: %v", i, err)
		}
	}
	t.Logf("%d reports stored in %s", reports, time.Since(start).Round(time.Millisecond))
	history, err := jobs.GetProgressHistory(ctx, "long", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := len(history.Samples)
	t.Logf("history: %d samples, %d thinned", n, history.ThinnedSamples)
	if n > batch.MaxProgressHistorySamples || int64(n)+history.ThinnedSamples != reports {
		t.Fatalf("history of %d samples and %d thinned: want at most %d, adding up to %d reports",
			n, history.ThinnedSamples, batch.MaxProgressHistorySamples, reports)
	}
	checkSteps(t, history.Samples)
	if first := ptr.Deref(history.Samples[0].Step, 0); first > 2 {
		t.Errorf("the history begins at step %d: the run's start was dropped, not thinned", first)
	}
	// The newest chunk's worth is at full resolution.
	for i := n - 256; i < n; i++ {
		if want := int64(reports - (n - 1 - i)); ptr.Deref(history.Samples[i].Step, 0) != want {
			t.Fatalf("sample %d at step %d, want %d: the newest samples were thinned", i, ptr.Deref(history.Samples[i].Step, 0), want)
		}
	}
}
