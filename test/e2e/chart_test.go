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
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// TestStatusDrawsTheLossInATerminal reports a falling loss four times, then
// runs `kubectl training status` in a tmux window, as a user at a terminal
// would, and reads the window: the chart of the loss is there.
func TestStatusDrawsTheLossInATerminal(t *testing.T) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux is not installed")
	}
	t.Parallel()
	f := framework.New(t, "chart")
	job := f.Create(framework.NewPyTorchJob("curve").WithReplicas("worker", 1).Forever("worker"))
	f.WaitForPhase(job, v1beta1.JobRunning)

	// The server stores a job's progress at most once per write interval:
	// each report waits until the one before is stored.
	losses := []string{"2.0", "1.5", "1.0", "0.5"}
	for i, loss := range losses {
		if _, err := f.Training.BatchV1beta1().PyTorchTrainingJobs(f.Namespace).ReportProgress(f.Context(), job.Name,
			&v1beta1.ProgressReport{ProgressValues: v1beta1.ProgressValues{
				Step: ptr.To(int64(10 * (i + 1))), TotalSteps: ptr.To[int64](100),
				Metrics: []v1beta1.ProgressMetric{{Name: "loss", Value: loss}},
			}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.WaitForJob(job, fmt.Sprintf("%d samples in status.progress.history", i+1), time.Minute, func(j v1beta1.TrainingJob) (bool, error) {
			p := j.JobStatus().Progress
			return p != nil && len(p.History) == i+1, nil
		})
	}

	// A tmux server of the test's own (-L), so that nobody else's is touched,
	// with its socket in the test's directory rather than /tmp/tmux-<uid>,
	// which tmux would leave behind.
	socket := f.Namespace
	socketDir := t.TempDir()
	tmuxCommand := func(args ...string) *exec.Cmd {
		cmd := exec.Command(tmux, append([]string{"-L", socket}, args...)...)
		cmd.Env = append(os.Environ(), "TMUX_TMPDIR="+socketDir)
		return cmd
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := tmuxCommand(args...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	kubectlDir := filepath.Dir(f.Env.Kubectl)
	command := fmt.Sprintf("PATH=%s:$PATH KUBECONFIG=%s %s training status %s -n %s; sleep 300",
		kubectlDir, f.Env.Kubeconfig, f.Env.Kubectl, job.Name, f.Namespace)
	run("new-session", "-d", "-s", "status", "-x", "120", "-y", "50", "/bin/sh", "-c", command)
	t.Cleanup(func() { _ = tmuxCommand("kill-server").Run() })

	want := strings.Join([]string{
		"Chart:       loss, last 4 reports, steps 10 to 40",
		"    2 |*",
		"      |",
		"      | *",
		"      |  *",
		"      |",
		"  0.5 |   *",
	}, "\n")
	var screen string
	err = framework.Eventually(30*time.Second, "the chart in the tmux window", func(context.Context) (bool, error) {
		screen = run("capture-pane", "-p", "-t", "status")
		return strings.Contains(screen, want), nil
	})
	if err != nil {
		t.Fatalf("%v\nthe window shows:\n%s\nwant it to contain:\n%s", err, screen, want)
	}
	t.Logf("the tmux window:\n%s", strings.TrimRight(screen, "\n"))
}
