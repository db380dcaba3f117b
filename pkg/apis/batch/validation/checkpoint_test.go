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

package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

// withCheckpointVolume gives every replica type a volume named ckpt, mounted
// by the training container at /ckpt, and a checkpoint policy naming it.
func withCheckpointVolume(s *batch.TrainingJobSpec) {
	for i := range s.ReplicaSpecs {
		pod := &s.ReplicaSpecs[i].Template.Spec
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "ckpt",
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "ckpt"}}})
		pod.Containers[0].VolumeMounts = append(pod.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "ckpt", MountPath: "/ckpt"})
	}
	s.RunPolicy.Checkpoint = &batch.CheckpointPolicy{VolumeName: "ckpt", StopGraceSeconds: ptr.To[int32](30)}
}

func TestCheckpointAndStallPolicies(t *testing.T) {
	const (
		checkpoint = "spec.runPolicy.checkpoint"
		masterPod  = "spec.replicaSpecs[0].template.spec"
	)
	cases := []struct {
		name string
		mod  specMod
		want []wantErr
		// inMessage is a text the first error's message must hold.
		inMessage string
	}{
		{name: "valid", mod: withCheckpointVolume},
		{name: "valid with interval and deadline", mod: func(s *batch.TrainingJobSpec) {
			withCheckpointVolume(s)
			s.RunPolicy.Checkpoint.IntervalSeconds = ptr.To[int32](600)
			s.RunPolicy.ProgressDeadlineSeconds = ptr.To[int64](300)
			s.RunPolicy.StallPolicy = batch.StallPolicyRestart
		}},
		{name: "no volume name", mod: func(s *batch.TrainingJobSpec) {
			withCheckpointVolume(s)
			s.RunPolicy.Checkpoint.VolumeName = ""
		}, want: []wantErr{required(checkpoint + ".volumeName")}},
		{name: "volume missing from a template", mod: func(s *batch.TrainingJobSpec) {
			withCheckpointVolume(s)
			s.RunPolicy.Checkpoint.VolumeName = "other"
		}, want: []wantErr{invalid(checkpoint + ".volumeName"), invalid(checkpoint + ".volumeName")}, inMessage: masterPod + ".volumes"},
		{name: "volume not mounted by the training container", mod: func(s *batch.TrainingJobSpec) {
			withCheckpointVolume(s)
			workerPod(s).Containers[0].VolumeMounts = nil
		}, want: []wantErr{invalid(checkpoint + ".volumeName")}, inMessage: "does not mount it"},
		{name: "mounted read-only", mod: func(s *batch.TrainingJobSpec) {
			withCheckpointVolume(s)
			workerPod(s).Containers[0].VolumeMounts[0].ReadOnly = true
		}, want: []wantErr{invalid(checkpoint + ".volumeName")}, inMessage: "read-only"},
		{name: "mounted at two paths", mod: func(s *batch.TrainingJobSpec) {
			withCheckpointVolume(s)
			workerPod(s).Containers[0].VolumeMounts[0].MountPath = "/elsewhere"
		}, want: []wantErr{invalid(checkpoint + ".volumeName")}, inMessage: "/elsewhere"},
		{name: "grace beyond a pod's termination grace period", mod: func(s *batch.TrainingJobSpec) {
			withCheckpointVolume(s)
			s.ReplicaSpecs[0].Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](10)
		}, want: []wantErr{invalid(checkpoint + ".stopGraceSeconds")}, inMessage: masterPod + ".terminationGracePeriodSeconds (10)"},
		{name: "grace beyond the default termination grace period", mod: func(s *batch.TrainingJobSpec) {
			withCheckpointVolume(s)
			s.RunPolicy.Checkpoint.StopGraceSeconds = ptr.To[int32](31)
		}, want: []wantErr{invalid(checkpoint + ".stopGraceSeconds"), invalid(checkpoint + ".stopGraceSeconds")}},
		{name: "grace zero", mod: func(s *batch.TrainingJobSpec) {
			withCheckpointVolume(s)
			s.RunPolicy.Checkpoint.StopGraceSeconds = ptr.To[int32](0)
		}, want: []wantErr{invalid(checkpoint + ".stopGraceSeconds")}},
		{name: "grace beyond its bound", mod: func(s *batch.TrainingJobSpec) {
			withCheckpointVolume(s)
			for i := range s.ReplicaSpecs {
				s.ReplicaSpecs[i].Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](7200)
			}
			s.RunPolicy.Checkpoint.StopGraceSeconds = ptr.To[int32](batch.MaxStopGraceSeconds + 1)
		}, want: []wantErr{invalid(checkpoint + ".stopGraceSeconds")}},
		{name: "interval zero", mod: func(s *batch.TrainingJobSpec) {
			withCheckpointVolume(s)
			s.RunPolicy.Checkpoint.IntervalSeconds = ptr.To[int32](0)
		}, want: []wantErr{invalid(checkpoint + ".intervalSeconds")}},
		{name: "deadline zero", mod: func(s *batch.TrainingJobSpec) {
			s.RunPolicy.ProgressDeadlineSeconds = ptr.To[int64](0)
		}, want: []wantErr{invalid("spec.runPolicy.progressDeadlineSeconds")}},
		{name: "unknown stall policy", mod: func(s *batch.TrainingJobSpec) {
			s.RunPolicy.ProgressDeadlineSeconds = ptr.To[int64](60)
			s.RunPolicy.StallPolicy = "Retry"
		}, want: []wantErr{notSupported("spec.runPolicy.stallPolicy")}},
		{name: "stall policy without a deadline", mod: func(s *batch.TrainingJobSpec) {
			s.RunPolicy.StallPolicy = batch.StallPolicyFail
		}, want: []wantErr{required("spec.runPolicy.progressDeadlineSeconds")}},
		{name: "stall policy None without a deadline", mod: func(s *batch.TrainingJobSpec) {
			s.RunPolicy.StallPolicy = batch.StallPolicyNone
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidatePyTorchTrainingJob(ptJob(onPT(tc.mod)))
			expectErrors(t, errs, tc.want...)
			if tc.inMessage != "" && len(errs) > 0 && !strings.Contains(errs[0].Error(), tc.inMessage) {
				t.Errorf("error %q does not name %q", errs[0].Error(), tc.inMessage)
			}
		})
	}
}

