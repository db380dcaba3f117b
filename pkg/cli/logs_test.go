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
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

func TestParseReplica(t *testing.T) {
	for in, want := range map[string]replicaRef{
		"worker-1":     {Type: "worker", Index: 1},
		"chief-0":      {Type: "chief", Index: 0},
		"gpu-node-12":  {Type: "gpu-node", Index: 12},
		"evaluator-0":  {Type: "evaluator"},
		"a-2147483647": {Type: "a", Index: 2147483647},
	} {
		got, err := parseReplica(in)
		if err != nil || got != want {
			t.Errorf("parseReplica(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, wantErr := range map[string]string{
		"worker":    `replica "worker" is not TYPE-INDEX, e.g. worker-0`,
		"-1":        `replica "-1" is not TYPE-INDEX, e.g. worker-0`,
		"worker-":   `replica "worker-" is not TYPE-INDEX: "" is not an index (0, 1, ...)`,
		"worker-x":  `replica "worker-x" is not TYPE-INDEX: "x" is not an index (0, 1, ...)`,
		"worker-01": `replica "worker-01" is not TYPE-INDEX: "01" is not an index (0, 1, ...)`,
		"worker-+1": `replica "worker-+1" is not TYPE-INDEX: "+1" is not an index (0, 1, ...)`,
	} {
		if _, err := parseReplica(in); err == nil || err.Error() != wantErr {
			t.Errorf("parseReplica(%q) error %v; want %q", in, err, wantErr)
		}
	}
}

func TestDecidingReplica(t *testing.T) {
	tensorFlow := func(specs ...v1beta1.ReplicaSpec) v1beta1.TrainingJob {
		return &v1beta1.TensorFlowTrainingJob{Spec: v1beta1.TensorFlowTrainingJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{ReplicaSpecs: specs}}}
	}
	pyTorch := func(specs ...v1beta1.ReplicaSpec) v1beta1.TrainingJob {
		return &v1beta1.PyTorchTrainingJob{Spec: v1beta1.PyTorchTrainingJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{ReplicaSpecs: specs}}}
	}
	xgboost := func(specs ...v1beta1.ReplicaSpec) v1beta1.TrainingJob {
		return &v1beta1.XGBoostTrainingJob{Spec: v1beta1.XGBoostTrainingJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{ReplicaSpecs: specs}}}
	}
	for _, tc := range []struct {
		name string
		job  v1beta1.TrainingJob
		want string
	}{
		{"tensorflow with chief", tensorFlow(replicas("ps", 2), replicas("worker", 4), replicas("chief", 1)), "chief-0"},
		{"tensorflow without chief", tensorFlow(replicas("ps", 2), replicas("worker", 4)), "worker-0"},
		{"tensorflow with no chief replica", tensorFlow(replicas("chief", 0), replicas("worker", 1)), "worker-0"},
		{"tensorflow of parameter servers", tensorFlow(replicas("evaluator", 0), replicas("ps", 2)), "ps-0"},
		{"pytorch with master", pyTorch(replicas("worker", 3), replicas("master", 1)), "master-0"},
		{"pytorch without master", pyTorch(replicas("node", 4), replicas("worker", 3)), "node-0"},
		{"pytorch with default replicas", pyTorch(v1beta1.ReplicaSpec{Type: "node"}), "node-0"},
		{"xgboost", xgboost(replicas("worker", 2), replicas("master", 1)), "master-0"},
	} {
		got, ok := decidingReplica(tc.job)
		if !ok || got.String() != tc.want {
			t.Errorf("%s: %v, %v; want %s", tc.name, got, ok, tc.want)
		}
	}
	if got, ok := decidingReplica(pyTorch()); ok {
		t.Errorf("a job without replicas: %v; want none", got)
	}
}

func newLogsFixture(t *testing.T) *fixture {
	sidecarFirst := replicas("worker", 2, "sidecar", "tensorflow")
	return newFixture(t,
		tfJob("mnist", replicas("chief", 1, "tensorflow"), sidecarFirst, replicas("ps", 1, "server")),
		ptJob("resnet", replicas("worker", 2, "pytorch"), replicas("master", 1, "pytorch")),
		ptJob("elastic", replicas("node", 3, "trainer", "pytorch")),
		replicaPod("mnist", "TensorFlowTrainingJob", "worker", "1", "sidecar", "tensorflow"),
		replicaPod("mnist", "TensorFlowTrainingJob", "ps", "0", "server"),
		replicaPod("mnist", "TensorFlowTrainingJob", "worker", "0", "sidecar", "tensorflow"),
		replicaPod("mnist", "TensorFlowTrainingJob", "chief", "0", "tensorflow"),
		// The pods of a PyTorch job of the same name are not the TensorFlow job's.
		replicaPod("mnist", "PyTorchTrainingJob", "master", "0", "pytorch"),
	)
}

