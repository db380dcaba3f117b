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
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// The tests of this file show what the job makes of real containers that
// fail, or never start, on the real node.

// oomJob is a PyTorch job whose master, limited to 64 MiB, allocates
// 256 MiB; callers add the run policy.
func oomJob(name string) *framework.JobBuilder {
	return framework.NewPyTorchJob(name).WithReplicas("master", 1).
		WithRestartPolicy("master", v1beta1.RestartPolicyOnFailure).Image(framework.TrainingImage).
		Command("python3", "-c", "b = b'x' * (256 * 1024 * 1024); print(len(b))").
		Requests("50m", "64Mi").MemoryLimit("64Mi")
}

// TestRealNodeOOMKilled: a container over its memory limit is killed by the
// kernel. A failure-policy rule on OOMKilled with FailJob fails the job at
// once, naming the reason; without the rule the replica is restarted under
// its restartPolicy, after the backoff, until backoffLimit is used up.
func TestRealNodeOOMKilled(t *testing.T) {
	f := onRealNode(t, "real-oom")
	applyJob(f, oomJob("fail-on-oom").BackoffLimit(3).
		FailurePolicy(v1beta1.FailurePolicyRule{Action: v1beta1.FailurePolicyActionFailJob, OnReasons: []string{"OOMKilled"}}))

	ref := f.Ref(framework.KindPyTorch, "fail-on-oom")
	job := f.WaitForPhase(ref, v1beta1.JobFailed)
	failed := framework.Condition(job, v1beta1.ConditionFailed)
	if failed == nil || failed.Reason != "PodFailurePolicy" || !strings.Contains(failed.Message, "master-0 OOMKilled (exit 137)") {
		t.Errorf("fail-on-oom: Failed condition %+v, want reason PodFailurePolicy naming master-0 OOMKilled (exit 137)", failed)
	}
	if n := job.JobStatus().BackoffCount; n != 0 {
		t.Errorf("fail-on-oom: backoffCount %d, want 0: the rule fails the job without a restart", n)
	}
	last := job.JobStatus().Tasks[0].ReplicaStatus[0].Containers[0].LastTermination
	if last == nil || last.Reason != "OOMKilled" || last.ExitCode != 137 || last.FinishedAt == nil {
		t.Errorf("fail-on-oom: recorded termination %+v, want OOMKilled with exit 137", last)
	} else {
		t.Logf("fail-on-oom: the job failed %s after the kill (second precision)", failed.LastTransitionTime.Sub(last.FinishedAt.Time))
	}
	checkOnRealNode(t, f.Pods(ref))

	// Without the rule: OnFailure restarts the replica once (backoffLimit
	// 1), after the 10 s backoff, and the second kill fails the job.
	applyJob(f, oomJob("restart-on-oom").BackoffLimit(1))
	ref = f.Ref(framework.KindPyTorch, "restart-on-oom")
	uids := map[types.UID]bool{}
	var firstExit time.Time
	var secondCreated time.Time
	job = f.WaitForJob(ref, "Failed after one restart", realNodeTimeout, func(job v1beta1.TrainingJob) (bool, error) {
		for _, p := range f.Pods(ref) {
			if !uids[p.UID] {
				uids[p.UID] = true
				if len(uids) == 2 {
					secondCreated = p.CreationTimestamp.Time
				}
			}
			for _, c := range p.Status.ContainerStatuses {
				if term := c.State.Terminated; term != nil && len(uids) == 1 && firstExit.IsZero() {
					firstExit = term.FinishedAt.Time
				}
			}
		}
		return job.JobStatus().Phase == v1beta1.JobFailed, nil
	})
	failed = framework.Condition(job, v1beta1.ConditionFailed)
	if failed == nil || failed.Reason != "BackoffLimitExceeded" || !strings.Contains(failed.Message, "OOMKilled (exit 137)") {
		t.Errorf("restart-on-oom: Failed condition %+v, want BackoffLimitExceeded naming OOMKilled (exit 137)", failed)
	}
	if n := job.JobStatus().BackoffCount; n != 1 {
		t.Errorf("restart-on-oom: backoffCount %d, want 1", n)
	}
	if len(uids) != 2 {
		t.Errorf("restart-on-oom: saw %d pods, want the first and its one replacement", len(uids))
	} else if !firstExit.IsZero() {
		// Both times have second precision.
		if wait := secondCreated.Sub(firstExit); wait < 9*time.Second {
			t.Errorf("restart-on-oom: replacement created %s after the first kill, want the 10 s backoff", wait)
		} else {
			t.Logf("restart-on-oom: replacement created %s after the first kill", wait)
		}
	}
}

