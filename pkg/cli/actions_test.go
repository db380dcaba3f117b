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
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

func newActionFixture(t *testing.T) *fixture {
	paused := ptJob("paused", replicas("master", 1, "pytorch"))
	paused.Spec.RunMode = &v1beta1.RunMode{Pause: &v1beta1.PauseMode{Enabled: true}}
	done := tfJob("done", replicas("worker", 1, "tensorflow"))
	done.Status.Phase = v1beta1.JobSucceeded
	return newFixture(t,
		tfJob("mnist", replicas("chief", 1, "tensorflow"), replicas("worker", 2, "tensorflow")),
		ptJob("resnet", replicas("master", 1, "pytorch"), replicas("worker", 3, "pytorch")),
		tfJob("twin", replicas("worker", 1, "tensorflow")),
		ptJob("twin", replicas("master", 1, "pytorch")),
		paused, done,
	)
}

func TestActionsSendTheSubresource(t *testing.T) {
	f := newActionFixture(t)
	for _, tc := range []struct {
		args                       []string
		wantOut                    string
		wantResource, wantSub, job string
	}{
		{[]string{"pause", "tj/mnist"}, "tensorflowtrainingjob.batch.tensorstack.dev/mnist paused\n", "tensorflowtrainingjobs", "pause", "mnist"},
		{[]string{"pause", "resnet"}, "pytorchtrainingjob.batch.tensorstack.dev/resnet paused\n", "pytorchtrainingjobs", "pause", "resnet"},
		{[]string{"resume", "pytorchtrainingjobs/paused"}, "pytorchtrainingjob.batch.tensorstack.dev/paused resumed\n", "pytorchtrainingjobs", "resume", "paused"},
		{[]string{"debug", "tensorflowtrainingjob.batch.tensorstack.dev/mnist"}, "tensorflowtrainingjob.batch.tensorstack.dev/mnist debug enabled\n", "tensorflowtrainingjobs", "debug", "mnist"},
		{[]string{"pause", "pj/twin", "-o", "name"}, "pytorchtrainingjob.batch.tensorstack.dev/twin\n", "pytorchtrainingjobs", "pause", "twin"},
	} {
		out := f.mustRun(tc.args...)
		if out != tc.wantOut {
			t.Errorf("%v: output %q; want %q", tc.args, out, tc.wantOut)
		}
		creates := f.actionCreates()
		if len(creates) != 1 {
			t.Fatalf("%v: sent %d action requests; want 1: %v", tc.args, len(creates), f.training.Actions())
		}
		c := creates[0]
		if c.Resource.Resource != tc.wantResource || c.Subresource != tc.wantSub || c.Name != tc.job || c.Namespace != "default" {
			t.Errorf("%v: sent %s/%s %s in %s; want %s/%s %s in default", tc.args, c.Resource.Resource, c.Subresource, c.Name, c.Namespace, tc.wantResource, tc.wantSub, tc.job)
		}
		if len(c.CreateOptions.DryRun) != 0 {
			t.Errorf("%v: dryRun %v; want none", tc.args, c.CreateOptions.DryRun)
		}
	}
}

func TestActionsDryRunServer(t *testing.T) {
	f := newActionFixture(t)
	out := f.mustRun("pause", "tj/mnist", "--dry-run=server")
	if want := "tensorflowtrainingjob.batch.tensorstack.dev/mnist paused (server dry run)\n"; out != want {
		t.Errorf("output %q; want %q", out, want)
	}
	creates := f.actionCreates()
	if len(creates) != 1 || !cmp.Equal(creates[0].CreateOptions.DryRun, []string{metav1.DryRunAll}) {
		t.Fatalf("sent %v; want one pause with dryRun [All]", creates)
	}
	if _, ok := creates[0].Object.(*v1beta1.PauseRequest); !ok {
		t.Errorf("sent a %T; want a PauseRequest", creates[0].Object)
	}
	stored, _ := f.training.BatchV1beta1().TensorFlowTrainingJobs("default").Get(t.Context(), "mnist", metav1.GetOptions{})
	if stored.Spec.RunMode != nil {
		t.Errorf("a server dry run changed the job: %+v", stored.Spec.RunMode)
	}
}

