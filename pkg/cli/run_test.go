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

package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clienttesting "k8s.io/client-go/testing"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// storedJob is the job run created, as the fake apiserver keeps it.
func (f *fixture) storedJob(kind *jobKind, namespace, name string) v1beta1.TrainingJob {
	f.t.Helper()
	job, err := kind.Client(f.training, namespace).Get(f.t.Context(), name)
	if err != nil {
		f.t.Fatalf("%s in %s was not created: %v", kind.Ref(name), namespace, err)
	}
	return job
}

// asJSON is what the apiserver receives of v.
func asJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// mustKindCalled is the kind of an API kind name.
func mustKindCalled(t *testing.T, name string) *jobKind {
	t.Helper()
	kind, ok := kindCalled(name)
	if !ok {
		t.Fatalf("no kind %s", name)
	}
	return kind
}

func TestRunFromAClusterRuntime(t *testing.T) {
	f := newRuntimesFixture(t)
	out := f.mustRun("run", "resnet", "--runtime", "generic", "--nodes", "2", "--cpu", "4", "--memory", "16Gi", "--gpus", "1",
		"--env", "EPOCHS=3", "--env", "EMPTY=", "--env", "OPTS=a=b", "--image", "registry/resnet:1", "--queue", "research",
		"--", "python3", "train.py", "--lr", "0.1")
	if want := "genericjob.batch.tensorstack.dev/resnet created\n"; out != want {
		t.Errorf("output %q; want %q", out, want)
	}
	job := f.storedJob(mustKindCalled(t, batch.GenericJobKind), "default", "resnet")
	if got, want := job.GetLabels(), map[string]string{batch.QueueLabel: "research"}; asJSON(t, got) != asJSON(t, want) {
		t.Errorf("labels %v; want %v", got, want)
	}
	spec := job.CommonSpec()
	if got, want := asJSON(t, spec.RuntimeRef), `{"name":"generic","kind":"ClusterTrainingRuntime"}`; got != want {
		t.Errorf("runtimeRef %s; want %s", got, want)
	}
	want := `{"image":"registry/resnet:1","command":["python3"],"args":["train.py","--lr","0.1"],` +
		`"env":[{"name":"EPOCHS","value":"3"},{"name":"EMPTY"},{"name":"OPTS","value":"a=b"}],"numNodes":2,` +
		`"resourcesPerNode":{"limits":{"cpu":"4","memory":"16Gi","nvidia.com/gpu":"1"},"requests":{"cpu":"4","memory":"16Gi"}}}`
	if got := asJSON(t, spec.Trainer); got != want {
		t.Errorf("trainer\n%s\nwant\n%s", got, want)
	}
	if len(spec.ReplicaSpecs) != 0 {
		t.Errorf("replica specs %v; want none: the apiserver takes them from the runtime", spec.ReplicaSpecs)
	}
	if _, options := f.createdJobs(); len(options) != 1 || options[0].FieldManager != fieldManager || len(options[0].DryRun) != 0 {
		t.Errorf("create options %+v; want one create by %s", options, fieldManager)
	}

	// Without the flags, the trainer leaves the runtime's nodes, resources
	// and image alone.
	f.mustRun("run", "plain", "--runtime", "generic", "--", "./train")
	plain := f.storedJob(mustKindCalled(t, batch.GenericJobKind), "default", "plain")
	if got, want := asJSON(t, plain.CommonSpec().Trainer), `{"command":["./train"]}`; got != want {
		t.Errorf("trainer without flags %s; want %s", got, want)
	}
	if plain.GetLabels() != nil {
		t.Errorf("labels %v without --queue; want none", plain.GetLabels())
	}
}

func TestRunLooksUpTheNamespacesRuntimeFirst(t *testing.T) {
	f := newRuntimesFixture(t)
	for _, tc := range []struct {
		args           []string
		namespace      string
		kind           string
		wantRuntimeRef string
	}{
		{[]string{"run", "a", "--runtime", "torch"}, "default", batch.TensorFlowTrainingJobKind, `{"name":"torch","kind":"TrainingRuntime"}`},
		{[]string{"run", "b", "--runtime", "torch", "--runtime-kind", "ClusterTrainingRuntime"}, "default", batch.PyTorchTrainingJobKind, `{"name":"torch","kind":"ClusterTrainingRuntime"}`},
		{[]string{"run", "c", "--runtime", "torch", "-n", "team"}, "team", batch.PyTorchTrainingJobKind, `{"name":"torch","kind":"ClusterTrainingRuntime"}`},
		{[]string{"run", "d", "--runtime", "team-only", "-n", "team"}, "team", batch.GenericJobKind, `{"name":"team-only","kind":"TrainingRuntime"}`},
	} {
		f.mustRun(append(tc.args, "--", "true")...)
		job := f.storedJob(mustKindCalled(t, tc.kind), tc.namespace, tc.args[1])
		if got := asJSON(t, job.CommonSpec().RuntimeRef); got != tc.wantRuntimeRef {
			t.Errorf("%v: runtimeRef %s; want %s", tc.args, got, tc.wantRuntimeRef)
		}
	}
}