// tracebackScript dies of a ValueError, its traceback on stderr.
const tracebackScript = `import sys
def step(n):
    raise ValueError("loss is NaN at step %d" % n)
print("training", file=sys.stderr, flush=True)
step(7)
`

// TestRealNodeTracebackOutlivesThePod: a Python program that dies with a
// traceback; with FallbackToLogsOnError the traceback's last line is in the
// job's status and in kubectl training status, also once the pod is gone.
// The program prints to stderr, as the traceback goes: the container
// runtime copies stdout and stderr from two pipes, so lines written to the
// two within a millisecond may reach the log in either order.
func TestRealNodeTracebackOutlivesThePod(t *testing.T) {
	f := onRealNode(t, "real-traceback")
	applyJob(f, framework.NewPyTorchJob("traceback").WithReplicas("master", 1).CleanUp(v1beta1.CleanUpPolicyAll).
		Image(framework.TrainingImage).TerminationMessagePolicy(corev1.TerminationMessageFallbackToLogsOnError).
		Command("python3", "-c", tracebackScript).Requests("50m", "64Mi"))
	const lastLine = "ValueError: loss is NaN at step 7"
	ref := f.Ref(framework.KindPyTorch, "traceback")
	f.WaitForPhase(ref, v1beta1.JobFailed)
	// cleanUpPolicy All deletes the pod once the job failed.
	f.WaitForNoPods(ref, framework.Timeout)
	job := f.MustGetJob(ref)
	last := job.JobStatus().Tasks[0].ReplicaStatus[0].Containers[0].LastTermination
	if last == nil || last.ExitCode != 1 || !strings.HasSuffix(last.Message, lastLine) || !strings.Contains(last.Message, "Traceback (most recent call last)") {
		t.Errorf("recorded termination %+v, want exit 1 and the traceback ending in %q", last, lastLine)
	}
	r := f.KubectlTraining("status", ref.KubectlName())
	if r.Err != nil || !strings.Contains(r.Stdout, "Error (exit 1): "+lastLine) {
		t.Errorf("kubectl training status does not show %q: %s", "Error (exit 1): "+lastLine, r)
	}
	failed := framework.Condition(job, v1beta1.ConditionFailed)
	if failed == nil || !strings.Contains(failed.Message, lastLine) {
		t.Errorf("Failed condition %+v, want it to end with %q", failed, lastLine)
	} else if last != nil && last.FinishedAt != nil {
		t.Logf("the job failed %s after the program exited (second precision)", failed.LastTransitionTime.Sub(last.FinishedAt.Time))
	}
}

// stuckJob is a one-replica PyTorch job of image that sleeps a second, once
// it starts; callers add what keeps it from starting.
func stuckJob(name, image string) *framework.JobBuilder {
	return framework.NewPyTorchJob(name).WithReplicas("master", 1).Image(image).
		Command("sleep", "1").Requests("50m", "32Mi")
}

