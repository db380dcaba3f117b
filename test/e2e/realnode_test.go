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
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/internal/localcluster"
	"tensorstack.dev/training/internal/skips"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// The tests of this file run real containers on the stack's real node
// (internal/localcluster), one at a time: each node has two CPUs, and the gang
// test counts on having it to itself.
var realNode sync.Mutex

// realNodeTimeout bounds a real job: image already on the node, Python and
// PyTorch starting in each container.
const realNodeTimeout = 5 * time.Minute

// onRealNode skips the test on a stack without the real node (fails it under
// CI=true or REQUIRE_REAL_NODES=1) and keeps the other real-node tests out
// until it ends.
func onRealNode(t *testing.T, prefix string) *framework.Framework {
	t.Helper()
	t.Parallel()
	f := framework.New(t, prefix)
	if !f.Env.RealNode {
		why := localcluster.WhyNoRealNodes(os.Getenv)
		if why == "" {
			why = "they were not built or did not start; local-up's output says why"
		}
		skips.Test(t, "test-e2e", "the stack runs no real node: "+why, skips.RequireRealNodes)
	}
	waiting := time.Now()
	realNode.Lock()
	t.Cleanup(realNode.Unlock)
	// The line's time in go test -json's events is when the test had the real nodes; the test's own time is from
	// there to its end.
	t.Logf("on the real nodes after %s waiting for them", time.Since(waiting).Round(time.Second))
	return f
}

// applyJob applies the built job with kubectl in the test's namespace, as
// a user creates one.
func applyJob(f *framework.Framework, b *framework.JobBuilder) {
	f.T.Helper()
	if r := f.KubectlInput(b.Manifest(f.Namespace), "apply", "-f", "-"); r.Err != nil {
		f.T.Fatalf("kubectl apply: %s", r)
	}
}

// podLog returns the training container's log of a pod: its only
// container, or the one kubectl picks (a pod that restarts in place has
// the agent beside it).
func podLog(f *framework.Framework, pod string) string {
	f.T.Helper()
	opts := &corev1.PodLogOptions{}
	if p, err := f.Kube.CoreV1().Pods(f.Namespace).Get(f.Context(), pod, metav1.GetOptions{}); err == nil {
		opts.Container = p.Annotations["kubectl.kubernetes.io/default-container"]
	}
	data, err := f.Kube.CoreV1().Pods(f.Namespace).GetLogs(pod, opts).DoRaw(f.Context())
	if err != nil {
		f.T.Fatalf("logs of pod %s: %v", pod, err)
	}
	return string(data)
}

// waitSucceeded waits until the job succeeded, and stops at once when it
// failed.
func waitSucceeded(f *framework.Framework, ref framework.JobRef) {
	f.T.Helper()
	f.WaitForJob(ref, "Succeeded", realNodeTimeout, func(job v1beta1.TrainingJob) (bool, error) {
		if job.JobStatus().Phase == v1beta1.JobFailed {
			return false, framework.Stop("the job failed: %s", f.DumpJob(ref))
		}
		return job.JobStatus().Phase == v1beta1.JobSucceeded, nil
	})
}

// waitPodsSucceeded waits until the job has n pods and each has exited 0:
// a job may succeed with some replicas while the others still run or even
// start. The jobs that use it keep their pods (cleanUpPolicy None) so that
// every log can be read.
func waitPodsSucceeded(f *framework.Framework, ref framework.JobRef, n int) []corev1.Pod {
	f.T.Helper()
	return f.WaitForPods(ref, "every pod succeeded", realNodeTimeout, func(pods []corev1.Pod) (bool, error) {
		for _, p := range pods {
			switch p.Status.Phase {
			case corev1.PodSucceeded:
			case corev1.PodFailed:
				return false, framework.Stop("pod %s failed:\n%s", p.Name, podLog(f, p.Name))
			default:
				return false, nil
			}
		}
		return len(pods) == n, nil
	})
}

