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
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"tensorstack.dev/training/internal/localcluster"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// The checkpoint contract on the real node: the DDP example saves real
// checkpoints with torch.save on a PersistentVolume of the stack's
// local-path provisioner, and every interruption resumes from one.

// ddpCheckpointJob is the DDP example as a checkpointing job: two torchrun
// replicas whose checkpoint volume is the PersistentVolumeClaim ckpt,
// mounted at /ckpt, and whose stops wait stopGraceSeconds for a checkpoint.
// Callers add the example's environment (STEPS, STEP_SECONDS, ...) and the
// rest of the run policy.
func ddpCheckpointJob(name string, stopGraceSeconds int32) *framework.JobBuilder {
	return framework.NewPyTorchJob(name).WithReplicas("node", 2).WithRestartPolicy("node", v1beta1.RestartPolicyNever).
		Torchrun(v1beta1.TorchrunConfig{ProcPerNode: "1", RdzvBackend: v1beta1.RendezvousBackendC10d}).
		Image(framework.TrainingImage).Command("python3", "pytorch_ddp.py").GracePeriod(30).
		Requests("250m", "512Mi").CPULimit("1").MemoryLimit("2Gi").ClaimVolume("ckpt", "ckpt", "/ckpt").
		CleanUp(v1beta1.CleanUpPolicyNone).CheckpointVolume("ckpt", stopGraceSeconds)
}

// checkpointClaim makes the test's PersistentVolumeClaim ckpt, provisioned
// on the real node by the stack's default StorageClass.
func checkpointClaim(f *framework.Framework) {
	f.T.Helper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "ckpt"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := f.Kube.CoreV1().PersistentVolumeClaims(f.Namespace).Create(f.Context(), pvc, metav1.CreateOptions{}); err != nil {
		f.T.Fatalf("creating the checkpoint claim: %v", err)
	}
}

var (
	resumedLine = regexp.MustCompile(`rank=(\d+) resumed from step=(\d+) path=(\S+)`)
	savedLine   = regexp.MustCompile(`rank=0 checkpoint saved step=(\d+) path=(\S+) reason=(\w+) reported=(\w+)`)
)

// stepLosses are the losses a pod's log shows, by step, for one rank.
func stepLosses(log string, rank int) map[int]float64 {
	losses := map[int]float64{}
	for _, m := range stepLine.FindAllStringSubmatch(log, -1) {
		if r, _ := strconv.Atoi(m[1]); r != rank {
			continue
		}
		step, _ := strconv.Atoi(m[2])
		loss, _ := strconv.ParseFloat(m[3], 64)
		losses[step] = loss
	}
	return losses
}

// lowestStep is the lowest step in losses.
func lowestStep(losses map[int]float64) int {
	first := -1
	for s := range losses {
		if first < 0 || s < first {
			first = s
		}
	}
	return first
}

// waitForStep waits until the job's progress reached step.
func waitForStep(f *framework.Framework, ref framework.JobRef, step int64) v1beta1.TrainingJob {
	f.T.Helper()
	return f.WaitForJob(ref, fmt.Sprintf("progress at step %d", step), realNodeTimeout, func(job v1beta1.TrainingJob) (bool, error) {
		if job.JobStatus().Phase.IsFinished() {
			return false, framework.Stop("the job finished early: %s", f.DumpJob(ref))
		}
		p := job.JobStatus().Progress
		return p != nil && ptr.Deref(p.Step, 0) >= step, nil
	})
}

// eventWait bounds how long eventMessage waits for an event to appear: the
// controller records events after the status write that explains them, and
// its recorder sends them to the API in the background, so a test that saw
// the status may look before the event is there (a loaded machine's CI did).
const eventWait = 30 * time.Second

// eventMessage is the message of the job's last event with the reason, once
// there is one within eventWait, or "".
func eventMessage(f *framework.Framework, ref framework.JobRef, reason string) string {
	f.T.Helper()
	deadline := time.Now().Add(eventWait)
	for {
		events, err := f.JobEvents(f.Context(), ref)
		if err != nil {
			f.T.Fatal(err)
		}
		msg, found := "", false
		for _, e := range events {
			if e.Reason == reason {
				msg, found = e.Message, true
			}
		}
		if found || time.Now().After(deadline) {
			return msg
		}
		time.Sleep(250 * time.Millisecond)
	}
}

var writtenAfter = regexp.MustCompile(`written ([0-9.]+)s after the request`)

