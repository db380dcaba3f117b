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
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

func podUIDs(pods []corev1.Pod) map[string]types.UID {
	m := map[string]types.UID{}
	for _, p := range pods {
		m[p.Name] = p.UID
	}
	return m
}

// allReplaced says whether there are n pods, all running, none of them one
// of the old ones.
func allReplaced(old map[string]types.UID, n int) func([]corev1.Pod) (bool, error) {
	return func(pods []corev1.Pod) (bool, error) {
		if len(pods) != n {
			return false, nil
		}
		for _, p := range pods {
			if p.UID == old[p.Name] || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
				return false, nil
			}
		}
		return true, nil
	}
}

func pauseEnabled(job v1beta1.TrainingJob) bool {
	m := job.CommonSpec().RunMode
	return m != nil && m.Pause != nil && m.Pause.Enabled
}

func debugEnabled(job v1beta1.TrainingJob) bool {
	m := job.CommonSpec().RunMode
	return m != nil && m.Debug != nil && m.Debug.Enabled
}

// TestPauseResume: pausing through the subresource deletes the pods and
// keeps the Service; resuming goes through Resuming back to Running with new
// pods.
func TestPauseResume(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "pause")
	ref := f.Create(framework.NewTFJob("pausable").WithReplicas("chief", 1).WithReplicas("worker", 2))
	pods := f.WaitForRunningPods(ref, 3)
	f.WaitForPhase(ref, v1beta1.JobRunning)
	before := podUIDs(pods)
	gen := f.MustGetJob(ref).GetGeneration()

	// A dry run answers with the paused job and changes nothing.
	file := f.WriteFile("pause.json", framework.ActionBody("pause"))
	r := f.Kubectl("create", "--raw", ref.ActionPath("pause")+"?dryRun=All", "-f", file)
	if r.Err != nil {
		t.Fatalf("dry-run pause: %s", r)
	}
	var dry v1beta1.TensorFlowTrainingJob
	if err := json.Unmarshal([]byte(r.Stdout), &dry); err != nil || !pauseEnabled(&dry) {
		t.Errorf("dry-run pause answered %q (%v), want the job with runMode.pause.enabled", r.Stdout, err)
	}
	if job := f.MustGetJob(ref); pauseEnabled(job) || job.GetGeneration() != gen {
		t.Fatalf("a dry-run pause changed the job (generation %d, was %d)", job.GetGeneration(), gen)
	}

	r = f.Action(ref, "pause", "")
	if r.Err != nil {
		t.Fatalf("pause: %s", r)
	}
	var paused v1beta1.TensorFlowTrainingJob
	if err := json.Unmarshal([]byte(r.Stdout), &paused); err != nil || !pauseEnabled(&paused) || paused.Generation <= gen {
		t.Errorf("pause answered generation %d, pause %v (%v); want the updated job", paused.Generation, pauseEnabled(&paused), err)
	}
	f.WaitForNoPods(ref, framework.Timeout)
	job := f.WaitForPhase(ref, v1beta1.JobPaused)
	if !framework.HasCondition(job, v1beta1.ConditionPaused, metav1.ConditionTrue, "") {
		job = f.WaitForCondition(ref, v1beta1.ConditionPaused, metav1.ConditionTrue, "")
	}
	checkService(t, f, job, ref, []replicaGroup{{"chief", 1, 2222}, {"worker", 2, 2222}})

	// Pausing a paused job changes nothing.
	gen = job.GetGeneration()
	f.MustAction(ref, "pause", "")
	if g := f.MustGetJob(ref).GetGeneration(); g != gen {
		t.Errorf("pausing a paused job moved the generation from %d to %d", gen, g)
	}

	phases := f.RecordPhases(ref)
	f.MustAction(ref, "resume", "")
	f.WaitForPods(ref, "3 new running pods", framework.Timeout, allReplaced(before, 3))
	job = f.WaitForPhase(ref, v1beta1.JobRunning)
	if pauseEnabled(job) {
		t.Errorf("runMode.pause.enabled is still true after resume")
	}
	if framework.HasCondition(job, v1beta1.ConditionPaused, metav1.ConditionTrue, "") {
		t.Errorf("condition Paused %+v still True after the job runs again", framework.Condition(job, v1beta1.ConditionPaused))
	}
	f.Eventually(framework.Timeout, "the watch to see Running", func(ctx context.Context) (bool, error) {
		return slices.Contains(phases.Phases(), v1beta1.JobRunning), nil
	})
	seen := phases.Phases()
	iResuming, iRunning := slices.Index(seen, v1beta1.JobResuming), slices.Index(seen, v1beta1.JobRunning)
	if seen[0] != v1beta1.JobPaused || iResuming < 0 || iRunning < iResuming {
		t.Errorf("phases after resume %v, want Paused, Resuming, then Running", seen)
	}
}