// waitStarted waits until the job's one pod runs its container, and
// returns the pods.
func waitStarted(f *framework.Framework, ref framework.JobRef) []corev1.Pod {
	f.T.Helper()
	return f.WaitForPods(ref, "the container started", realNodeTimeout, func(pods []corev1.Pod) (bool, error) {
		return len(pods) == 1 && len(pods[0].Status.ContainerStatuses) == 1 && pods[0].Status.ContainerStatuses[0].State.Running != nil, nil
	})
}

// checkOnRealNode fails unless every pod ran on a real node.
func checkOnRealNode(t *testing.T, pods []corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		if !framework.IsRealNode(p.Spec.NodeName) {
			t.Errorf("pod %s ran on %q, want a real node", p.Name, p.Spec.NodeName)
		}
	}
}

var stepLine = regexp.MustCompile(`rank=(\d+) step=(\d+) loss=([0-9.]+)`)

// TestRealNodeTorchrunDDP: the DDP example trains for real. Both ranks join
// through the headless Service's DNS, run the same number of steps, the
// loss falls, and the job succeeds; kubectl training logs --all-replicas
// shows every rank's steps. Rank 0 reports the job's progress from inside
// its pod (checkDDPProgress). The example names no rendezvous, so the ranks
// meet through the static one, each told its node rank.
func TestRealNodeTorchrunDDP(t *testing.T) {
	f := onRealNode(t, "real-ddp")
	applyExample(f, "pytorch-ddp.yaml")
	ref := f.Ref(framework.KindPyTorch, "pytorch-ddp")
	checkDDPProgress(t, f, ref, followProgress(t, f, ref))
	pods := f.Pods(ref)
	if len(pods) != 2 {
		t.Fatalf("%d pods, want 2", len(pods))
	}
	checkOnRealNode(t, pods)
	checkStaticRendezvous(t, ref, pods)

	steps := map[int][]float64{}
	for _, p := range pods {
		out := podLog(f, p.Name)
		if !strings.Contains(out, "world=2") {
			t.Errorf("pod %s: no rank reports a world of 2:\n%s", p.Name, out)
		}
		for _, m := range stepLine.FindAllStringSubmatch(out, -1) {
			rank, _ := strconv.Atoi(m[1])
			loss, _ := strconv.ParseFloat(m[3], 64)
			steps[rank] = append(steps[rank], loss)
		}
	}
	if len(steps) != 2 {
		t.Fatalf("ranks that logged steps: %d, want 2 (0 and 1)", len(steps))
	}
	for rank, losses := range steps {
		if len(losses) != 40 {
			t.Errorf("rank %d logged %d steps, want 40", rank, len(losses))
			continue
		}
		if first, last := losses[0], losses[len(losses)-1]; last >= first/10 {
			t.Errorf("rank %d: loss %g at step 1 and %g at step 40, want it to fall tenfold", rank, first, last)
		}
	}

	r := f.KubectlTraining("logs", ref.KubectlName(), "--all-replicas")
	if r.Err != nil {
		t.Fatalf("kubectl training logs --all-replicas: %s", r)
	}
	out := r.Stdout
	for _, rank := range []string{"rank=0 step=40", "rank=1 step=40"} {
		if !strings.Contains(out, rank) {
			t.Errorf("kubectl training logs --all-replicas lacks %q:\n%s", rank, out)
		}
	}
}

// checkStaticRendezvous checks that each pod of a job of one replica type
// runs torchrun with the static rendezvous, the job's replicas and its own
// index as its node rank.
func checkStaticRendezvous(t *testing.T, ref framework.JobRef, pods []corev1.Pod) {
	t.Helper()
	for i := range pods {
		c := framework.TrainingContainer(ref.Kind, &pods[i])
		command := strings.Join(c.Command, " ")
		for _, opt := range []string{"--rdzv-backend=static", fmt.Sprintf("--nnodes=%d", len(pods)),
			"--node-rank=" + pods[i].Labels[v1beta1.LabelReplicaIndex]} {
			if !strings.Contains(" "+command+" ", " "+opt+" ") {
				t.Errorf("pod %s runs %q, without %s", pods[i].Name, command, opt)
			}
		}
	}
}

