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
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// slowReconcileSeconds is the bucket of the reconcile histogram a
// reconcile that waited on a log read passes: a read that hangs takes the
// controller's 5 s timeout, and the job has two replicas to read.
const slowReconcileSeconds = 4.096

// reconcileLatency is what the controller's histogram says of one kind's
// reconciles: how many, their total seconds, and how many took longer
// than slowReconcileSeconds.
type reconcileLatency struct {
	count, sum, slow float64
}

func (a reconcileLatency) minus(b reconcileLatency) reconcileLatency {
	return reconcileLatency{count: a.count - b.count, sum: a.sum - b.sum, slow: a.slow - b.slow}
}

func scrapeReconcileLatency(f *framework.Framework, token, kind string) reconcileLatency {
	f.T.Helper()
	ctx, cancel := context.WithTimeout(f.Context(), 30*time.Second)
	defer cancel()
	sc, err := fetchMetrics(ctx, controllerMetricsURL(f), token)
	if err != nil {
		f.T.Fatal(err)
	}
	const name = "training_controller_reconcile_duration_seconds"
	var l reconcileLatency
	var within float64
	for _, s := range sc.Samples {
		if s.Labels["kind"] != kind {
			continue
		}
		switch s.Name {
		case name + "_count":
			l.count += s.Value
		case name + "_sum":
			l.sum += s.Value
		case name + "_bucket":
			if le, err := strconv.ParseFloat(s.Labels["le"], 64); err == nil && le == slowReconcileSeconds {
				within += s.Value
			}
		}
	}
	l.slow = l.count - within
	return l
}

// TestRealNodeStallOnAFrozenNode: a job stalls on a node whose kubelet has
// stopped answering (frozen: its connections stay open, as on a node cut
// off). The controller still fails the job for its stall, with a log error
// for each replica whose last lines it could not read, and no reconcile
// waits for the node: the reads run off the reconcile's path.
func TestRealNodeStallOnAFrozenNode(t *testing.T) {
	f := onRealNode(t, "real-stall-frozen")
	if f.Env.Restart == "" {
		t.Skip("needs E2E_RESTART to freeze the kubelet")
	}
	checkpointClaim(f)
	// Long enough for the first report of ranks that start while other
	// tests load the machine: the stall it waits for comes after the freeze.
	const deadline = 60 * time.Second
	applyJob(f, ddpCheckpointJob("stall", 5).
		Env("STEPS", "20").Env("STEP_SECONDS", "0.5").Env("CHECKPOINT_EVERY", "5").Env("HANG_AT_STEP", "3").
		BackoffLimit(2).ProgressDeadline(int64(deadline.Seconds())).StallPolicy(v1beta1.StallPolicyFail))
	ref := f.Ref(framework.KindPyTorch, "stall")
	// The ranks are up and reporting: their pods run, as the kubelet said.
	f.WaitForJob(ref, "progress reported", realNodeTimeout, func(job v1beta1.TrainingJob) (bool, error) {
		p := job.JobStatus().Progress
		return p != nil && ptr.Deref(p.Step, 0) >= 1, nil
	})
	nodes := sets.New[string]()
	for _, p := range f.Pods(ref) {
		nodes.Insert(p.Spec.NodeName)
	}
	token := scraperToken(f, "frozen-node-scraper", true)
	before := scrapeReconcileLatency(f, token, string(framework.KindPyTorch))
	frozen := time.Now()
	for _, node := range sets.List(nodes) {
		f.RestartComponent("--freeze", "kubelet-"+node)
		t.Cleanup(func() { f.RestartComponent("--thaw", "kubelet-"+node) })
	}

	job := f.WaitForJob(ref, "phase Failed", realNodeTimeout, func(job v1beta1.TrainingJob) (bool, error) {
		return job.JobStatus().Phase == v1beta1.JobFailed, nil
	})
	t.Logf("Failed %s after the kubelets of %v froze (deadline %s)", time.Since(frozen).Round(time.Second), sets.List(nodes), deadline)
	if c := framework.Condition(job, v1beta1.ConditionFailed); c == nil || c.Reason != "Stalled" {
		t.Errorf("Failed condition %+v, want reason Stalled", c)
	}
	st := job.JobStatus()
	if st.Stall == nil || len(st.Stall.Logs) != 2 {
		t.Fatalf("status.stall %+v: want a tail for each of the 2 replicas", st.Stall)
	}
	for _, l := range st.Stall.Logs {
		if l.Error == "" {
			t.Errorf("replica %s: log %q with no error, though its kubelet was frozen", l.Name, l.Lines)
		}
		t.Logf("replica %s: %s", l.Name, l.Error)
	}

	during := scrapeReconcileLatency(f, token, string(framework.KindPyTorch)).minus(before)
	mean := time.Duration(0)
	if during.count > 0 {
		mean = time.Duration(during.sum / during.count * float64(time.Second))
	}
	t.Logf("while the node was frozen: %.0f reconciles of %s, mean %s, %.0f over %.3fs",
		during.count, string(framework.KindPyTorch), mean.Round(time.Microsecond), during.slow, slowReconcileSeconds)
	if during.slow > 0 {
		t.Errorf("%.0f reconciles took over %.3fs while a node did not answer: a worker waited on a log read (%.0f reconciles, %.1fs in all)",
			during.slow, slowReconcileSeconds, during.count, during.sum)
	}
}