// checkResumedFrom checks that each rank's log of the resumed run names the
// checkpoint and trains from the step after it, with a loss far below the
// first run's first: the training went on, it did not start over.
func checkResumedFrom(t *testing.T, f *framework.Framework, ref framework.JobRef, step int64, firstLoss float64) {
	t.Helper()
	for _, p := range f.Pods(ref) {
		log := podLog(f, p.Name)
		m := resumedLine.FindStringSubmatch(log)
		if m == nil {
			t.Errorf("pod %s did not resume from a checkpoint:\n%s", p.Name, log)
			continue
		}
		rank, _ := strconv.Atoi(m[1])
		if got, _ := strconv.ParseInt(m[2], 10, 64); got != step {
			t.Errorf("pod %s resumed from step %d, want %d", p.Name, got, step)
		}
		losses := stepLosses(log, rank)
		first := lowestStep(losses)
		if int64(first) != step+1 {
			t.Errorf("pod %s (rank %d): first step after the resume %d, want %d", p.Name, rank, first, step+1)
		}
		if firstLoss > 0 && losses[first] > firstLoss/5 {
			t.Errorf("pod %s (rank %d): loss %g at step %d, the first run began at %g: training started over", p.Name, rank, losses[first], first, firstLoss)
		}
		t.Logf("pod %s (rank %d): resumed from step %s, first step %d at loss %g (first run's step 1: %g)", p.Name, rank, m[2], first, losses[first], firstLoss)
	}
}

// rank0Log is the log of the job's rank 0 (node-0).
func rank0Log(f *framework.Framework, ref framework.JobRef) string {
	return podLog(f, ref.Name+"-node-0")
}

// TestRealNodeCheckpointPauseResume: paused at about step 20 of 100, the
// job is asked for a checkpoint, rank 0 writes one with torch.save inside
// the grace period, and only then do the pods go. Resumed, every rank loads
// it and trains on from the step after it, the loss where it was; the
// accounting records the interruption and what it lost.
func TestRealNodeCheckpointPauseResume(t *testing.T) {
	f := onRealNode(t, "real-ckpt-pause")
	checkpointClaim(f)
	// The run goes on for 40 s past step 20, far longer than the grace: the
	// status shows a step up to 5 s late (the progress write interval), and a
	// pause that comes late on a loaded machine must still find rank 0
	// training.
	applyJob(f, ddpCheckpointJob("ckpt", 20).Env("STEPS", "100").Env("STEP_SECONDS", "0.5"))
	ref := f.Ref(framework.KindPyTorch, "ckpt")
	waitForStep(f, ref, 20)
	firstRun := stepLosses(rank0Log(f, ref), 0)
	paused := time.Now()
	f.MustAction(ref, "pause", "")
	job := f.WaitForPhase(ref, v1beta1.JobPaused)
	t.Logf("paused %s after the request", time.Since(paused).Round(100*time.Millisecond))
	st := job.JobStatus()
	if st.Checkpoint == nil || st.Checkpoint.Latest == nil || st.Checkpoint.Latest.Step == nil {
		t.Fatalf("status.checkpoint %+v: want the checkpoint written for the pause", st.Checkpoint)
	}
	latest := st.Checkpoint.Latest
	step := *latest.Step
	if step < 20 || latest.Reporter != ref.Name+"-node-0" || !strings.HasPrefix(latest.Path, "/ckpt/step-") || ptr.Deref(latest.SizeBytes, 0) == 0 {
		t.Errorf("latest checkpoint %+v: want step >= 20 from rank 0's pod, a file under /ckpt with its size", latest)
	}
	msg := eventMessage(f, ref, "CheckpointWritten")
	if m := writtenAfter.FindStringSubmatch(msg); m == nil {
		t.Errorf("no CheckpointWritten event with the wait (got %q)", msg)
	} else {
		t.Logf("the stop waited %ss for its checkpoint (step %d)", m[1], step)
	}
	a := st.Accounting
	if a == nil || a.Interruptions != 1 || len(a.Recent) != 1 {
		t.Fatalf("status.accounting %+v: want one interruption", a)
	}
	in := a.Recent[0]
	if in.Reason != "Pause" || in.Replicas != 2 || !ptr.Deref(in.CheckpointAnswered, false) || ptr.Deref(in.ResumeStep, -1) != step || in.LostSeconds > 3 {
		t.Errorf("interruption %+v: want a pause of 2 replicas, answered, resuming at %d, next to no time lost", in, step)
	}
	t.Logf("interruption: lost %ds (%d replica-seconds, %d steps); accounting: starting %ds, running %ds",
		in.LostSeconds, in.LostReplicaSeconds, ptr.Deref(in.LostSteps, -1), a.StartingSeconds, a.RunningSeconds)

	f.MustAction(ref, "resume", "")
	waitSucceeded(f, ref)
	checkResumedFrom(t, f, ref, step, firstRun[1])
	if out := f.KubectlTraining("status", ref.KubectlName()); out.Err != nil || !strings.Contains(out.Stdout, "Interruptions:") {
		t.Errorf("kubectl training status shows no accounting: %s", out)
	}
}