// TestRealNodeEnvAllReduce: without torchrun, the processes join through
// MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK (init_method env://), and an
// all_reduce of the ranks is their sum.
func TestRealNodeEnvAllReduce(t *testing.T) {
	f := onRealNode(t, "real-env")
	applyJob(f, framework.NewPyTorchJob("allreduce").WithReplicas("master", 1).WithReplicas("worker", 2).
		Image(framework.TrainingImage).Command("python3", "pytorch_allreduce.py").Requests("100m", "256Mi").
		SuccessPolicy(v1beta1.SuccessPolicyAllWorkers).CleanUp(v1beta1.CleanUpPolicyNone))
	ref := f.Ref(framework.KindPyTorch, "allreduce")
	waitSucceeded(f, ref)
	pods := waitPodsSucceeded(f, ref, 3)
	checkOnRealNode(t, pods)
	for _, p := range pods {
		if out := podLog(f, p.Name); !strings.Contains(out, "world=3 all_reduce=3 want=3") {
			t.Errorf("pod %s did not sum ranks 0+1+2 to 3:\n%s", p.Name, out)
		}
	}
}

// TestRealNodeTFConfig: a chief, two workers, a ps and an evaluator; every
// task reaches every peer its TF_CONFIG names, by DNS name, and the chief
// succeeds.
func TestRealNodeTFConfig(t *testing.T) {
	f := onRealNode(t, "real-tf")
	applyJob(f, framework.NewTFJob("tfconfig").
		WithReplicas("chief", 1).WithReplicas("worker", 2).WithReplicas("ps", 1).WithReplicas("evaluator", 1).
		Image(framework.TrainingImage).Command("python3", "tf_config_check.py").Requests("50m", "64Mi").
		CleanUp(v1beta1.CleanUpPolicyNone))
	ref := f.Ref(framework.KindTF, "tfconfig")
	waitSucceeded(f, ref)
	// The other tasks may still be finishing their handshakes.
	pods := waitPodsSucceeded(f, ref, 5)
	checkOnRealNode(t, pods)
	for _, p := range pods {
		out := podLog(f, p.Name)
		// Four peers each: the evaluator is outside the cluster, so it has
		// the four cluster tasks, and each cluster task the other three.
		want := "reached all 3 peers"
		if strings.Contains(p.Name, "evaluator") {
			want = "reached all 4 peers"
		}
		if !strings.Contains(out, want) {
			t.Errorf("pod %s: want %q in its log:\n%s", p.Name, want, out)
		}
	}
}

// pausableScript runs for 25 s; on SIGTERM it exits 0 at once, saying in its
// termination message how long it had run.
const pausableScript = `trap 'echo "SIGTERM after $(( $(date +%s) - start ))s" > /dev/termination-log; echo got SIGTERM; exit 0' TERM
start=$(date +%s)
echo started; sleep 25 & wait $!
echo finished
`

