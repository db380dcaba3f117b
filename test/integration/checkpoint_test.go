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
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// withCheckpointVolume has every replica mount volume ckpt at /ckpt, named
// by the job's checkpoint policy.
func withCheckpointVolume(job *v1beta1.PyTorchTrainingJob) *v1beta1.PyTorchTrainingJob {
	for i := range job.Spec.ReplicaSpecs {
		pod := &job.Spec.ReplicaSpecs[i].Template.Spec
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "ckpt",
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		pod.Containers[0].VolumeMounts = append(pod.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "ckpt", MountPath: "/ckpt"})
	}
	job.Spec.RunPolicy.Checkpoint = &v1beta1.CheckpointPolicy{VolumeName: "ckpt"}
	return job
}

func checkpointAt(path string, step int64) *v1beta1.CheckpointReport {
	return &v1beta1.CheckpointReport{CheckpointValues: v1beta1.CheckpointValues{Path: path, Step: ptr.To(step), SizeBytes: ptr.To[int64](1 << 20)}}
}

// causeFields are the field paths a 422 names.
func causeFields(err error) []string {
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Details == nil {
		return nil
	}
	var fields []string
	for _, c := range status.Status().Details.Causes {
		fields = append(fields, c.Field)
	}
	return fields
}

// TestCheckpointReports: a checkpoint report becomes status.checkpoint.latest
// with its path made absolute, the one before moves into the bounded
// history, the controller's status writes leave both alone, and bad reports
// are refused with the field they got wrong.
func TestCheckpointReports(t *testing.T) {
	s := withProgressInterval(t, time.Hour)
	ctx := context.Background()
	jobs := s.Client.BatchV1beta1().PyTorchTrainingJobs("checkpoints")
	created, err := jobs.Create(ctx, withCheckpointVolume(pytorchKind(s).newJob("train")), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g := created.Spec.RunPolicy.Checkpoint.StopGraceSeconds; g == nil || *g != 30 {
		t.Errorf("stopGraceSeconds defaulted to %v, want 30", g)
	}

	answer, err := jobs.ReportCheckpoint(ctx, "train", checkpointAt("step-10.pt", 10), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if answer.Path != "/ckpt/step-10.pt" || answer.ReportTime == nil {
		t.Errorf("answer %+v: want the absolute path and the report time", answer)
	}
	for step := int64(20); step <= 150; step += 10 {
		if _, err := jobs.ReportCheckpoint(ctx, "train", checkpointAt(fmt.Sprintf("/ckpt/step-%d.pt", step), step), metav1.CreateOptions{}); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	job, err := jobs.Get(ctx, "train", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := job.Status.Checkpoint
	if c == nil || c.Latest == nil || ptr.Deref(c.Latest.Step, 0) != 150 || c.Latest.Path != "/ckpt/step-150.pt" {
		t.Fatalf("status.checkpoint %+v: want step 150 latest", c)
	}
	if len(c.History) != 10 || ptr.Deref(c.History[0].Step, 0) != 50 || ptr.Deref(c.History[9].Step, 0) != 140 {
		t.Errorf("history of %d, want the 10 before the latest, steps 50 to 140", len(c.History))
	}

	for name, tc := range map[string]struct {
		report *v1beta1.CheckpointReport
		field  string
	}{
		"no path":               {&v1beta1.CheckpointReport{}, "path"},
		"outside the volume":    {checkpointAt("/tmp/step-160.pt", 160), "path"},
		"escaping the volume":   {checkpointAt("../etc/step-160.pt", 160), "path"},
		"the volume itself":     {checkpointAt("/ckpt", 160), "path"},
		"a negative step":       {checkpointAt("step.pt", -1), "step"},
		"a step going back":     {checkpointAt("step-140.pt", 140), "step"},
		"a path too long":       {checkpointAt(strings.Repeat("a", 1025), 160), "path"},
		"a newline in the path": {checkpointAt("step-160.pt\nstep-170.pt", 160), "path"},
		"an escape in the path": {checkpointAt("\x1b]0;step-160.pt", 160), "path"},
		"a negative size only":  {&v1beta1.CheckpointReport{CheckpointValues: v1beta1.CheckpointValues{Path: "x", SizeBytes: ptr.To[int64](-1)}}, "sizeBytes"},
	} {
		_, err := jobs.ReportCheckpoint(ctx, "train", tc.report, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !contains(causeFields(err), tc.field) {
			t.Errorf("%s: %v (fields %v), want 422 naming %s", name, err, causeFields(err), tc.field)
		}
	}
	if _, err := jobs.ReportCheckpoint(ctx, "train", checkpointAt("step-150.pt", 150), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("dry run of the same step: %v", err)
	}

	// The controller's status writes change the request, never the reports.
	job.Status.Checkpoint = &v1beta1.CheckpointStatus{RequestReason: "Pause", RequestTime: ptr.To(metav1.NowMicro())}
	written, err := jobs.UpdateStatus(ctx, job, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := written.Status.Checkpoint; c.Latest == nil || ptr.Deref(c.Latest.Step, 0) != 150 || len(c.History) != 10 || c.RequestReason != "Pause" {
		t.Errorf("after a status write: %+v; want the reports kept and the request taken", c)
	}
	// And a report keeps the request.
	if _, err := jobs.ReportCheckpoint(ctx, "train", checkpointAt("step-160.pt", 160), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := jobs.Get(ctx, "train", metav1.GetOptions{}); got.Status.Checkpoint.RequestReason != "Pause" || ptr.Deref(got.Status.Checkpoint.Latest.Step, 0) != 160 {
		t.Errorf("after a report: %+v; want the request kept", got.Status.Checkpoint)
	}

	// A job without the contract takes no checkpoint.
	if _, err := jobs.Create(ctx, pytorchKind(s).newJob("plain"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = jobs.ReportCheckpoint(ctx, "plain", checkpointAt("/ckpt/a.pt", 1), metav1.CreateOptions{})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "spec.runPolicy.checkpoint") {
		t.Errorf("a report for a job without a checkpoint policy: %v, want 409 naming spec.runPolicy.checkpoint", err)
	}
}

// TestCheckpointPolicyRefusals: a grace beyond a template's termination
// grace period is refused naming both fields.
func TestCheckpointPolicyRefusals(t *testing.T) {
	s := withProgressInterval(t, time.Hour)
	ctx := context.Background()
	jobs := s.Client.BatchV1beta1().PyTorchTrainingJobs("checkpoint-policy")
	job := withCheckpointVolume(pytorchKind(s).newJob("train"))
	job.Spec.ReplicaSpecs[1].Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](10)
	job.Spec.RunPolicy.Checkpoint.StopGraceSeconds = ptr.To[int32](20)
	_, err := jobs.Create(ctx, job, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.runPolicy.checkpoint.stopGraceSeconds") ||
		!strings.Contains(err.Error(), "spec.replicaSpecs[1].template.spec.terminationGracePeriodSeconds") {
		t.Errorf("create: %v, want 422 naming stopGraceSeconds and the template's terminationGracePeriodSeconds", err)
	}
	// Unset, the grace defaults to the shortest termination grace period.
	job.Spec.RunPolicy.Checkpoint.StopGraceSeconds = nil
	created, err := jobs.Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g := created.Spec.RunPolicy.Checkpoint.StopGraceSeconds; g == nil || *g != 10 {
		t.Errorf("stopGraceSeconds defaulted to %v, want 10", g)
	}
}