func TestRunWithoutTheRuntime(t *testing.T) {
	f := newRuntimesFixture(t)
	err := f.run("run", "mnist", "--runtime", "missing", "--", "true")
	want := `no TrainingRuntime "missing" in namespace "default" and no ClusterTrainingRuntime "missing"; ` +
		`kubectl training runtimes lists the runtimes there are`
	if !apierrors.IsNotFound(err) || err.Error() != want {
		t.Errorf("error %v; want NotFound: %s", err, want)
	}
	err = f.run("run", "mnist", "--runtime", "generic", "--runtime-kind", "TrainingRuntime", "--", "true")
	if !apierrors.IsNotFound(err) || !strings.HasPrefix(err.Error(), `getting TrainingRuntime "generic" in namespace "default": `) {
		t.Errorf("--runtime-kind TrainingRuntime: error %v; want the TrainingRuntime not found", err)
	}
	if jobs, _ := f.createdJobs(); len(jobs) != 0 {
		t.Errorf("created %v", jobs)
	}

	// A TrainingRuntime the user may not get is one they may not use: the
	// cluster's is looked up, and if there is none, the Forbidden is the
	// answer.
	f.training.PrependReactor("get", "trainingruntimes", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(v1beta1.Resource("trainingruntimes"), "torch", errors.New("no"))
	})
	f.mustRun("run", "mnist", "--runtime", "torch", "--", "true")
	if job := f.storedJob(mustKindCalled(t, batch.PyTorchTrainingJobKind), "default", "mnist"); job.CommonSpec().RuntimeRef.Kind != batch.ClusterTrainingRuntimeKind {
		t.Errorf("runtimeRef %v; want the ClusterTrainingRuntime", job.CommonSpec().RuntimeRef)
	}
	if err := f.run("run", "other", "--runtime", "missing", "--", "true"); !apierrors.IsForbidden(err) {
		t.Errorf("error %v; want the Forbidden of the TrainingRuntime", err)
	}
}

