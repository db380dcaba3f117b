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
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// record is the record of a PyTorch job named job, deleted deletedAgo,
// that ran an hour to step 900 and failed once before it succeeded.
func record(t *testing.T, name, job string, uid types.UID, deletedAgo time.Duration) *v1beta1.TrainingJobRecord {
	t.Helper()
	pj := &v1beta1.PyTorchTrainingJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch.tensorstack.dev/v1beta1", Kind: "PyTorchTrainingJob"},
		ObjectMeta: metav1.ObjectMeta{Name: job, Namespace: "default", UID: uid, CreationTimestamp: ago(3 * time.Hour)},
	}
	pj.Spec.ReplicaSpecs = []v1beta1.ReplicaSpec{{Type: v1beta1.ReplicaTypeWorker, Replicas: ptr.To(int32(2))}}
	pj.Status.Phase = v1beta1.JobSucceeded
	pj.Status.StartTime, pj.Status.CompletionTime = ptr.To(ago(2*time.Hour)), ptr.To(ago(time.Hour))
	pj.Status.Conditions = []metav1.Condition{{Type: "Completed", Status: metav1.ConditionTrue, Reason: "AllSucceeded", LastTransitionTime: ago(time.Hour)}}
	pj.Status.Attempts = []v1beta1.Attempt{{Number: 1, StartTime: ago(2 * time.Hour), EndTime: ptr.To(ago(90 * time.Minute)), Reason: "ReplicaFailed",
		FailedReplicas: []v1beta1.FailedReplica{{Name: "worker-1", Node: "node-b", ExitCode: ptr.To(int32(137)), Reason: "OOMKilled", Time: ago(90 * time.Minute)}}}}
	raw, err := json.Marshal(pj)
	if err != nil {
		t.Fatal(err)
	}
	return &v1beta1.TrainingJobRecord{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{v1beta1.LabelJobName: job, v1beta1.LabelJobKind: "PyTorchTrainingJob"}},
		JobKind:    "PyTorchTrainingJob", JobName: job, JobUID: uid, Phase: v1beta1.JobSucceeded,
		JobCreationTime: ago(3 * time.Hour), DeletionTime: ago(deletedAgo), StartTime: pj.Status.StartTime, CompletionTime: pj.Status.CompletionTime,
		Job:      runtime.RawExtension{Raw: raw},
		Progress: []v1beta1.ProgressSample{{Step: ptr.To(int64(899))}, {Step: ptr.To(int64(900))}},
		Events: []v1beta1.RecordedEvent{
			{Type: "Normal", Reason: "Succeeded", Message: "the job succeeded", Count: 1, LastTime: ago(time.Hour), Source: "training-controller-manager"},
			{Type: "Warning", Reason: "ReplicaFailed", Message: "worker-1 OOMKilled", Count: 1, LastTime: ago(90 * time.Minute), Source: "training-controller-manager"},
		},
	}
}

func TestHistoryList(t *testing.T) {
	f := newFixture(t, record(t, "resnet-aaaa1111", "resnet", "aaaa1111-x", 48*time.Hour), record(t, "resnet-bbbb2222", "resnet", "bbbb2222-x", 5*time.Minute))
	if err := f.run("history"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(f.out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "resnet-bbbb2222") || !strings.HasPrefix(lines[2], "resnet-aaaa1111") {
		t.Fatalf("want the latest deletion first:\n%s", f.out.String())
	}
	for _, want := range []string{"NAME", "JOB", "KIND", "PHASE", "RAN", "STEP", "DELETED", "PyTorchTrainingJob", "Succeeded", "60m", "900", "5m", "2d"} {
		if !strings.Contains(f.out.String(), want) {
			t.Errorf("history does not show %q:\n%s", want, f.out.String())
		}
	}

	f = newFixture(t)
	if err := f.run("history"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.errOut.String(), "No records of deleted jobs found in default namespace.") {
		t.Errorf("no records: %q", f.errOut.String())
	}
}

func TestHistoryShow(t *testing.T) {
	f := newFixture(t, record(t, "resnet-aaaa1111", "resnet", "aaaa1111-x", 48*time.Hour), record(t, "resnet-bbbb2222", "resnet", "bbbb2222-x", 5*time.Minute))
	// By the job's name: the latest of its records, naming the others.
	if err := f.run("history", "resnet"); err != nil {
		t.Fatal(err)
	}
	out := f.out.String()
	for _, want := range []string{"Record:", "resnet-bbbb2222", "Job UID:", "bbbb2222-x", "Earlier:", "resnet-aaaa1111", "Phase:", "Succeeded",
		"Completed", "AllSucceeded", "worker-1", "OOMKilled", "137", "ReplicaFailed", "the job succeeded"} {
		if !strings.Contains(out, want) {
			t.Errorf("history resnet does not show %q:\n%s", want, out)
		}
	}
	// Events oldest first, as status shows a job's.
	if strings.Index(out, "worker-1 OOMKilled") > strings.Index(out, "the job succeeded") {
		t.Errorf("events not oldest first:\n%s", out)
	}
	// By the record's own name.
	if err := f.run("history", "resnet-aaaa1111"); err != nil || !strings.Contains(f.out.String(), "aaaa1111-x") || strings.Contains(f.out.String(), "Earlier:") {
		t.Errorf("history resnet-aaaa1111: %v\n%s", err, f.out.String())
	}
	if err := f.run("history", "gone"); err == nil || !strings.Contains(err.Error(), "no record of a deleted job named gone") {
		t.Errorf("history gone: %v", err)
	}
	if err := f.run("history", "resnet", "-A"); err == nil || !strings.Contains(err.Error(), "use -n instead") {
		t.Errorf("history resnet -A: %v", err)
	}
}