// TestRealNodePauseResume: a paused job's container gets SIGTERM and exits
// within its grace period; resume starts new containers, and the job then
// succeeds.
func TestRealNodePauseResume(t *testing.T) {
	f := onRealNode(t, "real-pause")
	applyJob(f, framework.NewPyTorchJob("pausable").WithReplicas("master", 1).GracePeriod(20).
		Image(framework.TrainingImage).Command("sh", "-c", pausableScript).Requests("50m", "32Mi"))
	ref := f.Ref(framework.KindPyTorch, "pausable")
	running := waitStarted(f, ref)
	checkOnRealNode(t, running)
	first := running[0]

	// The kubelet's report of the container's end, seen on a watch before
	// the pod is gone.
	ctx := f.ContextWithin(realNodeTimeout)
	watch, err := f.Kube.CoreV1().Pods(f.Namespace).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + first.Name})
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Stop()
	paused := time.Now()
	f.MustAction(ref, "pause", "")
	var ended *corev1.ContainerStateTerminated
	for ev := range watch.ResultChan() {
		if p, ok := ev.Object.(*corev1.Pod); ok && len(p.Status.ContainerStatuses) == 1 {
			if s := p.Status.ContainerStatuses[0].State.Terminated; s != nil {
				ended = s
				break
			}
		}
	}
	if ended == nil {
		t.Fatalf("no terminated state of pod %s seen after pause", first.Name)
	}
	took := time.Since(paused)
	if ended.ExitCode != 0 || !strings.HasPrefix(ended.Message, "SIGTERM after") {
		t.Errorf("container ended with exit code %d, message %q; want 0 and the SIGTERM handler's message", ended.ExitCode, ended.Message)
	}
	if took > 20*time.Second {
		t.Errorf("the container ended %s after the pause, past its grace period of 20s", took.Round(time.Second))
	}
	f.WaitForPhase(ref, v1beta1.JobPaused)
	f.WaitForNoPods(ref, framework.Timeout)

	f.MustAction(ref, "resume", "")
	waitSucceeded(f, ref)
	pods := f.Pods(ref)
	if len(pods) != 1 || pods[0].UID == first.UID {
		t.Fatalf("after resume: %d pods, want one new pod (the first was %s)", len(pods), first.UID)
	}
	if out := podLog(f, pods[0].Name); !strings.Contains(out, "finished") {
		t.Errorf("the resumed container did not run to its end:\n%s", out)
	}
}

// TestRealNodeLogsFollow: kubectl training logs -f streams a running
// container's lines as they are written and ends when the container does.
func TestRealNodeLogsFollow(t *testing.T) {
	f := onRealNode(t, "real-logs")
	applyJob(f, framework.NewPyTorchJob("ticker").WithReplicas("master", 1).Image(framework.TrainingImage).
		Command("sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10; do echo tick $i; sleep 1; done").Requests("50m", "32Mi"))
	ref := f.Ref(framework.KindPyTorch, "ticker")
	waitStarted(f, ref)
	ctx, cancel := context.WithTimeout(f.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(f.Env.RepoRoot, "_output", "bin", "kubectl-training"),
		"--kubeconfig", f.Env.Kubeconfig, "-n", f.Namespace, "logs", ref.KubectlName(), "-f")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Lines arrive one by one, about a second apart, not all at the end.
	var arrivals []time.Time
	var lines []string
	scanner := bufio.NewScanner(stdout)
	for scanner.Scan() {
		lines = append(lines, scanner.Text())
		arrivals = append(arrivals, time.Now())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("kubectl training logs -f: %v (lines %q)", err, lines)
	}
	if len(lines) == 0 || lines[len(lines)-1] != "tick 10" {
		t.Fatalf("followed lines %q, want them to end with tick 10", lines)
	}
	if spread := arrivals[len(arrivals)-1].Sub(arrivals[0]); len(lines) < 3 || spread < 2*time.Second {
		t.Errorf("%d lines within %s: want them streamed as the container wrote them", len(lines), spread)
	}
}

