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

package trainingjob

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

// testKind is the storage's kind the tests use.
var testKind = pyTorchKind

// newJob returns a valid PyTorch job with a master and the given workers.
func newJob(name string, workers int32) *batch.PyTorchTrainingJob {
	template := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pytorch", Image: "pytorch:2"}}}}
	return &batch.PyTorchTrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: "7"},
		Spec: batch.PyTorchTrainingJobSpec{TrainingJobSpec: batch.TrainingJobSpec{
			ReplicaSpecs: []batch.ReplicaSpec{
				{Type: "master", Replicas: ptr.To[int32](1), Template: template, RestartPolicy: batch.RestartPolicyNever},
				{Type: "worker", Replicas: ptr.To(workers), Template: template, RestartPolicy: batch.RestartPolicyNever},
			},
			RunPolicy: batch.RunPolicy{BackoffLimit: ptr.To[int32](3), CleanUpPolicy: batch.CleanUpPolicyUnfinished},
		}},
	}
}

func TestPrepareForCreate(t *testing.T) {
	strategy := newJobStrategy(nil, testKind)
	job := newJob("train", 2)
	job.Spec.ReplicaSpecs[0].Type = "Master"
	job.Spec.RunPolicy.CleanUpPolicy = "none"
	job.Status = batch.TrainingJobStatus{Phase: batch.JobSucceeded, BackoffCount: 4}
	job.Generation = 9

	strategy.PrepareForCreate(context.Background(), job)

	if job.Generation != 1 {
		t.Errorf("generation = %d, want 1", job.Generation)
	}
	if job.Status.Phase != "" || job.Status.BackoffCount != 0 {
		t.Errorf("status = %+v, want it cleared", job.Status)
	}
	if job.Spec.ReplicaSpecs[0].Type != "master" || job.Spec.RunPolicy.CleanUpPolicy != batch.CleanUpPolicyNone {
		t.Errorf("spellings not canonical: type %q, cleanUpPolicy %q", job.Spec.ReplicaSpecs[0].Type, job.Spec.RunPolicy.CleanUpPolicy)
	}
	if errs := strategy.Validate(context.Background(), job); len(errs) != 0 {
		t.Errorf("prepared job is invalid: %v", errs)
	}
}

func TestPrepareForUpdate(t *testing.T) {
	strategy := newJobStrategy(nil, testKind)
	cases := []struct {
		name           string
		change         func(*batch.PyTorchTrainingJob)
		wantGeneration int64
	}{
		{"spec change bumps the generation", func(j *batch.PyTorchTrainingJob) { j.Spec.ReplicaSpecs[1].Replicas = ptr.To[int32](5) }, 4},
		{"PyTorch-only spec change bumps the generation", func(j *batch.PyTorchTrainingJob) {
			j.Spec.TorchrunConfig = &batch.TorchrunConfig{Enabled: true}
		}, 4},
		{"label change keeps the generation", func(j *batch.PyTorchTrainingJob) { j.Labels = map[string]string{"a": "b"} }, 3},
		{"respelling alone keeps the generation", func(j *batch.PyTorchTrainingJob) { j.Spec.ReplicaSpecs[1].Type = "Worker" }, 3},
		{"status change is dropped", func(j *batch.PyTorchTrainingJob) { j.Status.Phase = batch.JobFailed }, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := newJob("train", 2)
			old.Generation = 3
			old.Status.Phase = batch.JobRunning
			job := old.DeepCopy()
			tc.change(job)
			strategy.PrepareForUpdate(context.Background(), job, old)
			if job.Generation != tc.wantGeneration {
				t.Errorf("generation = %d, want %d", job.Generation, tc.wantGeneration)
			}
			if job.Status.Phase != batch.JobRunning {
				t.Errorf("status.phase = %q, want the stored Running", job.Status.Phase)
			}
		})
	}
}

func TestStatusStrategyKeepsSpec(t *testing.T) {
	strategy := statusStrategy[*batch.PyTorchTrainingJob, batch.PyTorchTrainingJobSpec]{newJobStrategy(nil, testKind)}
	old := newJob("train", 2)
	old.Generation = 2
	job := old.DeepCopy()
	job.Spec.ReplicaSpecs[1].Replicas = ptr.To[int32](8)
	job.Spec.Elastic = &batch.ElasticConfig{Enabled: true}
	job.Status.Phase = batch.JobRunning

	strategy.PrepareForUpdate(context.Background(), job, old)

	if *job.Spec.ReplicaSpecs[1].Replicas != 2 || job.Spec.Elastic != nil {
		t.Errorf("spec changed through status: %+v", job.Spec)
	}
	if job.Status.Phase != batch.JobRunning || job.Generation != 2 {
		t.Errorf("phase %q generation %d, want Running and 2", job.Status.Phase, job.Generation)
	}
	if errs := strategy.ValidateUpdate(context.Background(), job, old); len(errs) != 0 {
		t.Errorf("valid status update rejected: %v", errs)
	}
	finished := job.DeepCopy()
	finished.Status.Phase = batch.JobSucceeded
	reopened := finished.DeepCopy()
	reopened.Status.Phase = batch.JobRunning
	if errs := strategy.ValidateUpdate(context.Background(), reopened, finished); len(errs) == 0 {
		t.Errorf("status update from Succeeded back to Running was accepted")
	}
}

