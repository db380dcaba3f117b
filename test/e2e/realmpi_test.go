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
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"

	"tensorstack.dev/training/test/e2e/framework"
)

var mpiRankLine = regexp.MustCompile(`rank=(\d) size=2 host=(\S+) sum=3`)

// TestRealNodesMPIAllReduce: the MPI example runs for real on the two real
// nodes: mpirun on the launcher reaches both workers over SSH with the
// job's key pair and hostfile, one rank on each node (the example keeps
// its workers apart); mpi4py's allreduce
// gives both the right sum, and the ranks' output reaches the launcher's
// log, which kubectl training logs shows.
func TestRealNodesMPIAllReduce(t *testing.T) {
	f := onRealNodes(t, "real-mpi", 2)
	applyExample(f, "mpi.yaml")
	ref := f.Ref(framework.KindMPI, "mpi-allreduce")
	workers := f.WaitForPods(ref, "both workers placed", realNodeTimeout, func(pods []corev1.Pod) (bool, error) {
		placed := 0
		for _, p := range pods {
			if strings.Contains(p.Name, "-worker-") && p.Spec.NodeName != "" {
				placed++
			}
		}
		return placed == 2, nil
	})
	nodes := map[string]bool{}
	for _, p := range workers {
		if strings.Contains(p.Name, "-worker-") {
			nodes[p.Spec.NodeName] = true
		}
	}
	if len(nodes) != 2 {
		t.Errorf("the workers are on %v, want two nodes", nodes)
	}
	checkOnRealNode(t, workers)
	waitSucceeded(f, ref)

	r := f.KubectlTraining("logs", ref.KubectlName())
	if r.Err != nil {
		t.Fatalf("kubectl training logs: %s", r)
	}
	hosts := map[string]string{}
	for _, m := range mpiRankLine.FindAllStringSubmatch(r.Stdout, -1) {
		hosts[m[1]] = m[2]
	}
	if len(hosts) != 2 {
		t.Fatalf("ranks that reported the sum 3 of 2: %v, want 0 and 1:\n%s", hosts, r.Stdout)
	}
	if hosts["0"] == hosts["1"] {
		t.Errorf("both ranks ran on %s, want one per worker", hosts["0"])
	}
	for _, want := range []string{"rank=0 round=5 mean=0.500", "rank=1 round=5 mean=0.500"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("the launcher's log lacks %q:\n%s", want, r.Stdout)
		}
	}
	// The training image's Open MPI is bookworm's 4.1; TestRealNodesMPI5AllReduce runs 5.
	for _, m := range mpiLibraryLine.FindAllStringSubmatch(r.Stdout, -1) {
		if !strings.HasPrefix(m[2], "Open MPI v4.") {
			t.Errorf("rank %s runs %q, want Open MPI v4", m[1], m[2])
		}
	}
	t.Logf("ranks on %v; the workers on %v", hosts, nodes)
}