// TestDebugAction: the debug subresource restarts the pods with the debug
// commands; resume restarts them with the training command.
func TestDebugAction(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "debug")
	ref := f.Create(framework.NewPyTorchJob("debuggable").WithReplicas("master", 1).WithReplicas("worker", 2))
	pods := f.WaitForRunningPods(ref, 3)

	body := `{"kind":"DebugRequest","apiVersion":"batch.tensorstack.dev/v1beta1","replicaSpecs":[{"type":"worker","command":["sleep","3600"]}]}`
	f.MustAction(ref, "debug", body)
	job := f.MustGetJob(ref)
	if !debugEnabled(job) || pauseEnabled(job) {
		t.Fatalf("runMode after debug: %+v", job.CommonSpec().RunMode)
	}
	pods = f.WaitForPods(ref, "3 running debug pods", framework.Timeout, allReplaced(podUIDs(pods), 3))
	checkDebugCommands(t, ref, pods, map[string][]string{"master": {"sleep", "inf"}, "worker": {"sleep", "3600"}})
	checkPyTorchEnv(t, ref, []replicaGroup{{"master", 1, 23456}, {"worker", 2, 23456}}, pods, nil)
	if job := f.WaitForPhase(ref, v1beta1.JobRunning); job.JobStatus().BackoffCount != 0 {
		t.Errorf("switching to debug mode counted %d restarts", job.JobStatus().BackoffCount)
	}

	f.MustAction(ref, "resume", "")
	pods = f.WaitForPods(ref, "3 running pods with the training command", framework.Timeout, allReplaced(podUIDs(pods), 3))
	for i := range pods {
		c := framework.TrainingContainer(ref.Kind, &pods[i])
		typ := pods[i].Labels[v1beta1.LabelReplicaType]
		if !slices.Equal(c.Command, []string{"python", "/workspace/train.py"}) || !slices.Equal(c.Args, []string{"--type=" + typ}) {
			t.Errorf("pod %s runs %q %q after resume, want the template's command", pods[i].Name, c.Command, c.Args)
		}
		if m := pods[i].Annotations[v1beta1.GroupName+"/run-mode"]; m != "Immediate" {
			t.Errorf("pod %s has run-mode %q after resume, want Immediate", pods[i].Name, m)
		}
	}
	if job := f.MustGetJob(ref); debugEnabled(job) {
		t.Errorf("debug still enabled after resume: %+v", job.CommonSpec().RunMode)
	}
}

// TestActionsOnFinishedJob: actions on a finished job are refused with 409
// Conflict naming the phase; a body of the wrong kind is refused.
func TestActionsOnFinishedJob(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "finished")
	ref := f.Create(framework.NewTFJob("done").WithReplicas("worker", 1).ExitCode(0).RunFor("1s"))
	f.WaitForPhase(ref, v1beta1.JobSucceeded)
	for _, action := range []string{"pause", "resume", "debug"} {
		r := f.Action(ref, action, "")
		if r.Err == nil || !strings.Contains(r.Stderr, "Conflict") || !strings.Contains(r.Stderr, "Succeeded") {
			t.Errorf("%s on a Succeeded job: want a Conflict error naming the phase, got %s", action, r)
		}
	}
	if job := f.MustGetJob(ref); pauseEnabled(job) || debugEnabled(job) || job.JobStatus().Phase != v1beta1.JobSucceeded {
		t.Errorf("refused actions changed the job: runMode %+v phase %s", job.CommonSpec().RunMode, job.JobStatus().Phase)
	}

	running := f.Create(framework.NewTFJob("running").WithReplicas("worker", 1))
	r := f.Action(running, "pause", framework.ActionBody("resume"))
	if r.Err == nil || !strings.Contains(r.Stderr, "BadRequest") && !strings.Contains(r.Stderr, "Invalid") {
		t.Errorf("pause with a ResumeRequest body: want a 400-class error, got %s", r)
	}
	if job := f.MustGetJob(running); pauseEnabled(job) {
		t.Errorf("a pause with the wrong body paused the job")
	}
}

// TestDeadlineRestartsOnResume: activeDeadlineSeconds counts from the last
// resume, so a job paused for longer than its deadline can be resumed and
// runs for its deadline again.
func TestDeadlineRestartsOnResume(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "deadline-resume")
	const deadline = 6
	ref := f.Create(framework.NewTFJob("deadline").WithReplicas("worker", 1).ActiveDeadline(deadline))
	first := f.WaitForRunningPods(ref, 1)[0]
	job := f.WaitForPhase(ref, v1beta1.JobRunning)
	started := job.JobStatus().StartTime
	if started == nil {
		t.Fatalf("a running job has no startTime")
	}
	f.MustAction(ref, "pause", "")
	f.WaitForPhase(ref, v1beta1.JobPaused)
	// Stay paused until the deadline, counted from the first start, has
	// passed with a margin.
	f.WaitForJob(ref, "paused past the deadline", framework.Timeout, func(job v1beta1.TrainingJob) (bool, error) {
		if p := job.JobStatus().Phase; p != v1beta1.JobPaused {
			return false, framework.Stop("phase %s while paused", p)
		}
		return time.Since(started.Time) > (deadline+3)*time.Second, nil
	})
	resumed := time.Now()
	f.MustAction(ref, "resume", "")
	// The pod may run only briefly on a loaded machine before the deadline
	// stops it: the status, not a poll of the pods, shows it was replaced.
	job = f.WaitForPhase(ref, v1beta1.JobFailed)
	checkFailed(t, job, "DeadlineExceeded")
	if tasks := job.JobStatus().Tasks; len(tasks) != 1 || len(tasks[0].ReplicaStatus) != 1 ||
		tasks[0].ReplicaStatus[0].UID == "" || tasks[0].ReplicaStatus[0].UID == first.UID {
		t.Errorf("replicas after the resume %+v, want a pod other than the first (%s)", tasks, first.UID)
	}
	// completionTime has second precision: allow one second.
	if ran := job.JobStatus().CompletionTime.Sub(resumed); ran < (deadline-1)*time.Second {
		t.Errorf("the job failed %s after it was resumed, before its deadline of %ds", ran, deadline)
	}
	f.WaitForNoPods(ref, framework.Timeout)
}