// TestRealNodeStuckIsNotSilent: a replica that cannot start makes the job
// say why, in its Running condition and in kubectl get's PHASE column,
// within 30 s: an image the node cannot pull, an image that is not on the
// node under imagePullPolicy Never, a Secret missing for an environment
// variable or for a volume. With runPolicy.startTimeoutSeconds the job
// fails with that reason.
func TestRealNodeStuckIsNotSilent(t *testing.T) {
	f := onRealNode(t, "real-stuck")
	const missing = "localhost/tensorstack/missing:v1"
	created := time.Now()
	applyJob(f, stuckJob("no-image", missing))
	applyJob(f, stuckJob("not-on-node", missing).ImagePullPolicy(corev1.PullNever))
	applyJob(f, stuckJob("no-secret", framework.TrainingImage).EnvFromSecret("TOKEN", "wandb", "token"))
	applyJob(f, stuckJob("no-secret-volume", framework.TrainingImage).SecretVolume("creds", "wandb-volume", "/creds"))
	applyJob(f, stuckJob("not-on-node-limit", missing).ImagePullPolicy(corev1.PullNever).StartTimeout(20))

	for _, tc := range []struct {
		name, reason, detail string
	}{
		{"no-image", "", missing},
		{"not-on-node", "ErrImageNeverPull", missing},
		{"no-secret", "CreateContainerConfigError", `"wandb"`},
		{"no-secret-volume", "FailedMount", `"wandb-volume"`},
	} {
		ref := f.Ref(framework.KindPyTorch, tc.name)
		reasons := []string{tc.reason}
		if tc.reason == "" {
			reasons = []string{"ErrImagePull", "ImagePullBackOff"}
		}
		f.Eventually(30*time.Second-time.Since(created), tc.name+" says why it cannot start within 30 s", func(context.Context) (bool, error) {
			running := framework.Condition(f.MustGetJob(ref), v1beta1.ConditionRunning)
			if running == nil || !slices.Contains(reasons, running.Reason) {
				return false, nil
			}
			if !strings.Contains(running.Message, "replica master-0") || !strings.Contains(running.Message, tc.detail) {
				return false, framework.Stop("Running condition %q: want it to name replica master-0 and %s", running.Message, tc.detail)
			}
			out := f.MustKubectl("get", "pj", tc.name)
			return strings.Contains(out, "Pending ("+running.Reason+")"), nil
		})
		t.Logf("%s: the reason was in the job %s after it was created", tc.name, time.Since(created).Round(time.Second))
	}

	ref := f.Ref(framework.KindPyTorch, "not-on-node-limit")
	job := f.WaitForPhase(ref, v1beta1.JobFailed)
	failed := framework.Condition(job, v1beta1.ConditionFailed)
	if failed == nil || failed.Reason != "ErrImageNeverPull" ||
		!strings.Contains(failed.Message, "replica master-0 did not start within startTimeoutSeconds (20s)") || !strings.Contains(failed.Message, missing) {
		t.Errorf("not-on-node-limit: Failed condition %+v, want reason ErrImageNeverPull naming the replica, the limit and the image", failed)
	} else {
		t.Logf("not-on-node-limit: failed %s after it was created (startTimeoutSeconds 20)", failed.LastTransitionTime.Sub(job.GetCreationTimestamp().Time))
	}
	// The job's failure stops the pod that could not start.
	f.WaitForNoPods(ref, framework.Timeout)
}

// startupOrderJob is a PyTorch job whose master becomes Ready
// masterReadyAfter(policy) seconds after it starts and whose workers print
// when they start, in the node's clock;
// gang-scheduled through the queue "default" when gang is set. The job
// succeeds with its master; a worker slow to start on a busy node is kept,
// not deleted (cleanUpPolicy None), so that its log can be read.
func startupOrderJob(name string, policy v1beta1.StartupPolicy, gang bool) *framework.JobBuilder {
	b := framework.NewPyTorchJob(name).WithReplicas("master", 1).WithReplicas("worker", 2).
		StartupPolicy(policy).CleanUp(v1beta1.CleanUpPolicyNone).
		Image(framework.TrainingImage).Requests("20m", "16Mi").
		// The master is Ready a while after it starts. Under AnyOrder that
		// is 45 s, room for the workers to start first however loaded the
		// node: six jobs start on it at once, and in a full make test
		// workers started up to 17 s after their master.
		ReplicaCommand("master", "sh", "-c",
			fmt.Sprintf("sleep %d; date +ready=%%s.%%N; touch /tmp/ready; sleep 15", masterReadyAfter(policy))).
		ReplicaReadinessProbe("master", corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/tmp/ready"}}},
			PeriodSeconds: 1,
		}).
		ReplicaCommand("worker", "sh", "-c", "date +started=%s.%N")
	if gang {
		b.Gang("default", 0)
	}
	return b
}

