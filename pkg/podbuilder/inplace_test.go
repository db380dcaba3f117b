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

package podbuilder

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// TestInPlacePod: a pod of a job that restarts in place waits at its
// barrier first, runs the agent beside the training container with the
// rule that restarts every container, tells the training container its
// attempt and resume point at each start, and keeps its QoS class.
func TestInPlacePod(t *testing.T) {
	job := ptJob(nil, nil)
	job.Spec.RunPolicy.RestartStrategy = v1beta1.RestartStrategyInPlace
	guaranteed := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	for i := range job.Spec.ReplicaSpecs {
		job.Spec.ReplicaSpecs[i].Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: guaranteed, Limits: guaranteed}
	}
	b := &Builder{Adapter: PyTorch, Job: withCheckpoints(job), Topology: NewTopology(PyTorch, job, ""), Attempt: 3, AttemptReleased: 2}
	pod, err := b.Pod(ReplicaID{Type: v1beta1.ReplicaTypeWorker, Index: 0})
	if err != nil {
		t.Fatal(err)
	}
	if a, r := pod.Annotations[AnnotationAttempt], pod.Annotations[AnnotationAttemptReleased]; a != "3" || r != "2" {
		t.Errorf("attempt %q released %q, want 3 and 2", a, r)
	}
	if pod.Spec.InitContainers[0].Name != AttemptBarrierContainerName {
		t.Errorf("first init container %s, want the barrier", pod.Spec.InitContainers[0].Name)
	}
	if !CanRestartInPlace(pod) {
		t.Fatalf("no RestartAllContainers rule: %+v", pod.Spec.Containers)
	}
	agent := pod.Spec.Containers[len(pod.Spec.Containers)-1]
	if agent.Name != RestartAgentContainerName || agent.RestartPolicy == nil || *agent.RestartPolicy != corev1.ContainerRestartPolicyNever {
		t.Errorf("agent %s restartPolicy %v, want the agent with Never", agent.Name, agent.RestartPolicy)
	}
	if r := agent.RestartPolicyRules[0]; r.ExitCodes.Values[0] != ExitCodeRestartInPlace {
		t.Errorf("rule %+v, want the agent's exit code", r)
	}
	if !agent.Resources.Requests.Cpu().Equal(*agent.Resources.Limits.Cpu()) || !agent.Resources.Requests.Memory().Equal(*agent.Resources.Limits.Memory()) {
		t.Errorf("agent resources %+v: a Guaranteed pod would become Burstable", agent.Resources)
	}
	if pod.Annotations[defaultContainerAnnotation] != v1beta1.PyTorchContainerName {
		t.Errorf("kubectl's default container %q", pod.Annotations[defaultContainerAnnotation])
	}
	fromAnnotation := map[string]string{}
	for _, e := range pod.Spec.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			fromAnnotation[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	for name, key := range map[string]string{v1beta1.EnvAttempt: AnnotationAttempt, v1beta1.EnvResumeFrom: v1beta1.AnnotationResumeFrom,
		v1beta1.EnvResumeStep: v1beta1.AnnotationResumeStep} {
		if want := "metadata.annotations['" + key + "']"; fromAnnotation[name] != want {
			t.Errorf("%s from %q, want %q", name, fromAnnotation[name], want)
		}
	}
	if pod.Annotations[v1beta1.AnnotationResumeFrom] != "/ckpt/step-10" {
		t.Errorf("resume annotation %q", pod.Annotations[v1beta1.AnnotationResumeFrom])
	}

	job.Spec.RunPolicy.RestartStrategy = v1beta1.RestartStrategyRecreate
	pod, err = (&Builder{Adapter: PyTorch, Job: job, Topology: NewTopology(PyTorch, job, "")}).Pod(ReplicaID{Type: v1beta1.ReplicaTypeWorker})
	if err != nil {
		t.Fatal(err)
	}
	if CanRestartInPlace(pod) || len(pod.Spec.Containers) != 1 || pod.Annotations[AnnotationAttempt] != "" {
		t.Errorf("a Recreate pod has in-place parts: %+v", pod.Spec)
	}

	// An InPlace job whose nodes cannot restart pods in place gets pods as
	// under Recreate, which start from the resume point they were made with.
	job.Spec.RunPolicy.RestartStrategy = v1beta1.RestartStrategyInPlace
	pod, err = (&Builder{Adapter: PyTorch, Job: withCheckpoints(job), Topology: NewTopology(PyTorch, job, ""), Attempt: 3,
		RecreateOnRestart: true}).Pod(ReplicaID{Type: v1beta1.ReplicaTypeWorker})
	if err != nil {
		t.Fatal(err)
	}
	if CanRestartInPlace(pod) || len(pod.Spec.Containers) != 1 || len(pod.Spec.InitContainers) != 0 || pod.Annotations[AnnotationAttempt] != "" {
		t.Errorf("a pod made to be recreated has in-place parts: %+v", pod.Spec)
	}
	if e := envNamed(pod.Spec.Containers[0].Env, v1beta1.EnvResumeFrom); e == nil || e.Value != "/ckpt/step-10" {
		t.Errorf("%s = %+v, want the resume point the pod was made with", v1beta1.EnvResumeFrom, e)
	}
}

