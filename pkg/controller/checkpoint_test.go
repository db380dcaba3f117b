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

package controller

import (
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// withCheckpoints gives every replica type a checkpoint volume mounted at
// /ckpt and a checkpoint policy with the given stop grace.
func (b *jobBuilder) withCheckpoints(grace int32) *jobBuilder {
	for i := range b.spec().ReplicaSpecs {
		pod := &b.spec().ReplicaSpecs[i].Template.Spec
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "ckpt",
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "ckpt"}}})
		pod.Containers[0].VolumeMounts = append(pod.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "ckpt", MountPath: "/ckpt"})
	}
	b.spec().RunPolicy.Checkpoint = &v1beta1.CheckpointPolicy{VolumeName: "ckpt", StopGraceSeconds: ptr.To(grace)}
	return b
}

// reportCheckpoint stores a checkpoint report as the checkpoint
// subresource would, at the fixture's clock.
func (f *fixture) reportCheckpoint(job v1beta1.TrainingJob, step int64) {
	f.t.Helper()
	j := f.job(job)
	st := j.JobStatus()
	if st.Checkpoint == nil {
		st.Checkpoint = &v1beta1.CheckpointStatus{}
	}
	if st.Checkpoint.Latest != nil {
		st.Checkpoint.History = append(st.Checkpoint.History, *st.Checkpoint.Latest)
	}
	st.Checkpoint.Latest = &v1beta1.CheckpointRecord{
		CheckpointValues: v1beta1.CheckpointValues{Path: "/ckpt/step-" + itoa64(step) + ".pt", Step: ptr.To(step)},
		Reporter:         "j-master-0",
		ReportTime:       metav1.NewMicroTime(f.clock.Now()),
	}
	f.updateJob(j)
}

// reportProgress stores a progress report at the fixture's clock.
func (f *fixture) reportProgress(job v1beta1.TrainingJob, step int64, advanced bool) {
	f.t.Helper()
	j := f.job(job)
	st := j.JobStatus()
	now := metav1.NewMicroTime(f.clock.Now())
	if st.Progress == nil {
		st.Progress = &v1beta1.ProgressStatus{}
	}
	st.Progress.Step, st.Progress.ReportTime, st.Progress.Reporter = ptr.To(step), &now, "j-master-0"
	if advanced {
		st.Progress.AdvanceTime = &now
	}
	f.updateJob(j)
}

func itoa64(i int64) string { return strconv.FormatInt(i, 10) }

func podEnv(p *corev1.Pod) map[string]string {
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == "pytorch" {
			return envOf(&p.Spec.Containers[i])
		}
	}
	return nil
}

func TestCheckpointContractInPods(t *testing.T) {
	job := newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 1).withCheckpoints(20).obj()
	f := newFixture(t, job)
	f.start(job)
	p := f.pod("j-worker-0")
	env := podEnv(p)
	if env[v1beta1.EnvCheckpointDir] != "/ckpt" || env[v1beta1.EnvCheckpointRequestFile] != "/etc/tensorstack/checkpoint/request" {
		t.Errorf("env %v: want the checkpoint directory and the request file", env)
	}
	if _, ok := env[v1beta1.EnvResumeFrom]; ok {
		t.Errorf("env %v: a job without a checkpoint has nothing to resume from", env)
	}
	var projected bool
	for _, v := range p.Spec.Volumes {
		if v.Name == v1beta1.CheckpointRequestVolume && v.DownwardAPI != nil &&
			v.DownwardAPI.Items[0].FieldRef.FieldPath == "metadata.annotations['"+v1beta1.AnnotationCheckpointRequest+"']" {
			projected = true
		}
	}
	if !projected {
		t.Errorf("volumes %+v: no downward API projection of the request annotation", p.Spec.Volumes)
	}
}