// TestRealNodesMPIWorkerKilled: a worker of the MPI example, killed with
// SIGKILL while the ranks average, takes its rank with it and mpirun fails;
// the job's RestartJob rules (exit code 137, or the launcher failing)
// restart every replica, with the same key pair, and the second mpirun
// runs to success. The restart is counted once.
func TestRealNodesMPIWorkerKilled(t *testing.T) {
	f := onRealNodes(t, "real-mpi-kill", 2)
	data, err := os.ReadFile(filepath.Join(f.Env.RepoRoot, "artifacts", "examples", "mpi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	job := &v1beta1.MPIJob{}
	if err := yaml.Unmarshal(data, job); err != nil {
		t.Fatal(err)
	}
	job.Name, job.Namespace = "mpi-killed", f.Namespace
	for i := range job.Spec.ReplicaSpecs {
		spec := &job.Spec.ReplicaSpecs[i]
		spec.Template.Spec.Containers[0].Env = append(spec.Template.Spec.Containers[0].Env,
			corev1.EnvVar{Name: "ROUNDS", Value: "20"}, corev1.EnvVar{Name: "ROUND_SECONDS", Value: "1"})
		if a := spec.Template.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
			a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchLabels[v1beta1.LabelJobName] = job.Name
		}
	}
	// mpirun forwards the launcher's environment to the ranks it starts.
	job.Spec.ReplicaSpecs[0].Template.Spec.Containers[0].Command = []string{"mpirun", "--allow-run-as-root", "-np", "2",
		"-x", "ROUNDS", "-x", "ROUND_SECONDS", "python3", "/opt/tensorstack/examples/mpi_allreduce.py"}
	// A worker killed restarts the job, and so does the launcher's mpirun
	// failing when it loses the worker's rank, whichever the controller
	// sees first: one restart either way.
	job.Spec.ReplicaSpecs[0].RestartPolicy = v1beta1.RestartPolicyNever
	job.Spec.RunPolicy.FailurePolicy = &v1beta1.FailurePolicy{Rules: []v1beta1.FailurePolicyRule{{
		Action:      v1beta1.FailurePolicyActionRestartJob,
		OnExitCodes: &v1beta1.FailurePolicyOnExitCodes{Operator: v1beta1.FailurePolicyOnExitCodesOpIn, Values: []int32{137}},
	}, {
		Action:       v1beta1.FailurePolicyActionRestartJob,
		ReplicaTypes: []v1beta1.ReplicaType{v1beta1.ReplicaTypeLauncher},
		OnExitCodes:  &v1beta1.FailurePolicyOnExitCodes{Operator: v1beta1.FailurePolicyOnExitCodesOpNotIn, Values: []int32{0}},
	}}}
	if err := f.CreateJob(f.Context(), job); err != nil {
		t.Fatal(err)
	}
	ref := f.Ref(framework.KindMPI, job.Name)
	var secret *corev1.Secret
	f.Eventually(framework.Timeout, "the job's key pair", func(ctx context.Context) (bool, error) {
		s, err := f.Kube.CoreV1().Secrets(f.Namespace).Get(ctx, podbuilder.SSHSecretName(f.MustGetJob(ref)), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		secret = s
		return err == nil, err
	})

	// Kill worker 1 once the ranks average.
	var victim *corev1.Pod
	f.WaitForPods(ref, "the ranks averaging", realNodeTimeout, func(pods []corev1.Pod) (bool, error) {
		for _, p := range pods {
			if p.Name == ref.Name+"-launcher-0" && p.Status.Phase == corev1.PodRunning {
				data, err := f.Kube.CoreV1().Pods(f.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(f.Context())
				if err != nil || !strings.Contains(string(data), "rank=1 round=2") {
					return false, nil
				}
				for i := range pods {
					if pods[i].Name == ref.Name+"-worker-1" {
						victim = pods[i].DeepCopy()
					}
				}
				return victim != nil, nil
			}
		}
		return false, nil
	})
	ctrKillContainer(f, victim, "mpi")
	waitSucceeded(f, ref)

	st := f.MustGetJob(ref).JobStatus()
	if st.BackoffCount != 1 || len(st.Attempts) != 2 {
		t.Errorf("backoffCount %d and %d attempts, want the RestartJob counted once and two attempts", st.BackoffCount, len(st.Attempts))
	} else {
		first := st.Attempts[0]
		var failed []string
		for _, r := range first.FailedReplicas {
			failed = append(failed, fmt.Sprintf("%s:%d", r.Name, ptr.Deref(r.ExitCode, -1)))
		}
		if first.Reason != "RestartJob" || len(failed) == 0 {
			t.Errorf("attempt 1 ended by %q with failed replicas %v, want RestartJob naming the killed worker or the launcher",
				first.Reason, failed)
		}
		t.Logf("attempt 1 ended by %s; failed replicas %v", first.Reason, failed)
	}
	after, err := f.Kube.CoreV1().Secrets(f.Namespace).Get(f.Context(), secret.Name, metav1.GetOptions{})
	if err != nil || after.UID != secret.UID {
		t.Errorf("the key pair after the restart: %v, uid %v; want the first one (%s) kept", err, after, secret.UID)
	}
	r := f.KubectlTraining("logs", ref.KubectlName())
	if r.Err != nil {
		t.Fatalf("kubectl training logs: %s", r)
	}
	for _, want := range []string{"rank=0 round=20", "rank=1 round=20"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("the second mpirun's log lacks %q:\n%s", want, r.Stdout)
		}
	}
}

// mpiCheckpointJob is an MPI job of a launcher and two workers on one real
// node, which hosts their checkpoint claim (ReadWriteOnce), running the
// MPI example for rounds of half a second. Its stops wait mpiStopGrace for
// a checkpoint.
func mpiCheckpointJob(f *framework.Framework, name string, rounds int) *framework.JobBuilder {
	node := realNodeNames(f.T, f)[0]
	return framework.NewMPIJob(name).WithReplicas("launcher", 1).WithReplicas("worker", 2).
		Image(framework.TrainingImage).Env("ROUNDS", fmt.Sprint(rounds)).Env("ROUND_SECONDS", "0.5").
		// TENSORSTACK_MPI_EXPORTS passes the job's variables to the ranks.
		ReplicaCommand("launcher", "sh", "-c", "exec mpirun --allow-run-as-root -np 2 -x ROUNDS -x ROUND_SECONDS "+
			"$TENSORSTACK_MPI_EXPORTS python3 /opt/tensorstack/examples/mpi_allreduce.py").
		ReplicaCommand("worker", "sh", "-c", "ssh-keygen -A >/dev/null && mkdir -p /run/sshd && exec /usr/sbin/sshd -De").
		Requests("100m", "128Mi").MemoryLimit("1Gi").NodeSelector(corev1.LabelHostname, node).
		ClaimVolume("ckpt", "ckpt", "/ckpt").CheckpointVolume("ckpt", int32(mpiStopGrace/time.Second)).CleanUp(v1beta1.CleanUpPolicyNone).
		// A stop may wait no longer for a checkpoint than its pods may take to end.
		GracePeriod(int64(mpiStopGrace / time.Second))
}

// mpiStopGrace is how long the MPI job's stops wait for a checkpoint: on
// an idle machine the checkpoint comes within a second; CI's loaded one has
// taken over 30 s. A longer grace costs nothing when the checkpoint comes.
const mpiStopGrace = 90 * time.Second

// mpiPauseRounds are the rounds TestRealNodeMPIPauseResume starts with: more
// than the run could reach before its pause ends however late that comes
// (the test pauses at round 10, which the status shows up to 5 s late, and
// the stop may wait mpiStopGrace). The test cuts the run short while the
// job is paused, to mpiRoundsAfterResume rounds after the checkpoint.
const (
	mpiPauseRounds       = 1000
	mpiRoundsAfterResume = 10
)

var mpiResumedLine = regexp.MustCompile(`rank=(\d) resumed from step=(\d+) path=(\S+)`)

// TestRealNodeMPIPauseResume: an MPI job with the checkpoint contract,
// paused at about round 10: the job asks for a checkpoint, rank 0 (a rank
// mpirun started on a worker, which knows the job only through the
// variables the launcher's mpirun passes on, $TENSORSTACK_MPI_EXPORTS)
// writes and reports it, and only then do the pods go. While paused, the
// job's ROUNDS is lowered, as a pod template may change then; resumed,
// both ranks take the checkpoint and go on at the round after it, to the
// new last round.
func TestRealNodeMPIPauseResume(t *testing.T) {
	f := onRealNode(t, "real-mpi-pause")
	checkpointClaim(f)
	applyJob(f, mpiCheckpointJob(f, "mpi-ckpt", mpiPauseRounds))
	ref := f.Ref(framework.KindMPI, "mpi-ckpt")
	waitForStep(f, ref, 10)
	// What the ranks printed and when worker 0's pod (rank 0's) saw the
	// request, for a pause that finds no checkpoint: the pods are gone then.
	launcherLog := f.StartKubectl(realNodeTimeout, "logs", "--follow", "--timestamps", ref.Name+"-launcher-0")
	requestSeen := f.StartKubectl(realNodeTimeout, "exec", ref.Name+"-worker-0", "--", "sh", "-c",
		`while :; do echo "$(date -u +%T.%N) [$(cat "$`+v1beta1.EnvCheckpointRequestFile+`")]"; sleep 0.5; done`)
	f.MustAction(ref, "pause", "")
	job := f.WaitForJob(ref, "phase Paused", framework.Timeout+mpiStopGrace, func(job v1beta1.TrainingJob) (bool, error) {
		if got := job.JobStatus().Phase; got.IsFinished() {
			return false, framework.Stop("the job finished with phase %s before the pause took effect", got)
		}
		return job.JobStatus().Phase == v1beta1.JobPaused, nil
	})
	st := job.JobStatus()
	if st.Checkpoint == nil || st.Checkpoint.Latest == nil || st.Checkpoint.Latest.Step == nil {
		ranks := launcherLog.Stdout()
		// CI shows a failure's last lines: the short story goes last.
		t.Fatalf("status.checkpoint %+v: want the checkpoint written for the pause\n%s\n"+
			"---- the launcher's log (the ranks' output), its last lines:\n%s\n"+
			"---- worker 0's request file, where it changed:\n%s\n"+
			"---- the ranks on checkpoints and reports:\n%s\n"+
			"---- the ranks' last lines:\n%s", st.Checkpoint, f.DumpJob(ref), tail(ranks, 80),
			changedLines(requestSeen.Stdout()), linesWith(ranks, "checkpoint", "not reported"), tail(ranks, 3))
	}
	launcherLog.Stop()
	requestSeen.Stop()
	t.Logf("worker 0's request file, where it changed:\n%s", changedLines(requestSeen.Stdout()))
	latest := st.Checkpoint.Latest
	step := *latest.Step
	if step < 10 || latest.Reporter != ref.Name+"-worker-0" || !strings.HasPrefix(latest.Path, "/ckpt/round-") {
		t.Errorf("latest checkpoint %+v: want round >= 10 reported from worker 0's pod (rank 0), a file under /ckpt", latest)
	}

	last := step + mpiRoundsAfterResume
	f.UpdateJob(ref, func(job v1beta1.TrainingJob) {
		if setEnv(job, "ROUNDS", fmt.Sprint(last)) == 0 {
			t.Fatal("no container of the job has ROUNDS")
		}
	})
	f.MustAction(ref, "resume", "")
	waitSucceeded(f, ref)
	r := f.KubectlTraining("logs", ref.KubectlName())
	if r.Err != nil {
		t.Fatalf("kubectl training logs: %s", r)
	}
	resumed := map[string]string{}
	for _, m := range mpiResumedLine.FindAllStringSubmatch(r.Stdout, -1) {
		resumed[m[1]] = m[2]
	}
	want := fmt.Sprint(step)
	if resumed["0"] != want || resumed["1"] != want {
		t.Errorf("ranks resumed from %v, want both from round %s:\n%s", resumed, want, r.Stdout)
	}
	for _, line := range []string{fmt.Sprintf("rank=0 round=%d ", step+1), fmt.Sprintf("rank=1 round=%d ", step+1),
		fmt.Sprintf("rank=0 round=%d mean=0.500", last), fmt.Sprintf("rank=1 round=%d mean=0.500", last)} {
		if !strings.Contains(r.Stdout, line) {
			t.Errorf("the resumed run's log lacks %q:\n%s", line, r.Stdout)
		}
	}
	for _, line := range []string{"rank=0 round=1 ", fmt.Sprintf("rank=0 round=%d ", last+1)} {
		if strings.Contains(r.Stdout, line) {
			t.Errorf("the resumed run's log has %q: want rounds %d to %d only:\n%s", line, step+1, last, r.Stdout)
		}
	}
	t.Logf("paused at round %d (checkpoint %s, %s), resumed there with ROUNDS=%d, ran to round %d", step, latest.Path,
		eventMessage(f, ref, "CheckpointWritten"), last, last)
}

// setEnv sets a variable in every container of the job's templates that
// has it, and says in how many.
func setEnv(job v1beta1.TrainingJob, name, value string) int {
	set := 0
	specs := job.CommonSpec().ReplicaSpecs
	for i := range specs {
		containers := specs[i].Template.Spec.Containers
		for j := range containers {
			for k := range containers[j].Env {
				if containers[j].Env[k].Name == name {
					containers[j].Env[k].Value = value
					set++
				}
			}
		}
	}
	return set
}

// changedLines keeps the lines of a "TIME VALUE" log where the value differs
// from the line before, and the last line.
func changedLines(text string) string {
	var kept []string
	last := ""
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, line := range lines {
		_, value, _ := strings.Cut(line, " ")
		if i == 0 || value != last || i == len(lines)-1 {
			kept = append(kept, line)
		}
		last = value
	}
	return strings.Join(kept, "\n")
}

// linesWith keeps the lines of text that hold any of the words.
func linesWith(text string, words ...string) string {
	var kept []string
	for _, line := range strings.Split(text, "\n") {
		for _, w := range words {
			if strings.Contains(line, w) {
				kept = append(kept, line)
				break
			}
		}
	}
	return strings.Join(kept, "\n")
}