func TestRunCarriesAScript(t *testing.T) {
	f := newRuntimesFixture(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "train.py")
	if err := os.WriteFile(script, []byte("print('training')\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.mustRun("run", "mnist", "--runtime", "generic", "--file", script)
	job := f.storedJob(mustKindCalled(t, batch.GenericJobKind), "default", "mnist")
	if got, want := asJSON(t, job.CommonSpec().Trainer), `{"script":{"name":"train.py","source":"print('training')\n"}}`; got != want {
		t.Errorf("trainer %s; want %s", got, want)
	}

	large := filepath.Join(dir, "large.py")
	if err := os.WriteFile(large, make([]byte, batch.MaxScriptBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	err := f.run("run", "large", "--runtime", "generic", "--file", large)
	if want := "--file " + large + " is larger than a script may be, 262144 bytes (256 KiB): put a larger program in the image or a volume"; err == nil || err.Error() != want {
		t.Errorf("error %v; want %q", err, want)
	}
	if err := f.run("run", "missing", "--runtime", "generic", "--file", filepath.Join(dir, "missing.py")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: error %v", err)
	}
}

func TestRunRefusesBadFlags(t *testing.T) {
	f := newRuntimesFixture(t)
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--env", "EPOCHS"}, `--env "EPOCHS": must be NAME=VALUE`},
		{[]string{"--env", "=3"}, `--env "=3": must be NAME=VALUE`},
		{[]string{"--env", "A=1", "--env", "B"}, `--env "B": must be NAME=VALUE`},
		{[]string{"--cpu", "four"}, `--cpu "four": quantities must match the regular expression`},
		{[]string{"--memory", "1 Gi"}, `--memory "1 Gi": quantities must match the regular expression`},
		{[]string{"--gpus", "-1"}, "--gpus -1: must be 0 or more"},
		{[]string{"--runtime-kind", "Runtime"}, `--runtime-kind "Runtime": must be ClusterTrainingRuntime or TrainingRuntime`},
		{[]string{"--dry-run=client", "--follow"}, "--follow follows a job that runs: drop --dry-run"},
		{[]string{"--dry-run=sometimes"}, `invalid --dry-run "sometimes"`},
		{[]string{"-o", "table"}, `unable to match a printer suitable for the output format "table"`},
	} {
		args := append(append([]string{"run", "mnist", "--runtime", "generic"}, tc.args...), "--", "true")
		if err := f.run(args...); err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
			t.Errorf("%v: error %v; want %q", tc.args, err, tc.wantErr)
		}
	}

	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"run", "mnist", "--runtime", "generic"}, "nothing to run: give a command after --, or a --file (a runtime's default command runs a script)"},
		{[]string{"run", "mnist", "--runtime", "generic", "--"}, "nothing to run: give a command after --, or a --file (a runtime's default command runs a script)"},
		{[]string{"run", "mnist", "python3", "--runtime", "generic"}, "give the job one NAME, and its command after --: run mnist --runtime RUNTIME -- python3"},
		{[]string{"run", "--runtime", "generic", "--", "python3"}, "name the job: run NAME --runtime RUNTIME [-- COMMAND [ARG...]]"},
		{[]string{"run", "mnist", "--", "python3"}, `required flag(s) "runtime" not set`},
	} {
		if err := f.run(tc.args...); err == nil || err.Error() != tc.wantErr {
			t.Errorf("%v: error %v; want %q", tc.args, err, tc.wantErr)
		}
	}
	if jobs, _ := f.createdJobs(); len(jobs) != 0 {
		t.Errorf("created %v despite the errors", jobs)
	}
}

func TestRunDryRun(t *testing.T) {
	f := newRuntimesFixture(t)
	out := f.mustRun("run", "mnist", "--runtime", "torch", "--nodes", "2", "--dry-run=client", "-o", "yaml", "--", "python3", "train.py")
	for _, want := range []string{
		"apiVersion: batch.tensorstack.dev/v1beta1\nkind: TensorFlowTrainingJob\n",
		"\n  name: mnist\n  namespace: default\n",
		"\n  runtimeRef:\n    kind: TrainingRuntime\n    name: torch\n",
		"\n  trainer:\n    args:\n    - train.py\n    command:\n    - python3\n    numNodes: 2\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("client dry run: output\n%s\nwant it to contain\n%s", out, want)
		}
	}
	if jobs, _ := f.createdJobs(); len(jobs) != 0 {
		t.Errorf("client dry run created %v", jobs)
	}
	if yaml := f.mustRun("run", "mnist", "--runtime", "torch", "--dry-run=client", "--", "python3", "train.py"); !strings.HasPrefix(yaml, "apiVersion: ") {
		t.Errorf("client dry run without -o: output %q; want YAML", yaml)
	}

	// The server's answer, the job filled in from the runtime, is printed.
	f.training.PrependReactor("create", "tensorflowtrainingjobs", func(action clienttesting.Action) (bool, runtime.Object, error) {
		job := action.(clienttesting.CreateActionImpl).Object.DeepCopyObject().(*v1beta1.TensorFlowTrainingJob)
		job.Spec.ReplicaSpecs = []v1beta1.ReplicaSpec{replicas("worker", 2, "tensorflow")}
		job.Status.Runtime = &v1beta1.AppliedRuntime{Kind: batch.TrainingRuntimeKind, Name: "torch"}
		return true, job, nil
	})
	out = f.mustRun("run", "mnist", "--runtime", "torch", "--dry-run=server", "--", "python3", "train.py")
	if !strings.Contains(out, "\n  replicaSpecs:\n  - replicas: 2\n") || !strings.Contains(out, "\n  runtime:\n") {
		t.Errorf("server dry run: output\n%s\nwant the job the server returned, as YAML", out)
	}
	if _, options := f.createdJobs(); len(options) != 1 || len(options[0].DryRun) != 1 || options[0].DryRun[0] != metav1.DryRunAll {
		t.Errorf("server dry run: create options %+v; want dryRun [All]", options)
	}

	if out := f.mustRun("run", "named", "--runtime", "generic", "-o", "name", "--", "true"); out != "genericjob.batch.tensorstack.dev/named\n" {
		t.Errorf("-o name: output %q", out)
	}
}