func TestPauseWaitsForCheckpoint(t *testing.T) {
	job := newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 1).withCheckpoints(20).obj()
	f := newFixture(t, job)
	f.gracefulDeletes()
	f.start(job)
	f.clock.Step(time.Minute)
	f.reportProgress(job, 25, true)

	paused := f.pause(job)
	requeue := f.mustSync(paused)
	f.observe()
	if got := f.deletedPodNames(); len(got) != 0 {
		t.Fatalf("deleted %v before the checkpoint", got)
	}
	st := f.status(paused)
	if st.Checkpoint == nil || st.Checkpoint.RequestTime == nil || st.Checkpoint.RequestReason != StopPause {
		t.Fatalf("status.checkpoint %+v: want a request for the pause", st.Checkpoint)
	}
	if requeue <= 0 || requeue > 20*time.Second {
		t.Errorf("requeue after %v, want within the 20s grace", requeue)
	}
	assertCondition(t, st, v1beta1.ConditionPaused, metav1.ConditionTrue, ReasonPausing)
	want := st.Checkpoint.RequestTime.Format(metav1.RFC3339Micro)
	for _, name := range []string{"j-master-0", "j-worker-0"} {
		if got := f.pod(name).Annotations[v1beta1.AnnotationCheckpointRequest]; got != want {
			t.Errorf("pod %s request annotation %q, want %q", name, got, want)
		}
	}
	if !hasEvent(f.events(), corev1.EventTypeNormal, ReasonCheckpointRequested) {
		t.Errorf("no CheckpointRequested event")
	}

	// Still waiting: nothing goes.
	f.clock.Step(3 * time.Second)
	f.step(paused)
	if got := f.deletedPodNames(); len(got) != 0 {
		t.Fatalf("deleted %v while waiting", got)
	}
	// The checkpoint arrives: the pods go.
	f.clock.Step(2 * time.Second)
	f.reportCheckpoint(paused, 24)
	f.mustSync(paused)
	if got := f.deletedPodNames(); !equalStrings(got, []string{"j-master-0", "j-worker-0"}) {
		t.Fatalf("deleted %v, want every pod once the checkpoint came", got)
	}
	f.observe()
	if !hasEvent(f.events(), corev1.EventTypeNormal, ReasonCheckpointWritten) {
		t.Errorf("no CheckpointWritten event")
	}
	st = f.status(paused)
	if st.Checkpoint.RequestTime != nil {
		t.Errorf("the request stays after its stop went ahead: %+v", st.Checkpoint)
	}
	a := st.Accounting
	if a == nil || a.Interruptions != 1 || len(a.Recent) != 1 {
		t.Fatalf("accounting %+v: want one interruption", a)
	}
	in := a.Recent[0]
	if in.Reason != StopPause || in.Replicas != 2 || in.CheckpointAnswered == nil || !*in.CheckpointAnswered ||
		in.LostSeconds != 0 || in.ResumeStep == nil || *in.ResumeStep != 24 || in.LostSteps == nil || *in.LostSteps != 1 {
		t.Errorf("interruption %+v: want a pause of 2 replicas answered at step 24, 1 step and no time lost", in)
	}

	// Resumed, every pod starts from the checkpoint.
	for _, p := range []string{"j-master-0", "j-worker-0"} {
		f.removePod(p)
	}
	f.step(paused)
	resumed := f.job(paused)
	resumed.CommonSpec().RunMode.Pause.Enabled = false
	f.updateJob(resumed)
	f.step(resumed)
	env := podEnv(f.pod("j-master-0"))
	if env[v1beta1.EnvResumeFrom] != "/ckpt/step-24.pt" || env[v1beta1.EnvResumeStep] != "24" {
		t.Errorf("env %v: want to resume from step 24", env)
	}
}

func TestPauseCheckpointTimesOut(t *testing.T) {
	job := newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 1).withCheckpoints(20).obj()
	f := newFixture(t, job)
	f.start(job)
	f.clock.Step(90 * time.Second)
	paused := f.pause(job)
	f.step(paused)
	f.clock.Step(20 * time.Second)
	f.mustSync(paused)
	if got := f.deletedPodNames(); len(got) != 2 {
		t.Fatalf("deleted %v, want both pods once the grace ran out", got)
	}
	f.observe()
	if !hasEvent(f.events(), corev1.EventTypeWarning, ReasonCheckpointTimedOut) {
		t.Errorf("no CheckpointTimedOut event")
	}
	in := f.status(paused).Accounting.Recent[0]
	if in.CheckpointAnswered == nil || *in.CheckpointAnswered || in.LostSeconds != 110 || in.LostReplicaSeconds != 220 {
		t.Errorf("interruption %+v: want unanswered, 110s lost on each of 2 replicas", in)
	}
}

func TestPauseWithoutCheckpointPolicyStopsAtOnce(t *testing.T) {
	job := newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 1).obj()
	f := newFixture(t, job)
	f.start(job)
	f.clock.Step(30 * time.Second)
	paused := f.pause(job)
	f.mustSync(paused)
	if got := f.deletedPodNames(); len(got) != 2 {
		t.Fatalf("deleted %v, want both pods at once", got)
	}
	f.observe()
	st := f.status(paused)
	if st.Checkpoint != nil {
		t.Errorf("status.checkpoint %+v on a job without the contract", st.Checkpoint)
	}
	if a := st.Accounting; a == nil || a.Interruptions != 1 || a.Recent[0].LostReplicaSeconds != 60 || a.Recent[0].CheckpointAnswered != nil {
		t.Errorf("accounting %+v: want one interruption of 30s on 2 replicas, no checkpoint asked", a)
	}
}