func TestActionsDryRunClient(t *testing.T) {
	f := newActionFixture(t)
	out := f.mustRun("pause", "resnet", "--dry-run=client", "-o", "yaml")
	if n := len(f.actionCreates()); n != 0 {
		t.Fatalf("a client dry run sent %d action requests", n)
	}
	var job v1beta1.PyTorchTrainingJob
	if err := yaml.UnmarshalStrict([]byte(out), &job); err != nil {
		t.Fatalf("output is not a PyTorchTrainingJob: %v\n%s", err, out)
	}
	if job.Kind != "PyTorchTrainingJob" || job.APIVersion != "batch.tensorstack.dev/v1beta1" || job.Name != "resnet" {
		t.Errorf("printed %s %s %s; want the job with its kind and apiVersion", job.APIVersion, job.Kind, job.Name)
	}
	if job.Spec.RunMode == nil || job.Spec.RunMode.Pause == nil || !job.Spec.RunMode.Pause.Enabled {
		t.Errorf("printed runMode %+v; want pause enabled", job.Spec.RunMode)
	}

	out = f.mustRun("debug", "tj/mnist", "--dry-run=client", "--replica", "worker", "--command", "sleep", "--command", "60", "-o", "yaml")
	var debugged v1beta1.TensorFlowTrainingJob
	if err := yaml.UnmarshalStrict([]byte(out), &debugged); err != nil {
		t.Fatalf("output is not a TensorFlowTrainingJob: %v\n%s", err, out)
	}
	if mode := debugged.Spec.RunMode; mode == nil || mode.Debug == nil || !mode.Debug.Enabled || len(mode.Debug.ReplicaSpecs) != 1 ||
		mode.Debug.ReplicaSpecs[0].Type != "worker" || strings.Join(mode.Debug.ReplicaSpecs[0].Command, " ") != "sleep 60" {
		t.Errorf("printed runMode %+v; want debug enabled for worker with sleep 60", debugged.Spec.RunMode)
	}

	out = f.mustRun("debug", "tj/mnist", "--dry-run", "--replica", "worker")
	if want := "tensorflowtrainingjob.batch.tensorstack.dev/mnist debug enabled (dry run)\n"; out != want {
		t.Errorf("bare --dry-run: output %q; want %q", out, want)
	}
	if actions := f.training.Actions(); len(actions) != 1 || actions[0].GetVerb() != "get" {
		t.Errorf("a client dry run made the requests %v; want only the get that finds the job", actions)
	}

	err := f.run("pause", "tj/done", "--dry-run=client")
	if err == nil || err.Error() != "cannot pause tj/done: the job has Succeeded" {
		t.Errorf("client dry run of a finished job: error %v", err)
	}
}