// ctrKill sends SIGKILL to a pod's training container (pytorch) through
// its real node's containerd: the process dies as the kernel would kill it,
// exit 137.
func ctrKill(f *framework.Framework, pod *corev1.Pod) {
	f.T.Helper()
	ctrKillContainer(f, pod, "pytorch")
}

// ctrKillContainer is ctrKill of the named container.
func ctrKillContainer(f *framework.Framework, pod *corev1.Pod, container string) {
	f.T.Helper()
	id := ""
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == container {
			id = cs.ContainerID
		}
	}
	if id == "" {
		f.T.Fatalf("pod %s has no running container", pod.Name)
	}
	ctr := filepath.Join(f.Env.RepoRoot, "_output", "bin", "ctr")
	if err := localcluster.SignalContainer(f.Context(), ctr, f.Env.LocalDir, pod.Spec.NodeName, id, "SIGKILL"); err != nil {
		f.T.Fatal(err)
	}
}

// TestRealNodeCheckpointRestartJob: a replica killed with SIGKILL under a
// RestartJob rule restarts the whole job, which resumes from its last
// periodic checkpoint, not from step 1.
func TestRealNodeCheckpointRestartJob(t *testing.T) {
	f := onRealNode(t, "real-ckpt-kill")
	checkpointClaim(f)
	applyJob(f, ddpCheckpointJob("ckpt", 10).Env("STEPS", "40").Env("STEP_SECONDS", "0.5").Env("CHECKPOINT_EVERY", "5").
		BackoffLimit(2).
		FailurePolicy(v1beta1.FailurePolicyRule{Action: v1beta1.FailurePolicyActionRestartJob,
			OnExitCodes: &v1beta1.FailurePolicyOnExitCodes{Operator: v1beta1.FailurePolicyOnExitCodesOpIn, Values: []int32{137}}}))
	ref := f.Ref(framework.KindPyTorch, "ckpt")
	waitForStep(f, ref, 17)
	firstRun := stepLosses(rank0Log(f, ref), 0)
	var worker *corev1.Pod
	for _, p := range f.Pods(ref) {
		if p.Name == ref.Name+"-node-1" {
			worker = p.DeepCopy()
		}
	}
	if worker == nil {
		t.Fatal("no pod node-1")
	}
	ctrKill(f, worker)
	waitSucceeded(f, ref)
	job := f.MustGetJob(ref)
	st := job.JobStatus()
	if st.BackoffCount != 1 {
		t.Errorf("backoffCount %d, want the RestartJob counted once", st.BackoffCount)
	}
	a := st.Accounting
	if a == nil || a.Interruptions < 1 || a.Recent[0].Reason != "RestartJob" || a.Recent[0].ResumeStep == nil {
		t.Fatalf("status.accounting %+v: want a RestartJob interruption with a checkpoint to resume from", a)
	}
	in := a.Recent[0]
	resume := *in.ResumeStep
	if resume < 15 || resume%5 != 0 && !ptr.Deref(in.CheckpointAnswered, false) {
		t.Errorf("resumed from step %d, want the last periodic checkpoint (a multiple of 5, at least 15) or one written when asked", resume)
	}
	t.Logf("RestartJob: resumed from step %d; lost %ds (%d replica-seconds, %d steps), checkpoint answered %v",
		resume, in.LostSeconds, in.LostReplicaSeconds, ptr.Deref(in.LostSteps, -1), ptr.Deref(in.CheckpointAnswered, false))
	checkResumedFrom(t, f, ref, resume, firstRun[1])
	// The resumed run goes on saving every 5 steps, each checkpoint
	// accepted: its steps follow the latest.
	saved := savedLine.FindAllStringSubmatch(rank0Log(f, ref), -1)
	if len(saved) == 0 {
		t.Errorf("the resumed rank 0 saved no checkpoint")
	}
	for _, m := range saved {
		if m[3] != "every" || m[4] != "yes" {
			t.Errorf("rank 0 logged %q, want periodic checkpoints, each reported", m[0])
		}
	}
}