// runningPod is a replica's pod whose containers have started.
func runningPod(job, kind string, t v1beta1.ReplicaType, index string, containers ...string) *corev1.Pod {
	pod := replicaPod(job, kind, t, index, containers...)
	pod.UID = types.UID("uid-" + pod.Name)
	for _, name := range containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		})
	}
	return pod
}

func newFollowFixture(t *testing.T) *fixture {
	return newFixture(t,
		newClusterRuntime("torch", time.Hour, pyTorchTemplate(replicas("master", 1, "pytorch"), replicas("worker", 2, "pytorch"))),
		runningPod("mnist", batch.PyTorchTrainingJobKind, "master", "0", "pytorch"),
		runningPod("mnist", batch.PyTorchTrainingJobKind, "worker", "0", "pytorch"),
		// A pod whose container has not started has no log yet.
		replicaPod("mnist", batch.PyTorchTrainingJobKind, "worker", "1", "pytorch"),
		// Nor is a job of another kind of the same name followed.
		runningPod("mnist", batch.TensorFlowTrainingJobKind, "ps", "0", "tensorflow"),
	)
}

// endWatchWith answers the watch of the job with one event: how it ended.
func endWatchWith(f *fixture, event watch.EventType, job *v1beta1.PyTorchTrainingJob) {
	f.training.PrependWatchReactor(v1beta1.PyTorchTrainingJobResource, func(clienttesting.Action) (bool, watch.Interface, error) {
		w := watch.NewFakeWithChanSize(1, false)
		w.Action(event, job)
		return true, w, nil
	})
}

func endedJob(phase v1beta1.JobPhase, conditions ...metav1.Condition) *v1beta1.PyTorchTrainingJob {
	job := &v1beta1.PyTorchTrainingJob{ObjectMeta: metav1.ObjectMeta{Name: "mnist", Namespace: "default", ResourceVersion: "9"}}
	job.Status.Phase = phase
	job.Status.Conditions = conditions
	return job
}

// followedLogs checks that the output is the line run prints, then the
// logs of every started replica of the job, in any order.
func followedLogs(t *testing.T, f *fixture) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(f.out.String(), "\n"), "\n")
	if lines[0] != "pytorchtrainingjob.batch.tensorstack.dev/mnist created" {
		t.Errorf("output starts %q; want the job created", lines[0])
	}
	logs := lines[1:]
	sort.Strings(logs)
	if want := []string{"[mnist-master-0/pytorch] fake logs", "[mnist-worker-0/pytorch] fake logs"}; strings.Join(logs, "\n") != strings.Join(want, "\n") {
		t.Errorf("logs:\n%s\nwant:\n%s", strings.Join(logs, "\n"), strings.Join(want, "\n"))
	}
	for _, r := range f.logs.taken() {
		if !r.opts.Follow || r.opts.Container != "pytorch" {
			t.Errorf("%s: log options %+v; want the pytorch container followed", r.pod, r.opts)
		}
	}
}

func TestRunFollowUntilTheJobSucceeds(t *testing.T) {
	f := newFollowFixture(t)
	endWatchWith(f, watch.Modified, endedJob(v1beta1.JobSucceeded))
	f.mustRun("run", "mnist", "--runtime", "torch", "--follow", "--", "python3", "train.py")
	followedLogs(t, f)
	if f.errOut.Len() != 0 {
		t.Errorf("stderr %q; want nothing", f.errOut.String())
	}
}

func TestRunFollowUntilTheJobFails(t *testing.T) {
	f := newFollowFixture(t)
	endWatchWith(f, watch.Modified, endedJob(v1beta1.JobFailed,
		metav1.Condition{Type: v1beta1.ConditionRunning, Status: metav1.ConditionFalse, Reason: "Failed"},
		metav1.Condition{Type: v1beta1.ConditionFailed, Status: metav1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "worker-0 exited with code 1"}))
	err := f.run("run", "mnist", "--runtime", "torch", "--follow", "--", "python3", "train.py")
	// main prints the error so and exits 1.
	if want := "error: pj/mnist failed: BackoffLimitExceeded: worker-0 exited with code 1"; err == nil || ErrorMessage(err) != want {
		t.Errorf("error %v; want %q", err, want)
	}
	followedLogs(t, f)
}