func envNamed(env []corev1.EnvVar, name string) *corev1.EnvVar {
	for i := range env {
		if env[i].Name == name {
			return &env[i]
		}
	}
	return nil
}

// scriptRun runs one of the in-place scripts with sh, over files in a
// temporary directory that stand for the downward API volume and the
// emptyDir.
type scriptRun struct {
	t           *testing.T
	info, state string
}

func newScriptRun(t *testing.T) *scriptRun {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	r := &scriptRun{t: t, info: filepath.Join(dir, "info"), state: filepath.Join(dir, "state")}
	for _, d := range []string{r.info, r.state} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func (r *scriptRun) set(file, value string) {
	r.t.Helper()
	if err := os.WriteFile(filepath.Join(r.info, file), []byte(value), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// start runs a script and returns a channel that receives its exit code.
func (r *scriptRun) start(script string) <-chan int {
	r.t.Helper()
	cmd := exec.Command("sh", "-c", script)
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = cmd.Process.Kill() })
	done := make(chan int, 1)
	go func() {
		_ = cmd.Wait()
		done <- cmd.ProcessState.ExitCode()
	}()
	return done
}

func exitWithin(t *testing.T, done <-chan int, d time.Duration) (int, bool) {
	t.Helper()
	select {
	case code := <-done:
		return code, true
	case <-time.After(d):
		return 0, false
	}
}

// TestInPlaceScripts: the barrier lets a pod start an attempt it has not
// run only once it is released, the agent restarts the pod for a newer
// attempt and ends it when told, and a pod told to stop at its barrier
// fails there.
func TestInPlaceScripts(t *testing.T) {
	r := newScriptRun(t)
	barrier, agent := barrierScript(r.info, r.state), agentScript(r.info, r.state)
	r.set("attempt", "1")
	r.set("released", "1")
	if code, ok := exitWithin(t, r.start(barrier), 5*time.Second); !ok || code != 0 {
		t.Fatalf("a new pod's barrier: exit %d (ended %v), want 0 at once", code, ok)
	}
	if ran, _ := os.ReadFile(filepath.Join(r.state, "ran")); string(ran) != "1\n" {
		t.Fatalf("ran %q, want 1", ran)
	}

	agentDone := r.start(agent)
	if _, ok := exitWithin(t, agentDone, 500*time.Millisecond); ok {
		t.Fatal("the agent exited with nothing asked")
	}
	r.set("attempt", "2")
	if code, ok := exitWithin(t, agentDone, 5*time.Second); !ok || code != int(ExitCodeRestartInPlace) {
		t.Fatalf("the agent asked for attempt 2: exit %d (ended %v), want %d", code, ok, ExitCodeRestartInPlace)
	}

	// Restarted: attempt 2 is asked, not released yet.
	barrierDone := r.start(barrier)
	if _, ok := exitWithin(t, barrierDone, 700*time.Millisecond); ok {
		t.Fatal("the barrier let attempt 2 start before its release")
	}
	r.set("released", "2")
	if code, ok := exitWithin(t, barrierDone, 5*time.Second); !ok || code != 0 {
		t.Fatalf("the barrier after the release: exit %d (ended %v), want 0", code, ok)
	}

	// A pod restarted by its own failure, not by a new attempt, waits.
	barrierDone = r.start(barrier)
	if _, ok := exitWithin(t, barrierDone, 700*time.Millisecond); ok {
		t.Fatal("the barrier let the pod run attempt 2 a second time")
	}
	r.set("agent", RestartAgentStop)
	if code, ok := exitWithin(t, barrierDone, 5*time.Second); !ok || code != 1 {
		t.Fatalf("the barrier of an ended job: exit %d (ended %v), want 1", code, ok)
	}
	if code, ok := exitWithin(t, r.start(agent), 5*time.Second); !ok || code != 0 {
		t.Fatalf("the agent told to stop: exit %d (ended %v), want 0", code, ok)
	}

	// SIGTERM ends either at once, as the kubelet's stop of the pod wants.
	r.set("agent", "")
	for name, script := range map[string]string{"agent": agent, "barrier": barrier} {
		cmd := exec.Command("sh", "-c", script)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan int, 1)
		go func() { _ = cmd.Wait(); done <- cmd.ProcessState.ExitCode() }()
		if code, ok := exitWithin(t, done, 2*time.Second); !ok || code != 0 {
			_ = cmd.Process.Kill()
			t.Errorf("the %s on SIGTERM: exit %d (ended %v), want 0 at once", name, code, ok)
		}
	}
}