// masterReadyAfter is how many seconds the master of startupOrderJob takes
// to be Ready: under InOrder the workers wait for it whatever it is, so it
// is short; under AnyOrder the test shows the workers did not wait, so it is
// long.
func masterReadyAfter(policy v1beta1.StartupPolicy) int {
	if policy == v1beta1.StartupPolicyInOrder {
		return 10
	}
	return 45
}

// unixTime reads the time the training scripts log: seconds since the
// epoch, with a fraction.
func unixTime(s string) (time.Time, error) {
	secs, err := strconv.ParseFloat(s, 64)
	return time.Unix(0, int64(secs*float64(time.Second))), err
}

// logTime reads "key=<seconds>.<nanoseconds>" from a log.
func logTime(t *testing.T, log, key string) time.Time {
	t.Helper()
	for _, line := range strings.Split(log, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+"="); ok {
			if at, err := unixTime(v); err == nil {
				return at
			}
		}
	}
	t.Fatalf("no %s= line in the log %q", key, log)
	return time.Time{}
}

// TestRealNodeStartupOrder: with startupPolicy InOrder no worker's container
// starts before the master is Ready, over five jobs; without it the workers
// start at once, before the master is. Under gang scheduling, the first job's
// pods are still placed together, before the master is Ready: only the
// workers' containers wait.
func TestRealNodeStartupOrder(t *testing.T) {
	f := onRealNode(t, "real-order")
	gang := os.Getenv("E2E_GANG_BACKEND") != "" && os.Getenv("E2E_GANG_BACKEND") != "none"
	if gang && f.KueueServed() {
		f.NewKueueQueue(nil, 0, "default")
	}
	var names []string
	for i := range 5 {
		names = append(names, fmt.Sprintf("in-order-%d", i))
		applyJob(f, startupOrderJob(names[i], v1beta1.StartupPolicyInOrder, gang && i == 0))
	}
	applyJob(f, startupOrderJob("any-order", v1beta1.StartupPolicyAnyOrder, false))
	for _, name := range append(names, "any-order") {
		ref := f.Ref(framework.KindPyTorch, name)
		waitSucceeded(f, ref)
		pods := waitPodsSucceeded(f, ref, 3)
		checkOnRealNode(t, pods)
		ready := logTime(t, podLog(f, name+"-master-0"), "ready")
		for _, w := range []string{name + "-worker-0", name + "-worker-1"} {
			started := logTime(t, podLog(f, w), "started")
			waited := started.Sub(ready)
			switch {
			case name == "any-order" && waited >= 0:
				t.Errorf("%s started %s after the master was ready, want at once without InOrder", w, waited)
			case name != "any-order" && waited < 0:
				t.Errorf("%s started %s before the master was ready, under InOrder", w, -waited)
			default:
				t.Logf("%s started %s after the master became ready", w, waited.Round(time.Millisecond))
			}
		}
		if gang && name == names[0] {
			for _, p := range pods {
				scheduled := podCondition(p, corev1.PodScheduled)
				// Condition times have second precision.
				if scheduled == nil || scheduled.Status != corev1.ConditionTrue || !scheduled.LastTransitionTime.Time.Before(ready) {
					t.Errorf("gang-scheduled %s: PodScheduled %+v, want it placed before the master was ready (%s)", p.Name, scheduled, ready)
				}
			}
		}
	}
}

func podCondition(p corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// applyLossJob creates the job "lost": one replica that sleeps as long as
// the ConfigMap "run" says (600 s, returned to change), leaves an
// unreachable or not-ready node after 5 s, and prefers node when one is
// named.
func applyLossJob(f *framework.Framework, node string) *corev1.ConfigMap {
	f.T.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "run"}, Data: map[string]string{"seconds": "600"}}
	if _, err := f.Kube.CoreV1().ConfigMaps(f.Namespace).Create(f.Context(), cm, metav1.CreateOptions{}); err != nil {
		f.T.Fatal(err)
	}
	b := framework.NewPyTorchJob("lost").WithReplicas("master", 1).BackoffLimit(0).GracePeriod(2).
		Tolerate(corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](5)}).
		Tolerate(corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](5)}).
		Image(framework.TrainingImage).Command("sh", "-c", "sleep $(cat /run-config/seconds)").
		ConfigMapVolume("run", "run", "/run-config").Requests("20m", "16Mi")
	if node != "" {
		b.PreferNode(node)
	}
	applyJob(f, b)
	return cm
}

