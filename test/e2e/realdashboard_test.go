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
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"tensorstack.dev/training/internal/skips"
	"tensorstack.dev/training/test/e2e/framework"
)

// dashboardBrowserTest is the browser side of TestRealNodeDashboard,
// relative to the repository.
const dashboardBrowserTest = "pkg/dashboard/ui/test/realnodes.test.mjs"

// TestRealNodeDashboard runs the dashboard's real-node browser test
// (dashboardBrowserTest, in Debian's Chromium) against a DDP job with the
// checkpoint contract: the test holds the real nodes, and the browser test
// creates the job from the page's point of view, follows it, pauses and
// resumes it from the page.
func TestRealNodeDashboard(t *testing.T) {
	f := onRealNode(t, "real-dashboard")
	node := requireBrowser(t, f)
	checkpointClaim(f)
	const name = "ddp"
	// 80 steps: the page pauses the job after watching its progress and log
	// for a while, and the run must not be over by then on a loaded machine.
	manifest := f.WriteFile("job.json", ddpCheckpointJob(name, 20).Env("STEPS", "80").Env("STEP_SECONDS", "0.5").Manifest(f.Namespace))

	cmd := exec.CommandContext(f.ContextWithin(2*realNodeTimeout), node, "--test", "--test-reporter=spec", filepath.Join(f.Env.RepoRoot, dashboardBrowserTest))
	cmd.Dir = f.Env.RepoRoot
	cmd.Env = append(os.Environ(),
		"REPO_ROOT="+f.Env.RepoRoot,
		"KUBECONFIG="+f.Env.Kubeconfig,
		"DASHBOARD_NAMESPACE="+f.Namespace,
		"DASHBOARD_JOB="+name,
		"DASHBOARD_JOB_MANIFEST="+manifest,
	)
	out, err := cmd.CombinedOutput()
	t.Logf("%s:\n%s", dashboardBrowserTest, out)
	if err != nil {
		t.Fatalf("the dashboard's browser test failed (%v); the job: %s", err, f.DumpJob(f.Ref(framework.KindPyTorch, name)))
	}
}

// requireBrowser returns Node.js's path once the browser test can run here:
// Node.js, Debian's Chromium, and the front end's packages (hack/test-e2e.sh
// makes sure of them, as make test-dashboard does). Else it skips the test,
// or fails it under CI=true.
func requireBrowser(t *testing.T, f *framework.Framework) string {
	t.Helper()
	node, err := exec.LookPath("node")
	missing := ""
	switch {
	case err != nil:
		missing = "Node.js"
	case !fileExists("/usr/bin/chromium"):
		missing = "Debian's chromium"
	case !fileExists(filepath.Join(f.Env.RepoRoot, "pkg/dashboard/ui/node_modules/playwright-core")):
		missing = "the front end's npm packages (make dashboard)"
	}
	if missing != "" {
		skips.Test(t, "test-e2e", "the dashboard's real-node browser test needs "+missing, skips.RequireRealNodes)
	}
	return node
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