// A job whose training ends while its pause waits for a checkpoint has
// succeeded: the pause must not delete the finished pods and run the work
// again on resume.
func TestJobThatSucceedsWhilePausingSucceeds(t *testing.T) {
	job := newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 1).withCheckpoints(20).obj()
	f := newFixture(t, job)
	f.gracefulDeletes()
	f.start(job)
	f.clock.Step(time.Minute)
	paused := f.pause(job)
	f.step(paused)
	assertCondition(t, f.status(paused), v1beta1.ConditionPaused, metav1.ConditionTrue, ReasonPausing)

	f.clock.Step(5 * time.Second)
	f.setPod("j-master-0", succeeded)
	f.mustSync(paused)
	f.observe()
	st := f.status(paused)
	if st.Phase != v1beta1.JobSucceeded {
		t.Fatalf("phase %s, want Succeeded: the master finished before the pause took effect", st.Phase)
	}
	assertCondition(t, st, v1beta1.ConditionCompleted, metav1.ConditionTrue, ReasonSucceeded)
	assertCondition(t, st, v1beta1.ConditionPaused, metav1.ConditionFalse, ReasonSucceeded)
	if st.Checkpoint != nil && st.Checkpoint.RequestTime != nil {
		t.Errorf("status.checkpoint %+v: the finished job's request stays", st.Checkpoint)
	}
	if st.Accounting != nil && st.Accounting.Interruptions != 0 {
		t.Errorf("accounting %+v: a job that finished was not interrupted", st.Accounting)
	}
	for _, task := range st.Tasks {
		if task.Type == v1beta1.ReplicaTypeMaster && (len(task.ReplicaStatus) != 1 || task.ReplicaStatus[0].Phase != v1beta1.ReplicaSucceeded) {
			t.Errorf("master's status %+v, want Succeeded", task.ReplicaStatus)
		}
	}
	if hasEvent(f.events(), corev1.EventTypeNormal, ReasonPaused) {
		t.Errorf("a Paused event for a job that succeeded")
	}
}

// A pod that the pause already stops may exit 0 on its signal: that is not
// the job's success, and the job ends Paused.
func TestPodStoppedByThePauseIsNoSuccess(t *testing.T) {
	job := newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 1).obj()
	f := newFixture(t, job)
	f.gracefulDeletes()
	f.start(job)
	paused := f.pause(job)
	f.mustSync(paused)
	if got := f.deletedPodNames(); len(got) != 2 {
		t.Fatalf("deleted %v, want both pods", got)
	}
	f.observe()
	f.setPod("j-master-0", succeeded)
	f.step(paused)
	if st := f.status(paused); st.Phase.IsFinished() {
		t.Fatalf("phase %s: the master exited 0 on the pause's signal, which is no success", st.Phase)
	}
	for _, p := range []string{"j-master-0", "j-worker-0"} {
		f.removePod(p)
	}
	f.step(paused)
	if st := f.status(paused); st.Phase != v1beta1.JobPaused {
		t.Errorf("phase %s, want Paused", st.Phase)
	}
}

func TestRestartJobWaitsForCheckpoint(t *testing.T) {
	job := newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 1).withCheckpoints(20).obj()
	job.CommonSpec().RunPolicy.FailurePolicy = &v1beta1.FailurePolicy{Rules: []v1beta1.FailurePolicyRule{{Action: v1beta1.FailurePolicyActionRestartJob}}}
	f := newFixture(t, job)
	f.start(job)
	f.setPod("j-worker-0", failed(137))
	f.mustSync(job)
	f.observe()
	if got := f.deletedPodNames(); len(got) != 0 {
		t.Fatalf("deleted %v before asking the master for a checkpoint", got)
	}
	st := f.status(job)
	if st.BackoffCount != 0 || st.Checkpoint == nil || st.Checkpoint.RequestReason != StopRestartJob {
		t.Fatalf("backoffCount %d, checkpoint %+v: want a RestartJob request, nothing counted yet", st.BackoffCount, st.Checkpoint)
	}
	if f.pod("j-master-0").Annotations[v1beta1.AnnotationCheckpointRequest] == "" {
		t.Errorf("the surviving master was not asked")
	}
	f.clock.Step(time.Second)
	f.reportCheckpoint(job, 7)
	f.mustSync(job)
	if got := f.deletedPodNames(); len(got) != 2 {
		t.Fatalf("deleted %v, want the whole job restarted", got)
	}
	f.observe()
	st = f.status(job)
	if st.BackoffCount != 1 {
		t.Errorf("backoffCount %d, want the restart counted once", st.BackoffCount)
	}
	// Both replicas lose their work: the master asked, and the worker that
	// failed.
	if in := st.Accounting.Recent[0]; in.Reason != StopRestartJob || in.Replicas != 2 || !*in.CheckpointAnswered {
		t.Errorf("interruption %+v: want a RestartJob of 2 replicas, answered", in)
	}
}