// TestRealNodeGang: the real node has room for one gang of two pods (two
// CPUs; 600m each: two fit, a third would fit alone but a fourth not). Of two
// such jobs, one runs and the other has no pod bound until the first ends.
func TestRealNodeGang(t *testing.T) {
	f := onRealNode(t, "real-gang")
	if backend := os.Getenv("E2E_GANG_BACKEND"); backend == "" || backend == "none" {
		t.Skip("the stack runs no gang scheduler")
	}
	// With Kueue, the queue the jobs name admits either of them as a whole,
	// on any node; the gang scheduler alone decides which one waits.
	if f.KueueServed() {
		f.NewKueueQueue(nil, 0, "default")
	}
	// Each job takes more than half of the real nodes' CPU, so the second
	// fits only once the first is done; on two nodes or more, a pod takes
	// more than half a node, so a job's two pods span two nodes.
	cpu := "600m"
	if f.Env.RealNodes >= 2 {
		cpu = "1100m"
	}
	job := func(name, seconds string) *framework.JobBuilder {
		return framework.NewPyTorchJob(name).WithReplicas("worker", 2).Gang("default", 0).
			Image(framework.TrainingImage).Command("sleep", seconds).Requests(cpu, "32Mi").
			SuccessPolicy(v1beta1.SuccessPolicyAllWorkers)
	}
	applyJob(f, job("first", "20"))
	first := f.Ref(framework.KindPyTorch, "first")
	firstPods := f.WaitForPods(first, "both pods of the first job bound", realNodeTimeout, func(pods []corev1.Pod) (bool, error) {
		return len(pods) == 2 && pods[0].Spec.NodeName != "" && pods[1].Spec.NodeName != "", nil
	})
	if f.Env.RealNodes >= 2 {
		if a, b := firstPods[0].Spec.NodeName, firstPods[1].Spec.NodeName; a == b {
			t.Errorf("both pods of the first job on %s: the gang was to span two nodes", a)
		} else {
			t.Logf("the first job's gang spans %s and %s", a, b)
		}
	}
	applyJob(f, job("second", "1"))
	second := f.Ref(framework.KindPyTorch, "second")
	bound := func(pods []corev1.Pod) int {
		n := 0
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				n++
			}
		}
		return n
	}
	for {
		j := f.MustGetJob(first)
		pods := f.Pods(second)
		if n := bound(pods); n > 0 && j.JobStatus().Phase != v1beta1.JobSucceeded {
			t.Fatalf("%d pods of the second job bound while the first is %s", n, j.JobStatus().Phase)
		}
		if j.JobStatus().Phase == v1beta1.JobSucceeded {
			break
		}
		if j.JobStatus().Phase == v1beta1.JobFailed {
			t.Fatalf("the first job failed: %s", f.DumpJob(first))
		}
		time.Sleep(time.Second)
	}
	waitSucceeded(f, second)
	checkOnRealNode(t, f.Pods(second))
}

// TestRealNodeTerminationReasons: how a real container ended reaches the
// job: the kernel's OOM kill of a container over its memory limit, and a
// program's exit with the end of its log as termination message
// (FallbackToLogsOnError). The Failed condition and kubectl training status
// name it, and the status keeps it after the pod is deleted.
func TestRealNodeTerminationReasons(t *testing.T) {
	f := onRealNode(t, "real-ends")
	job := func(name, memory string, policy corev1.TerminationMessagePolicy, command string) *framework.JobBuilder {
		return framework.NewPyTorchJob(name).WithReplicas("master", 1).
			WithRestartPolicy("master", v1beta1.RestartPolicyNever).Image(framework.TrainingImage).
			Command("sh", "-c", command).TerminationMessagePolicy(policy).Requests("50m", memory).MemoryLimit(memory)
	}
	applyJob(f, job("oom", "48Mi", corev1.TerminationMessageReadFile, `python3 -c "b = b'x' * (200 * 1024 * 1024); print(len(b))"`))
	applyJob(f, job("nan", "64Mi", corev1.TerminationMessageFallbackToLogsOnError, `echo loading data; echo "loss is NaN at step 7" >&2; exit 3`))

	for _, tc := range []struct {
		name, summary, message string
		code                   int32
	}{
		{"oom", "master-0 OOMKilled (exit 137)", "", 137},
		// The log's lines, stdout's and stderr's, may come in either order.
		{"nan", "master-0 Error (exit 3): ", "loss is NaN at step 7", 3},
	} {
		ref := f.Ref(framework.KindPyTorch, tc.name)
		job := f.WaitForPhase(ref, v1beta1.JobFailed)
		failed := framework.Condition(job, v1beta1.ConditionFailed)
		if failed == nil || !strings.Contains(failed.Message, tc.summary) || !strings.Contains(failed.Message, tc.message) {
			t.Errorf("%s: Failed condition %+v, want its message to say %q", tc.name, failed, tc.summary)
		}
		pods := f.Pods(ref)
		if len(pods) != 1 {
			t.Fatalf("%s: %d pods, want 1", tc.name, len(pods))
		}
		checkOnRealNode(t, pods)
		// The record outlives the pod.
		f.MustKubectl("delete", "pod", pods[0].Name, "--wait=true")
		f.WaitForPods(ref, "the pod gone", framework.Timeout, func(pods []corev1.Pod) (bool, error) { return len(pods) == 0, nil })
		job = f.MustGetJob(ref)
		replicas := job.JobStatus().Tasks[0].ReplicaStatus
		if len(replicas) != 1 || len(replicas[0].Containers) != 1 || replicas[0].Containers[0].LastTermination == nil {
			t.Fatalf("%s: replicas %+v after the pod was deleted, want how its container ended", tc.name, replicas)
		}
		last := replicas[0].Containers[0].LastTermination
		wantReason := map[int32]string{137: "OOMKilled", 3: "Error"}[tc.code]
		if last.ExitCode != tc.code || last.Reason != wantReason || !strings.Contains(last.Message, tc.message) || last.FinishedAt == nil {
			t.Errorf("%s: recorded termination %+v, want %s with exit %d and a message with %q", tc.name, last, wantReason, tc.code, tc.message)
		}
		r := f.KubectlTraining("status", ref.KubectlName())
		if r.Err != nil || !strings.Contains(r.Stdout, wantReason+" (exit "+strconv.Itoa(int(tc.code))+")") {
			t.Errorf("%s: kubectl training status does not show %s (exit %d): %s", tc.name, wantReason, tc.code, r)
		}
	}
}