func TestCheckpointPath(t *testing.T) {
	cases := []struct {
		dir, reported, want string
		ok                  bool
	}{
		{"/ckpt", "step-10.pt", "/ckpt/step-10.pt", true},
		{"/ckpt", "/ckpt/run/step-10.pt", "/ckpt/run/step-10.pt", true},
		{"/ckpt/", "a/../b.pt", "/ckpt/b.pt", true},
		{"/ckpt", "/ckpt", "/ckpt", false},
		{"/ckpt", "../etc/passwd", "/etc/passwd", false},
		{"/ckpt", "/ckptx/a.pt", "/ckptx/a.pt", false},
		{"/ckpt", "/tmp/a.pt", "/tmp/a.pt", false},
	}
	for _, tc := range cases {
		got, ok := batch.CheckpointPath(tc.dir, tc.reported)
		if got != tc.want || ok != tc.ok {
			t.Errorf("CheckpointPath(%q, %q) = %q, %v; want %q, %v", tc.dir, tc.reported, got, ok, tc.want, tc.ok)
		}
	}
}

func TestValidateCheckpointReport(t *testing.T) {
	report := func(path string) *batch.CheckpointReport {
		return &batch.CheckpointReport{CheckpointValues: batch.CheckpointValues{Path: path, Step: ptr.To[int64](10)}}
	}
	cases := []struct {
		name      string
		report    *batch.CheckpointReport
		want      []wantErr
		inMessage string
	}{
		{name: "a relative path", report: report("run/step-10.pt")},
		{name: "an absolute path with spaces and UTF-8", report: report("/ckpt/my run/étape 10.pt")},
		{name: "no path", report: report(""), want: []wantErr{required("path")}},
		{name: "a path too long", report: report(strings.Repeat("a", batch.MaxCheckpointPathBytes+1)), want: []wantErr{tooLong("path")}},
		{name: "a newline", report: report("step-10.pt\nstep-11.pt"), want: []wantErr{invalid("path")}, inMessage: "U+000A at byte 10"},
		{name: "a carriage return", report: report("step-10.pt\r"), want: []wantErr{invalid("path")}, inMessage: "U+000D"},
		{name: "a tab", report: report("step\t10.pt"), want: []wantErr{invalid("path")}, inMessage: "U+0009"},
		{name: "a NUL", report: report("step-10.pt\x00"), want: []wantErr{invalid("path")}, inMessage: "U+0000"},
		{name: "a terminal escape", report: report("\x1b[2Jstep-10.pt"), want: []wantErr{invalid("path")}, inMessage: "U+001B at byte 0"},
		{name: "DEL", report: report("step-10.pt\x7f"), want: []wantErr{invalid("path")}, inMessage: "U+007F"},
		{name: "a C1 control", report: report("step-10.pt\u009b"), want: []wantErr{invalid("path")}, inMessage: "U+009B"},
		{name: "a negative step", report: &batch.CheckpointReport{CheckpointValues: batch.CheckpointValues{Path: "a", Step: ptr.To[int64](-1)}},
			want: []wantErr{invalid("step")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateCheckpointReport(tc.report)
			expectErrors(t, errs, tc.want...)
			if tc.inMessage != "" && len(errs) > 0 && !strings.Contains(errs[0].Error(), tc.inMessage) {
				t.Errorf("error %q does not name %q", errs[0].Error(), tc.inMessage)
			}
			if len(errs) > 0 && strings.ContainsAny(errs[0].Error(), "\n\r\x1b") {
				t.Errorf("error %q carries the control character itself", errs[0].Error())
			}
		})
	}
}