// TestRunningPodsFollowTheLatestCheckpoint: the running pods' resume
// annotations, which the kubelet projects into files, follow every new
// checkpoint, for a process that restarts inside its pod.
func TestRunningPodsFollowTheLatestCheckpoint(t *testing.T) {
	job := newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 1).withCheckpoints(20).obj()
	f := newFixture(t, job)
	f.start(job)
	for _, step := range []int64{10, 20} {
		f.reportCheckpoint(job, step)
		f.step(job)
		for _, name := range []string{"j-master-0", "j-worker-0"} {
			a := f.pod(name).Annotations
			if a[v1beta1.AnnotationResumeFrom] != "/ckpt/step-"+itoa64(step)+".pt" || a[v1beta1.AnnotationResumeStep] != itoa64(step) {
				t.Errorf("pod %s resume annotations %v, want step %d", name, a, step)
			}
		}
	}
	var files []string
	for _, v := range f.pod("j-master-0").Spec.Volumes {
		if v.DownwardAPI != nil {
			for _, item := range v.DownwardAPI.Items {
				files = append(files, item.Path)
			}
		}
	}
	if !equalStrings(files, []string{"request", "resume-from", "resume-step"}) {
		t.Errorf("projected files %v", files)
	}
}

func counterValue(t *testing.T, c metrics.CounterMetric) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(c)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestScaleInWaitsForCheckpoint: scaling an elastic job in asks its pods
// for a checkpoint before the extra replicas go; scaling out stops nothing
// and asks nothing.
func TestScaleInWaitsForCheckpoint(t *testing.T) {
	b := newPyTorchJob("j").withReplicas("worker", 2).withTorchrun(v1beta1.TorchrunConfig{Enabled: true}).withCheckpoints(20)
	b.job.(*v1beta1.PyTorchTrainingJob).Spec.Elastic = &v1beta1.ElasticConfig{
		Enabled: true, MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](4), ExpectedReplicas: ptr.To[int32](3),
	}
	job := b.obj()
	f := newFixture(t, job)
	f.start(job)
	scale := func(n int32) {
		t.Helper()
		j := f.job(job).DeepCopyObject().(*v1beta1.PyTorchTrainingJob)
		j.Spec.Elastic.ExpectedReplicas = ptr.To(n)
		f.updateJob(j)
	}
	scale(4)
	f.mustSync(job)
	if st := f.status(job); st.Checkpoint != nil && st.Checkpoint.RequestTime != nil {
		t.Errorf("scaling out asked for a checkpoint: %+v", st.Checkpoint)
	}
	f.observe()
	f.setAll(running)
	f.step(job)

	scale(2)
	f.mustSync(job)
	if got := f.deletedPodNames(); len(got) != 0 {
		t.Fatalf("deleted %v before the checkpoint", got)
	}
	f.observe()
	if st := f.status(job); st.Checkpoint == nil || st.Checkpoint.RequestReason != StopResize {
		t.Fatalf("status.checkpoint %+v, want a request for the resize", st.Checkpoint)
	}
	f.clock.Step(time.Second)
	f.reportCheckpoint(job, 12)
	f.mustSync(job)
	if got := f.deletedPodNames(); !equalStrings(got, []string{"j-worker-2", "j-worker-3"}) {
		t.Errorf("deleted %v, want the two highest indexes once the checkpoint came", got)
	}
}

// TestCalledOffStopWithdrawsItsRequest: a job resumed while its pause waits
// for a checkpoint keeps its pods, and neither its status nor its pods go
// on asking for one.
func TestCalledOffStopWithdrawsItsRequest(t *testing.T) {
	job := newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 1).withCheckpoints(20).obj()
	f := newFixture(t, job)
	f.start(job)
	paused := f.pause(job)
	f.step(paused)
	if f.pod("j-master-0").Annotations[v1beta1.AnnotationCheckpointRequest] == "" {
		t.Fatalf("the pause did not ask")
	}
	// The fake apiserver's patches keep the resourceVersion: let the
	// cache see them.
	for _, name := range []string{"j-master-0", "j-worker-0"} {
		f.setPod(name, func(*corev1.Pod) {})
	}
	resumed := f.job(paused)
	resumed.CommonSpec().RunMode.Pause.Enabled = false
	f.updateJob(resumed)
	f.mustSync(resumed)
	if got := f.deletedPodNames(); len(got) != 0 {
		t.Fatalf("deleted %v after the pause was called off", got)
	}
	f.observe()
	if c := f.status(resumed).Checkpoint; c != nil && c.RequestTime != nil {
		t.Errorf("status.checkpoint %+v: the request stays", c)
	}
	for _, name := range []string{"j-master-0", "j-worker-0"} {
		if v, ok := f.pod(name).Annotations[v1beta1.AnnotationCheckpointRequest]; ok {
			t.Errorf("pod %s still carries the request %q", name, v)
		}
	}
}