// listPodsScript lists the pods of its namespace at
// https://kubernetes.default.svc, as an in-cluster client does.
const listPodsScript = `import json, os, ssl, urllib.request
sa = "/var/run/secrets/kubernetes.io/serviceaccount"
token = open(sa + "/token").read()
ns = open(sa + "/namespace").read()
ctx = ssl.create_default_context(cafile=sa + "/ca.crt")
req = urllib.request.Request("https://kubernetes.default.svc/api/v1/namespaces/" + ns + "/pods",
                             headers={"Authorization": "Bearer " + token})
try:
    urllib.request.urlopen(req, context=ctx, timeout=10)
    print("listed pods")
except urllib.error.HTTPError as err:
    # The job's service account may not list pods: a 403 from
    # kube-apiserver still proves the way there and the identity.
    body = json.loads(err.read())
    print("kube-apiserver answered", err.code, body.get("message"))
`

// TestRealNodeReachesKubernetesService: a pod reaches kube-apiserver the way
// in-cluster clients do: kubernetes.default.svc resolves through CoreDNS, its
// ClusterIP leads through kube-proxy's rules to kube-apiserver, whose
// certificate the pod's service-account CA verifies, and the pod's projected
// token authenticates it.
func TestRealNodeReachesKubernetesService(t *testing.T) {
	f := onRealNode(t, "real-svc")
	applyJob(f, framework.NewPyTorchJob("in-cluster").WithReplicas("master", 1).
		WithRestartPolicy("master", v1beta1.RestartPolicyNever).Image(framework.TrainingImage).
		Command("python3", "-c", listPodsScript).Requests("50m", "64Mi"))
	ref := f.Ref(framework.KindPyTorch, "in-cluster")
	waitSucceeded(f, ref)
	pods := f.Pods(ref)
	checkOnRealNode(t, pods)
	out := podLog(f, pods[0].Name)
	want := fmt.Sprintf(`User "system:serviceaccount:%s:default" cannot list resource "pods"`, f.Namespace)
	answered := strings.Contains(out, "kube-apiserver answered 403") && strings.Contains(out, want)
	if !answered && !strings.Contains(out, "listed pods") {
		t.Errorf("the pod's request to https://kubernetes.default.svc: %q, want kube-apiserver's answer to its service account (%q)", out, want)
	}
}