func TestLogsOfOneReplica(t *testing.T) {
	f := newLogsFixture(t)
	for _, tc := range []struct {
		args []string
		want logRequest
	}{
		{[]string{"logs", "tj/mnist"}, logRequest{pod: "mnist-chief-0", opts: podLogOptions("tensorflow")}},
		{[]string{"logs", "mnist", "worker-1"}, logRequest{pod: "mnist-worker-1", opts: podLogOptions("tensorflow")}},
		{[]string{"logs", "mnist", "ps-0"}, logRequest{pod: "mnist-ps-0", opts: podLogOptions("server")}},
		{[]string{"logs", "mnist", "worker-0", "-c", "sidecar"}, logRequest{pod: "mnist-worker-0", opts: podLogOptions("sidecar")}},
		{[]string{"logs", "pj/resnet"}, logRequest{pod: "resnet-master-0", opts: podLogOptions("pytorch")}},
		{[]string{"logs", "elastic"}, logRequest{pod: "elastic-node-0", opts: podLogOptions("pytorch")}},
		{[]string{"logs", "resnet", "worker-1", "-f", "--tail", "20"}, logRequest{pod: "resnet-worker-1", opts: podLogOptions("pytorch", func(o *logRequest) {
			o.opts.Follow = true
			o.opts.TailLines = ptr.To[int64](20)
		})}},
	} {
		if out := f.mustRun(tc.args...); out != "fake logs\n" {
			t.Errorf("%v: output %q; want the pod's logs", tc.args, out)
		}
		if diff := cmp.Diff([]logRequest{tc.want}, f.logs.taken(), cmp.AllowUnexported(logRequest{})); diff != "" {
			t.Errorf("%v: logs asked for (-want +got):\n%s", tc.args, diff)
		}
	}

	if out := f.mustRun("logs", "mnist", "--prefix"); out != "[mnist-chief-0/tensorflow] fake logs\n" {
		t.Errorf("--prefix: output %q", out)
	}
}

func podLogOptions(container string, changes ...func(*logRequest)) corev1.PodLogOptions {
	r := logRequest{}
	r.opts.Container = container
	for _, change := range changes {
		change(&r)
	}
	return r.opts
}

func TestLogsErrors(t *testing.T) {
	f := newLogsFixture(t)
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"logs", "tj/mnist", "worker-2"}, "tj/mnist: the job has no replica worker-2; its replicas are chief-0, worker-0..worker-1, ps-0"},
		{[]string{"logs", "tj/mnist", "evaluator-0"}, "tj/mnist: the job has no replica evaluator-0; its replicas are chief-0, worker-0..worker-1, ps-0"},
		{[]string{"logs", "tj/mnist", "worker"}, `replica "worker" is not TYPE-INDEX, e.g. worker-0`},
		{[]string{"logs", "tj/mnist", "worker-0", "--all-replicas"}, "name either a REPLICA or --all-replicas, not both"},
		{[]string{"logs", "tj/mnist", "--tail", "-2"}, "--tail -2: must be -1 (all lines) or more"},
		{[]string{"logs", "pj/elastic", "--all-replicas"}, `pj/elastic has no pods in namespace "default" (phase Pending)`},
		{[]string{"logs", "tj/mnist", "--all-replicas", "-f", "--max-log-requests", "3"}, "tj/mnist has 4 pods, more than --max-log-requests=3 to follow at once; raise it"},
		{[]string{"logs", "missing"}, "no " + everyKind() + " named " + `"missing" in namespace "default"`},
		{[]string{"logs", "svc/mnist"}, `"svc" is not a training job kind in "svc/mnist": ` + "use " + everyKindRef()},
	} {
		err := f.run(tc.args...)
		if err == nil || err.Error() != tc.wantErr {
			t.Errorf("%v: error %v; want %q", tc.args, err, tc.wantErr)
		}
		if requests := f.logs.taken(); len(requests) != 0 {
			t.Errorf("%v: asked for logs despite the error: %v", tc.args, requests)
		}
	}
}