// stallDeadline is the stalling job's progress deadline. It counts from the
// moment every replica runs, so it also bounds the time from there to the
// first report: importing torch and the rendezvous took more than 35 s in
// CI, on 2 cores with the install lane's stack and real node beside this
// one, and the job then stalled before its first step.
const stallDeadline = 90 * time.Second

// stallingJob is the DDP example, checkpointing every 5 steps, that hangs
// before step 10 with its pods running, under a progress deadline of
// stallDeadline.
func stallingJob(policy v1beta1.StallPolicy) *framework.JobBuilder {
	return ddpCheckpointJob("stall", 5).
		Env("STEPS", "20").Env("STEP_SECONDS", "0.5").Env("CHECKPOINT_EVERY", "5").Env("HANG_AT_STEP", "10").
		BackoffLimit(2).ProgressDeadline(int64(stallDeadline.Seconds())).StallPolicy(policy)
}

// lastStepBeforeHang: the example reports at most once a second, so the
// last stored step before the hang at 10 is 8 or 9.
var lastStepBeforeHang = regexp.MustCompile(`step [89]\b`)

// waitStalled waits for the Stalled condition and returns the job and how
// long after the last step moved the watch saw it.
func waitStalled(f *framework.Framework, ref framework.JobRef) (v1beta1.TrainingJob, time.Duration) {
	f.T.Helper()
	job := f.WaitForJob(ref, "Stalled", realNodeTimeout, func(job v1beta1.TrainingJob) (bool, error) {
		c := framework.Condition(job, v1beta1.ConditionStalled)
		return c != nil && c.Status == metav1.ConditionTrue, nil
	})
	seen := time.Now()
	p := job.JobStatus().Progress
	if p == nil || p.AdvanceTime == nil {
		f.T.Fatalf("a stalled job without a progress advance time: %+v", p)
	}
	// Seen on the watch: the condition's own time has whole seconds only.
	return job, seen.Sub(p.AdvanceTime.Time)
}

// TestRealNodeStallRestart: a job whose ranks hang at step 10 with their
// pods running is Stalled within its deadline plus 10 s, restarted,
// and resumes from its checkpoint of step 5 to succeed; the hang's log
// lines are kept in status.stall.
func TestRealNodeStallRestart(t *testing.T) {
	f := onRealNode(t, "real-stall-restart")
	checkpointClaim(f)
	applyJob(f, stallingJob(v1beta1.StallPolicyRestart))
	ref := f.Ref(framework.KindPyTorch, "stall")
	job, latency := waitStalled(f, ref)
	t.Logf("Stalled %s after the last step moved (deadline %s)", latency.Round(100*time.Millisecond), stallDeadline)
	if latency > stallDeadline+10*time.Second || latency < stallDeadline {
		t.Errorf("Stalled came %s after the last advance, want between %s and %s", latency, stallDeadline, stallDeadline+10*time.Second)
	}
	if c := framework.Condition(job, v1beta1.ConditionStalled); !lastStepBeforeHang.MatchString(c.Message) || !strings.Contains(c.Message, ref.Name+"-node-0") {
		t.Errorf("Stalled says %q, want the last step reported before the hang (8 or 9) and its reporter", c.Message)
	}
	waitSucceeded(f, ref)
	job = f.MustGetJob(ref)
	st := job.JobStatus()
	if st.BackoffCount != 1 || st.Stall == nil || !stallLogsShow(st.Stall, "hanging before step=10") {
		t.Errorf("backoffCount %d, stall %+v: want one restart and the hang in the kept log lines", st.BackoffCount, st.Stall)
	}
	in := st.Accounting.Recent[0]
	if in.Reason != "Stalled" || ptr.Deref(in.ResumeStep, -1) != 5 {
		t.Errorf("interruption %+v: want a Stalled one resuming at step 5", in)
	}
	t.Logf("stall restart: lost %ds (%d replica-seconds, %d steps)", in.LostSeconds, in.LostReplicaSeconds, ptr.Deref(in.LostSteps, -1))
	checkResumedFrom(t, f, ref, 5, 0)
}