// nodeLoss is a real node whose kubelet a test stopped.
type nodeLoss struct {
	f       *framework.Framework
	node    string
	stopped time.Time
	down    bool
}

const outOfServiceTaint = "node.kubernetes.io/out-of-service"

// loseNode stops node's kubelet (its containers run on, as on a node that
// lost its kubelet or its network); whatever the test does, its cleanup
// leaves the node as the other tests need it.
func loseNode(f *framework.Framework, node string) *nodeLoss {
	f.T.Helper()
	l := &nodeLoss{f: f, node: node}
	f.RestartComponent("--stop", "kubelet-"+node)
	l.stopped, l.down = time.Now(), true
	f.T.Cleanup(func() {
		f.Kubectl("taint", "node", node, outOfServiceTaint+"-")
		if l.down {
			f.RestartComponent("--start", "kubelet-"+node)
		}
	})
	return l
}

// outOfService is the administrator declaring the node gone.
func (l *nodeLoss) outOfService() {
	l.f.T.Helper()
	l.f.MustKubectl("taint", "node", l.node, outOfServiceTaint+"=nodeshutdown:NoExecute")
}

// back untaints the node and starts its kubelet again.
func (l *nodeLoss) back() {
	l.f.T.Helper()
	l.f.MustKubectl("taint", "node", l.node, outOfServiceTaint+"-")
	l.f.RestartComponent("--start", "kubelet-"+l.node)
	l.down = false
}

// waitEvicted waits until the node lifecycle controller evicts a pod from
// its unreachable node (DisruptionTarget, deleting), and says when.
func waitEvicted(f *framework.Framework, pod corev1.Pod) time.Time {
	f.T.Helper()
	var evicted time.Time
	f.Eventually(3*time.Minute, "the pod evicted from the unreachable node", func(ctx context.Context) (bool, error) {
		p, err := f.Kube.CoreV1().Pods(f.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil || p.UID != pod.UID {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && p.DeletionTimestamp != nil {
				evicted = time.Now()
				return true, nil
			}
		}
		return false, nil
	})
	return evicted
}

// TestRealNodeKubeletLoss: the real node's kubelet stops while a job runs.
// Once the node lifecycle controller finds the node unreachable, the pod's
// short toleration runs out and it is evicted; an administrator declares the
// node out of service, the pod is replaced, and when the node comes back the
// job succeeds without a restart counted against backoffLimit.
func TestRealNodeKubeletLoss(t *testing.T) {
	f := onRealNode(t, "real-node-loss")
	if f.Env.Restart == "" {
		t.Skip("needs E2E_RESTART to stop the kubelet")
	}
	ctx := f.Context()
	cm := applyLossJob(f, "")
	ref := f.Ref(framework.KindPyTorch, "lost")
	first := waitStarted(f, ref)[0]
	// The replacement runs briefly.
	cm.Data["seconds"] = "3"
	if _, err := f.Kube.CoreV1().ConfigMaps(f.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	loss := loseNode(f, first.Spec.NodeName)
	evicted := waitEvicted(f, first)
	t.Logf("evicted %s after the kubelet stopped", evicted.Sub(loss.stopped).Round(time.Second))

	// A node that does not come back: the administrator says so, and the
	// pod garbage collector lets the pod go.
	loss.outOfService()
	f.WaitForPods(ref, "a replacement", 2*time.Minute, func(pods []corev1.Pod) (bool, error) {
		return len(pods) == 1 && pods[0].UID != first.UID, nil
	})
	t.Logf("replaced %s after the eviction", time.Since(evicted).Round(time.Second))
	job := f.MustGetJob(ref)
	if n := job.JobStatus().BackoffCount; n != 0 {
		t.Errorf("backoffCount %d after the node was lost, want 0: a disruption is not the program's failure", n)
	}

	loss.back()
	waitSucceeded(f, ref)
	job = f.MustGetJob(ref)
	if n := job.JobStatus().BackoffCount; n != 0 {
		t.Errorf("backoffCount %d, want 0", n)
	}
	checkOnRealNode(t, f.Pods(ref))
}