// TestCheckpointNodePreferred: a pod whose checkpoints are on a node's own
// disk prefers the node that wrote the latest one, beside the template's
// own preferences; on shared storage, or before a checkpoint names its
// node, it prefers nothing.
func TestCheckpointNodePreferred(t *testing.T) {
	own := corev1.PreferredSchedulingTerm{Weight: 5, Preference: corev1.NodeSelectorTerm{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}}}}
	for _, tc := range []struct {
		name     string
		hostPath bool
		node     string
		want     []string
	}{
		{"hostPath with the writer's node", true, "node-a", []string{"node-a"}},
		{"shared storage", false, "node-a", nil},
		{"a checkpoint without its node", true, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := withCheckpoints(ptJob(nil, nil))
			job.JobStatus().Checkpoint.Latest.Node = tc.node
			for i := range job.CommonSpec().ReplicaSpecs {
				spec := &job.CommonSpec().ReplicaSpecs[i].Template.Spec
				if tc.hostPath {
					spec.Volumes[len(spec.Volumes)-1].HostPath = &corev1.HostPathVolumeSource{Path: "/var/lib/ckpt"}
				}
				spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
					PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{own}}}
			}
			pod, err := (&Builder{Adapter: PyTorch, Job: job, Topology: NewTopology(PyTorch, job, "")}).Pod(ReplicaID{Type: v1beta1.ReplicaTypeWorker})
			if err != nil {
				t.Fatal(err)
			}
			terms := pod.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution
			if terms[0].Weight != own.Weight {
				t.Errorf("the template's own preference is gone: %+v", terms)
			}
			var preferred []string
			for _, term := range terms[1:] {
				if f := term.Preference.MatchFields; term.Weight == checkpointNodeWeight && len(f) == 1 && f[0].Key == "metadata.name" {
					preferred = append(preferred, f[0].Values...)
				}
			}
			if len(preferred) != len(tc.want) || len(terms) != 1+len(tc.want) || (len(tc.want) == 1 && preferred[0] != tc.want[0]) {
				t.Errorf("preferred nodes %v (terms %+v), want %v", preferred, terms, tc.want)
			}
		})
	}
}