func TestResetFields(t *testing.T) {
	strategy := newJobStrategy(nil, testKind)
	for version, set := range strategy.GetResetFields() {
		if version != "batch.tensorstack.dev/v1beta1" || set.String() != ".status" {
			t.Errorf("main resource resets %s %s, want batch.tensorstack.dev/v1beta1 .status", version, set)
		}
	}
	status := statusStrategy[*batch.PyTorchTrainingJob, batch.PyTorchTrainingJobSpec]{strategy}
	for version, set := range status.GetResetFields() {
		if want := ".spec\n.status.progress"; version != "batch.tensorstack.dev/v1beta1" || set.String() != want {
			t.Errorf("status resets %s %s, want batch.tensorstack.dev/v1beta1 %s", version, set, want)
		}
	}
}

func TestWarnings(t *testing.T) {
	strategy := newJobStrategy(nil, testKind)
	job := newJob("train", 1)
	if w := strategy.WarningsOnCreate(context.Background(), job); len(w) != 0 {
		t.Errorf("warnings for a plain job: %v", w)
	}
	job.Spec.ReplicaSpecs[1].Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	w := strategy.WarningsOnCreate(context.Background(), job)
	const restartPolicy = `spec.replicaSpecs[1].template.spec.restartPolicy: "OnFailure" is ignored; pods run with ` +
		`Never and the job's restartPolicy decides replacements`
	if len(w) != 1 || w[0] != restartPolicy {
		t.Errorf("warnings = %q, want exactly [%q]", w, restartPolicy)
	}

	const gang = "spec.scheduler.t9kScheduler: the pods are gang-scheduled (all or nothing) only when the controller " +
		"runs with a gang scheduler (the Workload API or coscheduling); otherwise they are scheduled one by one and " +
		"the job's GangScheduled condition says so"
	const queue = ". The queue is a Kueue LocalQueue: where the controller queues with Kueue, the job's pods are " +
		"created once that queue admits the job; otherwise the queue is only recorded on the pod group"
	for _, tc := range []struct {
		name      string
		scheduler batch.T9kScheduler
		want      string
	}{
		{"a gang with a queue", batch.T9kScheduler{Queue: "gpus"}, gang + queue},
		{"a gang with a priority and no queue", batch.T9kScheduler{Priority: 50}, gang},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := newJob("train", 1)
			job.Spec.Scheduler = &batch.SchedulePolicy{T9kScheduler: &tc.scheduler}
			if w := strategy.WarningsOnCreate(context.Background(), job); len(w) != 1 || w[0] != tc.want {
				t.Errorf("warnings = %q, want exactly [%q]", w, tc.want)
			}
		})
	}

	t.Run("update warns only when the spec changed", func(t *testing.T) {
		old := newJob("train", 1)
		old.Spec.ReplicaSpecs[1].Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		relabelled := old.DeepCopy()
		relabelled.Labels = map[string]string{"team": "vision"}
		relabelled.Status.Phase = batch.JobRunning
		if w := strategy.WarningsOnUpdate(context.Background(), relabelled, old); len(w) != 0 {
			t.Errorf("warnings on a label and status change: %v", w)
		}
		resized := old.DeepCopy()
		resized.Spec.ReplicaSpecs[1].Replicas = ptr.To[int32](4)
		if w := strategy.WarningsOnUpdate(context.Background(), resized, old); len(w) != 1 {
			t.Errorf("warnings on a spec change = %v, want the restartPolicy warning again", w)
		}
	})
}