func TestActionsOutputTheReturnedJob(t *testing.T) {
	f := newActionFixture(t)
	out := f.mustRun("resume", "paused", "-o", "json")
	var job v1beta1.PyTorchTrainingJob
	if err := json.Unmarshal([]byte(out), &job); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if job.Kind != "PyTorchTrainingJob" || job.Name != "paused" || job.Spec.RunMode != nil {
		t.Errorf("printed %s %s with runMode %+v; want the resumed job", job.Kind, job.Name, job.Spec.RunMode)
	}

	out = f.mustRun("pause", "paused", "-o", "jsonpath={.spec.runMode.pause.enabled}")
	if out != "true" {
		t.Errorf("-o jsonpath: %q", out)
	}
	out = f.mustRun("resume", "paused", "-o", "go-template", "--template", "{{.kind}}/{{.metadata.name}}")
	if out != "PyTorchTrainingJob/paused" {
		t.Errorf("-o go-template: %q", out)
	}
	template := filepath.Join(t.TempDir(), "name.jsonpath")
	if err := os.WriteFile(template, []byte("{.metadata.name}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out = f.mustRun("pause", "paused", "-o", "jsonpath-file="+template); out != "paused" {
		t.Errorf("-o jsonpath-file: %q", out)
	}
	if err := f.run("pause", "paused", "-o", "go-template"); err == nil || !strings.Contains(err.Error(), "no template given") {
		t.Errorf("-o go-template without a template: %v, want the error that says so", err)
	}
}

func TestActionsSayWhenNothingChanged(t *testing.T) {
	f := newActionFixture(t)
	out := f.mustRun("pause", "pj/paused")
	if want := "pytorchtrainingjob.batch.tensorstack.dev/paused paused (no change)\n"; out != want {
		t.Errorf("output %q; want %q", out, want)
	}
}

func TestActionsErrors(t *testing.T) {
	f := newActionFixture(t)
	for _, tc := range []struct {
		args     []string
		wantErr  string
		notFound bool
	}{
		{[]string{"pause", "missing"}, "no " + everyKind() + " named " + `"missing" in namespace "default"`, true},
		{[]string{"resume", "mnist", "-n", "team"}, "no " + everyKind() + " named " + `"mnist" in namespace "team"`, true},
		{[]string{"pause", "pj/mnist"}, `getting pj/mnist in namespace "default": pytorchtrainingjobs.batch.tensorstack.dev "mnist" not found`, true},
		{[]string{"pause", "deploy/mnist"}, `"deploy" is not a training job kind in "deploy/mnist"`, false},
		{[]string{"debug", "twin"}, `"twin" is ambiguous in namespace "default": tj/twin and pj/twin exist`, false},
		{[]string{"pause", "mnist", "--dry-run=maybe"}, `invalid --dry-run "maybe"`, false},
		{[]string{"pause", "mnist", "-o", "wide"}, `unable to match a printer suitable for the output format "wide"`, false},
		{[]string{"pause"}, `accepts 1 arg(s), received 0`, false},
	} {
		err := f.run(tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) || apierrors.IsNotFound(err) != tc.notFound {
			t.Errorf("%v: error %v; want one containing %q (NotFound: %v)", tc.args, err, tc.wantErr, tc.notFound)
		}
		if n := len(f.actionCreates()); n != 0 {
			t.Errorf("%v: sent %d action requests despite the error", tc.args, n)
		}
	}
}

func TestDebugRequestFromFlags(t *testing.T) {
	f := newActionFixture(t)
	for _, tc := range []struct {
		args []string
		want []v1beta1.ReplicaDebugSpec
	}{
		{[]string{"debug", "tj/mnist"}, nil},
		{[]string{"debug", "tj/mnist", "--replica", "worker"}, []v1beta1.ReplicaDebugSpec{{Type: "worker"}}},
		{
			[]string{"debug", "tj/mnist", "--replica", "Worker", "--replica", "chief", "--replica", "worker", "--command", "sleep", "--command", "inf", "--skip-init-container"},
			[]v1beta1.ReplicaDebugSpec{
				{Type: "worker", SkipInitContainer: true, Command: []string{"sleep", "inf"}},
				{Type: "chief", SkipInitContainer: true, Command: []string{"sleep", "inf"}},
			},
		},
		{
			[]string{"debug", "pj/resnet", "--replica", "master", "--command", "python", "--command", "-m", "--command", "pdb"},
			[]v1beta1.ReplicaDebugSpec{{Type: "master", Command: []string{"python", "-m", "pdb"}}},
		},
	} {
		f.mustRun(tc.args...)
		creates := f.actionCreates()
		if len(creates) != 1 {
			t.Fatalf("%v: sent %d action requests; want 1", tc.args, len(creates))
		}
		request, ok := creates[0].Object.(*v1beta1.DebugRequest)
		if !ok {
			t.Fatalf("%v: sent a %T; want a DebugRequest", tc.args, creates[0].Object)
		}
		if diff := cmp.Diff(tc.want, request.ReplicaSpecs); diff != "" {
			t.Errorf("%v: replicaSpecs (-want +got):\n%s", tc.args, diff)
		}
	}
}

func TestDebugFlagErrors(t *testing.T) {
	f := newActionFixture(t)
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"debug", "tj/mnist", "--replica", "ps"}, `the job has no replica type "ps"; its types are chief, worker`},
		{[]string{"debug", "tj/mnist", "--command", "bash"}, `--command and --skip-init-container apply to the replica types named by --replica; the job's types are chief, worker`},
		{[]string{"debug", "pj/resnet", "--skip-init-container"}, `--command and --skip-init-container apply to the replica types named by --replica; the job's types are master, worker`},
	} {
		err := f.run(tc.args...)
		if err == nil || err.Error() != tc.wantErr {
			t.Errorf("%v: error %v; want %q", tc.args, err, tc.wantErr)
		}
	}
}

func TestDebugWarnsOfAnUnsplitCommand(t *testing.T) {
	f := newActionFixture(t)
	f.mustRun("debug", "tj/mnist", "--replica", "worker", "--command", "sleep inf")
	want := "Warning: --command \"sleep inf\" is one word; give --command once per word, e.g. --command sleep --command inf\n"
	if got := f.errOut.String(); got != want {
		t.Errorf("stderr %q; want %q", got, want)
	}
}
