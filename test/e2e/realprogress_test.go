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
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// progressSample is one stored report, as a watcher of the job saw it.
type progressSample struct {
	percent   int32
	remaining time.Duration // estimated finish time less report time; <0 without an estimate
}

// progressSeen is what followProgress saw of a job's reports.
type progressSeen struct {
	samples []progressSample
	// row is kubectl get -o wide's row for the job, taken once while the
	// job reported a share between 0 and 100% and had an estimate.
	row map[string]string
	job v1beta1.TrainingJob
}

// followProgress waits until the job succeeded, sampling every stored
// progress report on the way.
func followProgress(t *testing.T, f *framework.Framework, ref framework.JobRef) progressSeen {
	t.Helper()
	var seen progressSeen
	var last time.Time
	seen.job = f.WaitForJob(ref, "Succeeded, reporting its progress", realNodeTimeout, func(job v1beta1.TrainingJob) (bool, error) {
		status := job.JobStatus()
		if status.Phase == v1beta1.JobFailed {
			return false, framework.Stop("the job failed: %s", f.DumpJob(ref))
		}
		if p := status.Progress; p != nil && p.ReportTime != nil && !p.ReportTime.Time.Equal(last) {
			last = p.ReportTime.Time
			s := progressSample{percent: ptr.Deref(p.Percent, -1), remaining: -1}
			if p.EstimatedFinishTime != nil {
				s.remaining = p.EstimatedFinishTime.Sub(p.ReportTime.Time)
			}
			seen.samples = append(seen.samples, s)
			if seen.row == nil && s.percent > 0 && s.percent < 100 && s.remaining >= 0 && !status.Phase.IsFinished() {
				seen.row = parseTable(t, f.MustKubectl("get", ref.KubectlName(), "-o", "wide")).row(t, ref.Name)
			}
		}
		return status.Phase == v1beta1.JobSucceeded, nil
	})
	return seen
}

var percentCell = regexp.MustCompile(`^(\d+)%$`)

// checkDDPProgress: the DDP example's rank 0 reported every step through
// the helper in the image: the job's progress reached 100% as it
// succeeded, the estimated time left fell while it ran, kubectl get showed
// the progress, the time left and the loss, and kubectl describe shows the
// last report.
func checkDDPProgress(t *testing.T, f *framework.Framework, ref framework.JobRef, seen progressSeen) {
	t.Helper()
	p := seen.job.JobStatus().Progress
	if p == nil || ptr.Deref(p.Percent, 0) != 100 || ptr.Deref(p.Step, 0) != 40 || ptr.Deref(p.TotalSteps, 0) != 40 {
		t.Fatalf("final status.progress %+v, want step 40 of 40 at 100%%", p)
	}
	if p.Reporter != ref.Name+"-node-0" || len(p.Metrics) != 1 || p.Metrics[0].Name != "loss" {
		t.Errorf("final report %+v, want the loss reported by rank 0's pod %s-node-0", p, ref.Name)
	}
	var remaining []time.Duration
	for _, s := range seen.samples {
		if s.remaining >= 0 && s.percent < 100 {
			remaining = append(remaining, s.remaining)
		}
	}
	t.Logf("%d stored reports; time left by the estimates while running: %v", len(seen.samples), remaining)
	if len(remaining) < 2 {
		t.Errorf("%d estimates while running, want at least 2 (the example reports for about 20s, stored every %s)", len(remaining), progressWriteInterval)
	} else if first, last := remaining[0], remaining[len(remaining)-1]; last >= first {
		t.Errorf("estimated time left went from %s to %s, want it to fall", first, last)
	}
	if seen.row == nil {
		t.Fatalf("kubectl get was never taken while the job was between 0 and 100%%")
	}
	n := -1
	if m := percentCell.FindStringSubmatch(seen.row["PROGRESS"]); m != nil {
		n, _ = strconv.Atoi(m[1])
	}
	if n <= 0 || n >= 100 {
		t.Errorf("kubectl get -o wide while running: PROGRESS %q, want a share between 0 and 100%%", seen.row["PROGRESS"])
	}
	if eta := seen.row["ETA"]; eta == "" || eta == "<none>" {
		t.Errorf("kubectl get -o wide while running: no ETA in %v", seen.row)
	}
	if !strings.HasPrefix(seen.row["METRIC"], "loss=") {
		t.Errorf("kubectl get -o wide while running: METRIC %q, want loss=...", seen.row["METRIC"])
	}
	if row := parseTable(t, f.MustKubectl("get", ref.KubectlName())).row(t, ref.Name); row["PROGRESS"] != "100%" {
		t.Errorf("kubectl get after the job succeeded: PROGRESS %q, want 100%%", row["PROGRESS"])
	}
	describe := f.MustKubectl("describe", ref.KubectlName())
	for _, want := range []string{"Progress:", "Reporter:", ref.Name + "-node-0", "Total Steps:", "Coalesced Reports:"} {
		if !strings.Contains(describe, want) {
			t.Errorf("kubectl describe lacks %q:\n%s", want, describe)
		}
	}
}