func TestActionsApply(t *testing.T) {
	debugRequest := &batch.DebugRequest{ReplicaSpecs: []batch.ReplicaDebugSpec{{Type: "worker", Command: []string{"bash"}}}}
	cases := []struct {
		name      string
		start     *batch.RunMode
		action    action
		request   runtime.Object
		wantPause bool
		wantDebug bool
	}{
		{"pause a running job", nil, pauseAction, &batch.PauseRequest{}, true, false},
		{"pause a debugging job", &batch.RunMode{Debug: &batch.DebugMode{Enabled: true}}, pauseAction, &batch.PauseRequest{}, true, false},
		{"resume a paused job", &batch.RunMode{Pause: &batch.PauseMode{Enabled: true}}, resumeAction, &batch.ResumeRequest{}, false, false},
		{"resume a debugging job", &batch.RunMode{Debug: &batch.DebugMode{Enabled: true}}, resumeAction, &batch.ResumeRequest{}, false, false},
		{"debug a paused job", &batch.RunMode{Pause: &batch.PauseMode{Enabled: true}}, debugAction, debugRequest, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := &newJob("train", 1).Spec.TrainingJobSpec
			spec.RunMode = tc.start.DeepCopy()
			tc.action.apply(spec, tc.request)
			mode := spec.RunMode
			gotPause := mode != nil && mode.Pause != nil && mode.Pause.Enabled
			gotDebug := mode != nil && mode.Debug != nil && mode.Debug.Enabled
			if gotPause != tc.wantPause || gotDebug != tc.wantDebug {
				t.Errorf("pause %v debug %v, want pause %v debug %v", gotPause, gotDebug, tc.wantPause, tc.wantDebug)
			}
			if tc.wantDebug && mode.Debug.ReplicaSpecs[0].Command[0] != "bash" {
				t.Errorf("debug replicaSpecs not taken from the request: %+v", mode.Debug.ReplicaSpecs)
			}
		})
	}

	t.Run("resume keeps resumeSpecs", func(t *testing.T) {
		spec := &newJob("train", 1).Spec.TrainingJobSpec
		spec.RunMode = &batch.RunMode{Pause: &batch.PauseMode{Enabled: true, ResumeSpecs: []batch.ResumeSpec{{Type: "worker"}}}}
		resumeAction.apply(spec, &batch.ResumeRequest{})
		if len(spec.RunMode.Pause.ResumeSpecs) != 1 {
			t.Errorf("resume dropped the immutable resumeSpecs")
		}
	})
}

// TestUpdateTopologyOfRunningJob goes through the strategy the way the
// server does: a client's body carries no status, PrepareForUpdate puts the
// stored one in, and ValidateUpdate judges the change against the stored
// job, whose status shows a running pod.
func TestUpdateTopologyOfRunningJob(t *testing.T) {
	strategy := newJobStrategy(nil, testKind)
	ctx := context.Background()
	stored := func(mods ...func(*batch.PyTorchTrainingJob)) *batch.PyTorchTrainingJob {
		old := newJob("train", 2)
		old.Status = batch.TrainingJobStatus{Phase: batch.JobRunning, Tasks: []batch.TaskStatus{{Type: "worker",
			ReplicaStatus: []batch.ReplicaStatus{{Name: "train-worker-0", UID: "0a1b2c3d-0000-4000-8000-000000000001", Phase: batch.ReplicaRunning}}}}}
		for _, mod := range mods {
			mod(old)
		}
		return old
	}
	resize := func(old *batch.PyTorchTrainingJob, mods ...func(*batch.PyTorchTrainingJob)) field.ErrorList {
		job := old.DeepCopy()
		job.Status = batch.TrainingJobStatus{}
		job.Spec.ReplicaSpecs[1].Replicas = ptr.To[int32](4)
		for _, mod := range mods {
			mod(job)
		}
		strategy.PrepareForUpdate(ctx, job, old)
		return strategy.ValidateUpdate(ctx, job, old)
	}
	pause := func(j *batch.PyTorchTrainingJob) { batch.Pause(&j.Spec.TrainingJobSpec) }

	errs := resize(stored())
	if len(errs) != 1 || errs[0].Type != field.ErrorTypeForbidden || errs[0].Field != "spec.replicaSpecs[1].replicas" ||
		!strings.Contains(errs[0].Detail, "kubectl training pause") {
		t.Errorf("resizing a running job: errors %v, want one Forbidden on spec.replicaSpecs[1].replicas saying to pause first", errs)
	}
	if errs := resize(stored(pause)); len(errs) != 0 {
		t.Errorf("resizing a paused job was refused: %v", errs)
	}
	if errs := resize(stored(), pause); len(errs) != 0 {
		t.Errorf("pausing and resizing in one update was refused: %v", errs)
	}
	if errs := resize(stored(func(j *batch.PyTorchTrainingJob) { j.Status = batch.TrainingJobStatus{Phase: batch.JobPending} })); len(errs) != 0 {
		t.Errorf("resizing a pending job without pods was refused: %v", errs)
	}

	// The pause action changes only the run mode, and is accepted.
	old := stored()
	job := old.DeepCopy()
	pauseAction.apply(&job.Spec.TrainingJobSpec, &batch.PauseRequest{})
	strategy.PrepareForUpdate(ctx, job, old)
	if errs := strategy.ValidateUpdate(ctx, job, old); len(errs) != 0 {
		t.Errorf("pausing a running job was refused: %v", errs)
	}

	// A status write that carries a changed spec keeps the stored spec.
	status := statusStrategy[*batch.PyTorchTrainingJob, batch.PyTorchTrainingJobSpec]{strategy}
	job = old.DeepCopy()
	job.Spec.ReplicaSpecs[1].Replicas = ptr.To[int32](4)
	job.Status.Aggregate.Running = 1
	status.PrepareForUpdate(ctx, job, old)
	if errs := status.ValidateUpdate(ctx, job, old); len(errs) != 0 {
		t.Errorf("status update of a running job was refused: %v", errs)
	}
}