func TestLogsOfAllReplicas(t *testing.T) {
	f := newLogsFixture(t)
	out := f.mustRun("logs", "tj/mnist", "--all-replicas", "--tail", "5")
	want := "[mnist-chief-0/tensorflow] fake logs\n" +
		"[mnist-worker-0/tensorflow] fake logs\n" +
		"[mnist-worker-1/tensorflow] fake logs\n" +
		"[mnist-ps-0/server] fake logs\n"
	if out != want {
		t.Errorf("output:\n%s\nwant (in replica order):\n%s", out, want)
	}
	for _, r := range f.logs.taken() {
		if r.opts.TailLines == nil || *r.opts.TailLines != 5 || r.opts.Follow {
			t.Errorf("%s: options %+v; want tail 5 without follow", r.pod, r.opts)
		}
	}

	if out := f.mustRun("logs", "tj/mnist", "--all-replicas", "--prefix=false", "-c", "tensorflow"); out != strings.Repeat("fake logs\n", 4) {
		t.Errorf("--prefix=false: output %q", out)
	}
	for _, r := range f.logs.taken() {
		if r.opts.Container != "tensorflow" {
			t.Errorf("-c tensorflow: asked %s for container %q", r.pod, r.opts.Container)
		}
	}

	// Followed, the pods stream at once, so their order is not fixed.
	out = f.mustRun("logs", "mnist", "--all-replicas", "-f")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	sort.Strings(lines)
	wantLines := strings.Split(strings.TrimSuffix(want, "\n"), "\n")
	sort.Strings(wantLines)
	if !cmp.Equal(lines, wantLines) {
		t.Errorf("-f output:\n%s\nwant the lines of:\n%s", out, want)
	}
	requests := f.logs.taken()
	if len(requests) != 4 {
		t.Fatalf("-f asked for %d logs; want 4", len(requests))
	}
	for _, r := range requests {
		if !r.opts.Follow {
			t.Errorf("%s: not followed", r.pod)
		}
	}
}

func TestLineWriterCompletesLines(t *testing.T) {
	var out strings.Builder
	w := &lineWriter{out: &out}
	if err := w.copyLines("[p/c] ", strings.NewReader("one\n\ntwo")); err != nil {
		t.Fatal(err)
	}
	if want := "[p/c] one\n[p/c] \n[p/c] two\n"; out.String() != want {
		t.Errorf("%q; want %q", out.String(), want)
	}
}

func TestLogsOfAMissingPodNameThePhase(t *testing.T) {
	paused := ptJob("resnet", replicas("master", 1, "pytorch"))
	paused.Status.Phase = v1beta1.JobPaused
	f := newFixture(t, paused)
	f.kube.PrependReactor("get", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		return action.GetSubresource() == "log", nil, apierrors.NewNotFound(corev1.Resource("pods"), "resnet-master-0")
	})
	err := f.run("logs", "resnet")
	// The fake client wraps the server's answer in the URL it asked.
	if !apierrors.IsNotFound(err) || !strings.HasPrefix(err.Error(), "logs of resnet-master-0/pytorch: ") ||
		!strings.HasSuffix(err.Error(), `pods "resnet-master-0" not found (pj/resnet is Paused)`) {
		t.Errorf("error %v; want NotFound of the pod, saying the job is Paused", err)
	}
}

func TestLogsEndQuietlyWhenInterrupted(t *testing.T) {
	f := newLogsFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := &logsOptions{follow: true, tail: -1, maxRequests: 10}
	e := &env{streams: genericiooptions.IOStreams{Out: &f.out, ErrOut: &f.errOut}}
	pods := recordingKube{Interface: f.kube, logs: f.logs}.CoreV1().Pods("default")
	f.kube.PrependReactor("get", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		return action.GetSubresource() == "log", nil, context.Canceled
	})
	if err := o.stream(ctx, e, pods, []logSource{{pod: "mnist-chief-0", container: "tensorflow"}, {pod: "mnist-ps-0", container: "server"}}); err != nil {
		t.Errorf("interrupted: error %v; want none", err)
	}
	if f.errOut.Len() != 0 {
		t.Errorf("interrupted: stderr %q", f.errOut.String())
	}
}