func TestRunFollowAJobDeletedBeforeItFinished(t *testing.T) {
	f := newFollowFixture(t)
	endWatchWith(f, watch.Deleted, endedJob(v1beta1.JobRunning))
	err := f.run("run", "mnist", "--runtime", "torch", "--follow", "--", "python3", "train.py")
	if want := "pj/mnist was deleted before it finished"; err == nil || err.Error() != want {
		t.Errorf("error %v; want %q", err, want)
	}
}

func TestJobOutcome(t *testing.T) {
	pyTorch := mustKindCalled(t, batch.PyTorchTrainingJobKind)
	failed := func(reason, message string) metav1.Condition {
		return metav1.Condition{Type: v1beta1.ConditionFailed, Status: metav1.ConditionTrue, Reason: reason, Message: message}
	}
	for _, tc := range []struct {
		job     *v1beta1.PyTorchTrainingJob
		wantErr string
	}{
		{endedJob(v1beta1.JobSucceeded), ""},
		{endedJob(v1beta1.JobFailed, failed("DeadlineExceeded", "the job ran longer than its activeDeadlineSeconds")),
			"pj/mnist failed: DeadlineExceeded: the job ran longer than its activeDeadlineSeconds"},
		{endedJob(v1beta1.JobFailed, failed("ReplicaFailed", "")), "pj/mnist failed: ReplicaFailed"},
		{endedJob(v1beta1.JobFailed), "pj/mnist failed"},
		{endedJob(v1beta1.JobRunning), "pj/mnist has not finished: it is Running"},
	} {
		err := jobOutcome(pyTorch, tc.job)
		if got := fmt.Sprint(err); tc.wantErr == "" && err != nil || tc.wantErr != "" && got != tc.wantErr {
			t.Errorf("%s: %v; want %q", tc.job.Status.Phase, err, tc.wantErr)
		}
	}
}

// newTestFollower follows the logs of pj/mnist.
func newTestFollower(t *testing.T, f *fixture, maxStreams int) *podLogFollower {
	e := &env{streams: genericiooptions.IOStreams{Out: &f.out, ErrOut: &f.errOut}}
	c := clients{namespace: "default", training: f.training, kube: recordingKube{Interface: f.kube, logs: f.logs}}
	found := foundJob{kind: mustKindCalled(t, batch.PyTorchTrainingJobKind), job: ptJob("mnist")}
	return newPodLogFollower(t.Context(), e, c, found, maxStreams)
}

func TestPodLogFollowerStreamsEachContainerRunOnce(t *testing.T) {
	f := newFixture(t)
	follower := newTestFollower(t, f, 10)
	pod := runningPod("mnist", batch.PyTorchTrainingJobKind, "master", "0", "pytorch")
	follower.podChanged(pod)
	follower.podChanged(pod.DeepCopy())
	restarted := pod.DeepCopy()
	restarted.Status.ContainerStatuses[0].RestartCount = 1
	follower.podChanged(restarted)
	replaced := pod.DeepCopy()
	replaced.UID = "uid-replacement"
	replaced.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
	follower.podChanged(replaced)
	follower.finish(t.Context())
	if n := len(f.logs.taken()); n != 3 {
		t.Errorf("streamed %d logs; want 3: the first run, the run after the restart in place, the replacement's", n)
	}
	// Once finished, it starts no more.
	replaced.UID = "uid-too-late"
	follower.podChanged(replaced)
	if n := len(f.logs.taken()); n != 0 {
		t.Errorf("streamed %d logs after finishing", n)
	}
}

func TestPodLogFollowerKeepsToMaxLogRequests(t *testing.T) {
	f := newFixture(t)
	follower := newTestFollower(t, f, 1)
	follower.open = 1 // a log streams
	follower.podChanged(runningPod("mnist", batch.PyTorchTrainingJobKind, "worker", "0", "pytorch"))
	follower.podChanged(runningPod("mnist", batch.PyTorchTrainingJobKind, "worker", "1", "pytorch"))
	follower.finish(t.Context())
	if requests := f.logs.taken(); len(requests) != 0 {
		t.Errorf("streamed %v beyond --max-log-requests", requests)
	}
	if want := "Warning: not following the log of mnist-worker-0, nor of other pods while 1 logs stream: raise --max-log-requests to follow more\n"; f.errOut.String() != want {
		t.Errorf("stderr %q; want %q", f.errOut.String(), want)
	}
}
