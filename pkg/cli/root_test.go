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
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func newCompletionFixture(t *testing.T) *fixture {
	other := tfJob("elsewhere", replicas("worker", 1))
	other.Namespace = "team"
	return newFixture(t,
		tfJob("mnist", replicas("chief", 1, "tensorflow"), replicas("worker", 2, "tensorflow")),
		ptJob("resnet", replicas("master", 1, "pytorch"), replicas("worker", 1, "pytorch")),
		tfJob("twin", replicas("worker", 1)),
		ptJob("twin", replicas("master", 1)),
		other,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}},
	)
}

// complete returns the candidates cobra's __complete prints, without the
// trailing directive line.
func (f *fixture) complete(args ...string) []string {
	f.t.Helper()
	out := f.mustRun(append([]string{"__complete"}, args...)...)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if directive := lines[len(lines)-1]; !strings.HasPrefix(directive, ":") {
		f.t.Fatalf("__complete %v: no directive in %q", args, out)
	}
	return lines[:len(lines)-1]
}

func TestCompletion(t *testing.T) {
	f := newCompletionFixture(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"pause", ""}, "mnist pj/twin resnet tj/twin"},
		{[]string{"status", "m"}, "mnist"},
		{[]string{"resume", "pj/"}, "pj/resnet pj/twin"},
		{[]string{"debug", "tensorflowtrainingjob/"}, "tensorflowtrainingjob/mnist tensorflowtrainingjob/twin"},
		{[]string{"pause", "-n", "team", ""}, "elsewhere"},
		{[]string{"pause", "mnist", ""}, ""},
		{[]string{"logs", "mnist", ""}, "chief-0 worker-0 worker-1"},
		{[]string{"logs", "resnet", "w"}, "worker-0"},
		{[]string{"debug", "mnist", "--replica", ""}, "chief worker"},
		{[]string{"pause", "mnist", "--dry-run="}, "none server client"},
		{[]string{"status", "-n", ""}, "default team"},
	} {
		if got := strings.Join(f.complete(tc.args...), " "); got != tc.want {
			t.Errorf("completing %v: %q; want %q", tc.args, got, tc.want)
		}
	}
}

func TestCompletionScripts(t *testing.T) {
	f := newFixture(t)
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		if out := f.mustRun("completion", shell); !strings.Contains(out, "kubectl-training") {
			t.Errorf("completion %s: no script for kubectl-training", shell)
		}
	}
}

func TestVersion(t *testing.T) {
	f := newFixture(t)
	out := f.mustRun("version")
	if want := fmt.Sprintf("kubectl-training v0.0.0-dev (%s, %s/%s)\n", runtime.Version(), runtime.GOOS, runtime.GOARCH); out != want {
		t.Errorf("version: %q; want %q", out, want)
	}
}

func TestErrorMessage(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "batch.tensorstack.dev", Resource: "pytorchtrainingjobs"}, "x")
	for err, want := range map[error]string{
		errors.New("bad flag"):                   "error: bad flag",
		fmt.Errorf("getting pj/x: %w", notFound): `Error from server (NotFound): getting pj/x: pytorchtrainingjobs.batch.tensorstack.dev "x" not found`,
		jobNotFound("x", "ns"):                   `Error from server (NotFound): ` + "no " + everyKind() + " named " + `"x" in namespace "ns"`,
	} {
		if got := ErrorMessage(err); got != want {
			t.Errorf("ErrorMessage(%v) = %q; want %q", err, got, want)
		}
	}
}