// TestRealNodeStallFail: under stallPolicy Fail, the hung job fails with
// reason Stalled, the last log lines of each replica in its status.
func TestRealNodeStallFail(t *testing.T) {
	f := onRealNode(t, "real-stall-fail")
	checkpointClaim(f)
	applyJob(f, stallingJob(v1beta1.StallPolicyFail))
	ref := f.Ref(framework.KindPyTorch, "stall")
	// The start, the steps before the hang and stallDeadline: longer than
	// framework.Timeout on a loaded machine.
	job := f.WaitForJob(ref, "phase Failed", realNodeTimeout, func(job v1beta1.TrainingJob) (bool, error) {
		return job.JobStatus().Phase == v1beta1.JobFailed, nil
	})
	failed := framework.Condition(job, v1beta1.ConditionFailed)
	if failed == nil || failed.Reason != "Stalled" || !lastStepBeforeHang.MatchString(failed.Message) {
		t.Errorf("Failed condition %+v, want reason Stalled naming the last step before the hang", failed)
	}
	st := job.JobStatus()
	if st.Stall == nil || len(st.Stall.Logs) != 2 || !stallLogsShow(st.Stall, "hanging before step=10") {
		t.Errorf("status.stall %+v: want both replicas' last lines, showing the hang", st.Stall)
	}
	describe := f.MustKubectl("describe", ref.KubectlName())
	if !strings.Contains(describe, "hanging before step=10") {
		t.Errorf("kubectl describe does not show the kept log lines:\n%s", describe)
	}
}

func stallLogsShow(st *v1beta1.StallStatus, text string) bool {
	for _, l := range st.Logs {
		if strings.Contains(l.Lines, text) {
			return true
		}
	}
	return false
}

// TestRealNodeCheckpointKueuePreemption: a checkpointing job in a Kueue
// queue of one CPU is preempted by a job of higher priority. It writes a
// checkpoint inside its grace period before its pods go, and resumes from
// it once Kueue admits it again.
func TestRealNodeCheckpointKueuePreemption(t *testing.T) {
	f := onRealNode(t, "real-ckpt-preempt")
	needsKueue(t, f)
	// A flavor without node labels: the pods go where the scheduler puts
	// them, the real node for the training image.
	f.NewKueueQueueWithQuota(&kueuev1beta2.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: f.Namespace}},
		corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("8Gi")}, "lq")
	checkpointClaim(f)
	// As in TestRealNodeCheckpointPauseResume, the run outlasts the grace by
	// far after the step the preemption waits for.
	applyJob(f, ddpCheckpointJob("low", 20).Env("STEPS", "100").Env("STEP_SECONDS", "0.5").Gang("lq", 10))
	low := f.Ref(framework.KindPyTorch, "low")
	waitForStep(f, low, 10)
	firstRun := stepLosses(rank0Log(f, low), 0)
	applyJob(f, framework.NewPyTorchJob("high").WithReplicas("master", 1).Gang("lq", 90).
		Image(framework.TrainingImage).Command("sh", "-c", "sleep 5").Requests("800m", "64Mi"))
	high := f.Ref(framework.KindPyTorch, "high")
	job := f.WaitForJob(low, "the low-priority job preempted and paused", realNodeTimeout, func(job v1beta1.TrainingJob) (bool, error) {
		return job.JobStatus().Phase == v1beta1.JobPaused && queuedReason(job) == "Preempted", nil
	})
	st := job.JobStatus()
	if st.Checkpoint == nil || st.Checkpoint.Latest == nil || ptr.Deref(st.Checkpoint.Latest.Step, 0) < 10 {
		t.Fatalf("status.checkpoint %+v: want a checkpoint of step 10 or later, written for the preemption", st.Checkpoint)
	}
	step := *st.Checkpoint.Latest.Step
	in := st.Accounting.Recent[0]
	if in.Reason != "Evicted" || !ptr.Deref(in.CheckpointAnswered, false) || ptr.Deref(in.ResumeStep, -1) != step {
		t.Errorf("interruption %+v: want an eviction answered with the checkpoint of step %d", in, step)
	}
	if m := writtenAfter.FindStringSubmatch(eventMessage(f, low, "CheckpointWritten")); m != nil {
		t.Logf("preemption: the stop waited %ss for the checkpoint of step %d; lost %ds (%d replica-seconds)", m[1], step, in.LostSeconds, in.LostReplicaSeconds)
	}
	checkSucceeded(t, f.WaitForPhase(high, v1beta1.JobSucceeded))
	waitSucceeded(f, low)
	checkResumedFrom(t, f, low, step, firstRun[1])
}
