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
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// trial is a trial of lr-search with its lr and optimizer.
func trial(index int32, state v1beta1.TrialState, value string, progress *int64, lr, optimizer string) v1beta1.TrialStatus {
	return v1beta1.TrialStatus{
		Name: batch.TrialName("lr-search", index), Index: index, State: state, Value: value, Progress: progress,
		Parameters: []v1beta1.ParameterValue{{Name: "lr", Value: lr}, {Name: "optimizer", Value: optimizer}},
	}
}

// lrSearch is a running tpe search under asha: one trial ahead of the
// rest, one paused at a rung, one failed and one not yet started.
func lrSearch() *v1beta1.TuningJob {
	job := &v1beta1.TuningJob{ObjectMeta: jobMeta("lr-search")}
	job.Spec = v1beta1.TuningJobSpec{
		Parameters: []v1beta1.TuningParameter{
			{Name: "lr", Type: v1beta1.ParameterDouble, Min: "0.0001", Max: "0.1", LogScale: true},
			{Name: "optimizer", Type: v1beta1.ParameterCategorical, Values: []string{"adam", "sgd"}},
		},
		Objective: v1beta1.TuningObjective{Metric: "loss", Direction: v1beta1.Minimize, Goal: "0.05", TrialValue: v1beta1.TrialValueLast},
		Algorithm: v1beta1.TuningAlgorithm{Name: v1beta1.AlgorithmTPE, Seed: ptr.To[int64](42), StartupTrials: 3},
		EarlyStopping: &v1beta1.EarlyStopping{ASHA: &v1beta1.ASHA{
			Resource: v1beta1.ResourceSteps, MinResource: 100, ReductionFactor: 3, Rungs: 3}},
		ParallelTrials: 2, MaxTrials: 20, MaxFailedTrials: ptr.To[int32](3),
	}
	succeeded := trial(0, v1beta1.TrialSucceeded, "0.31", ptr.To[int64](900), "0.01", "sgd")
	succeeded.Rung = 3
	paused := trial(1, v1beta1.TrialPaused, "0.52", ptr.To[int64](100), "0.05", "adam")
	paused.Rung, paused.Message = 1, "paused at rung 1 (100 steps): not in the best 1/3"
	best := trial(2, v1beta1.TrialRunning, "0.12", ptr.To[int64](450), "0.003", "adam")
	best.Rung, best.Promotions = 2, 1
	failed := trial(3, v1beta1.TrialFailed, "", nil, "0.0002", "sgd")
	failed.Message = "the job failed: BackoffLimitExceeded"
	job.Status = v1beta1.TuningJobStatus{
		Conditions: []metav1.Condition{
			{Type: "Running", Status: metav1.ConditionTrue, Reason: "TrialsRunning", LastTransitionTime: ago(90 * time.Minute)},
		},
		StartTime: ptr.To(ago(90 * time.Minute)),
		// In the order they were made, the best third.
		Trials:    []v1beta1.TrialStatus{succeeded, paused, best, failed, trial(4, v1beta1.TrialPending, "", nil, "0.08", "adam")},
		Counts:    v1beta1.TrialCounts{Pending: 1, Running: 1, Paused: 1, Succeeded: 1, Failed: 1},
		BestTrial: "lr-search-2",
		BestValue: "0.12",
	}
	return job
}

func TestTrials(t *testing.T) {
	f := newFixture(t, lrSearch())
	want := `TRIAL          STATE       VALUE   PROGRESS   RUNG   PROMOTIONS   lr       optimizer
lr-search-2*   Running     0.12    450        2/3    1            0.003    adam
lr-search-0    Succeeded   0.31    900        3/3    0            0.01     sgd
lr-search-1    Paused      0.52    100        1/3    0            0.05     adam
lr-search-3    Failed      -       -          0/3    0            0.0002   sgd
lr-search-4    Pending     -       -          0/3    0            0.08     adam
`
	for _, arg := range []string{"lr-search", "tune/lr-search", "tuningjobs.batch.tensorstack.dev/lr-search"} {
		if out := f.mustRun("trials", arg); out != want {
			t.Errorf("trials %s:\n%s\nwant:\n%s", arg, out, want)
		}
	}

	out := f.mustRun("trials", "lr-search", "-o", "wide")
	want = `TRIAL          STATE       VALUE   PROGRESS   RUNG   PROMOTIONS   lr       optimizer   MESSAGE
lr-search-2*   Running     0.12    450        2/3    1            0.003    adam        -
lr-search-0    Succeeded   0.31    900        3/3    0            0.01     sgd         -
lr-search-1    Paused      0.52    100        1/3    0            0.05     adam        paused at rung 1 (100 steps): not in the best 1/3
lr-search-3    Failed      -       -          0/3    0            0.0002   sgd         the job failed: BackoffLimitExceeded
lr-search-4    Pending     -       -          0/3    0            0.08     adam        -
`
	if out != want {
		t.Errorf("trials -o wide:\n%s\nwant:\n%s", out, want)
	}
}

// TestTrialsOfAMaximizingSearch: the largest value comes first; without
// asha, RUNG and PROMOTIONS have nothing to say.
func TestTrialsOfAMaximizingSearch(t *testing.T) {
	job := lrSearch()
	job.Spec.Objective = v1beta1.TuningObjective{Metric: "accuracy", Direction: v1beta1.Maximize}
	job.Spec.EarlyStopping = nil
	// A value that is no number sorts with the trials without one.
	job.Status.Trials[3].Value = "NaN"
	job.Status.BestTrial = "lr-search-1"
	job.Namespace = "team"
	f := newFixture(t, job)
	out := f.mustRun("trials", "lr-search", "-n", "team")
	want := `TRIAL          STATE       VALUE   PROGRESS   RUNG   PROMOTIONS   lr       optimizer
lr-search-1*   Paused      0.52    100        -      -            0.05     adam
lr-search-0    Succeeded   0.31    900        -      -            0.01     sgd
lr-search-2    Running     0.12    450        -      -            0.003    adam
lr-search-3    Failed      NaN     -          -      -            0.0002   sgd
lr-search-4    Pending     -       -          -      -            0.08     adam
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
}

func TestTrialsAsJSON(t *testing.T) {
	f := newFixture(t, lrSearch())
	out := f.mustRun("trials", "lr-search", "-o", "json")
	var trials []v1beta1.TrialStatus
	if err := json.Unmarshal([]byte(out), &trials); err != nil {
		t.Fatalf("-o json printed no JSON list of trials: %v\n%s", err, out)
	}
	var names []string
	for _, trial := range trials {
		names = append(names, trial.Name)
	}
	if want := []string{"lr-search-2", "lr-search-0", "lr-search-1", "lr-search-3", "lr-search-4"}; !cmp.Equal(names, want) {
		t.Errorf("trials in the order %v; want the table's, %v", names, want)
	}
	if !cmp.Equal(trials[0], lrSearch().Status.Trials[2]) {
		t.Errorf("the best trial printed differs from its status: %s", cmp.Diff(lrSearch().Status.Trials[2], trials[0]))
	}
}

func TestTrialsOfANewSearch(t *testing.T) {
	job := lrSearch()
	job.Status = v1beta1.TuningJobStatus{}
	f := newFixture(t, job)
	if out := f.mustRun("trials", "lr-search"); out != "" || f.errOut.String() != "tune/lr-search has no trials yet.\n" {
		t.Errorf("stdout %q, stderr %q; want only a note that there are no trials", out, f.errOut.String())
	}
	if out := f.mustRun("trials", "lr-search", "-o", "json"); out != "[]\n" {
		t.Errorf("-o json: %q; want an empty list", out)
	}
}

func TestTrialsErrors(t *testing.T) {
	f := newFixture(t, lrSearch(), runningPyTorchJob())
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"trials", "missing"}, `getting tune/missing in namespace "default": tuningjobs.batch.tensorstack.dev "missing" not found`},
		{[]string{"trials", "pj/resnet"}, `"pj/resnet" is not a search: name one as NAME or tune/NAME`},
		{[]string{"trials", "tune/"}, `"tune/" is not a search: name one as tune/NAME`},
		{[]string{"trials", "tune/Bad_Name"}, `"Bad_Name" is not a search name`},
		{[]string{"trials", "lr-search", "-o", "yaml"}, `invalid -o "yaml": must be wide or json`},
		{[]string{"trials"}, `accepts 1 arg(s), received 0`},
	} {
		err := f.run(tc.args...)
		if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
			t.Errorf("%v: error %v; want %q", tc.args, err, tc.wantErr)
		}
	}
}

func TestTrialsCompletion(t *testing.T) {
	other := lrSearch()
	other.Name = "batch-search"
	f := newFixture(t, lrSearch(), other, runningPyTorchJob())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"trials", ""}, "batch-search lr-search"},
		{[]string{"trials", "l"}, "lr-search"},
		{[]string{"trials", "tune/"}, "tune/batch-search tune/lr-search"},
		{[]string{"trials", "pj/"}, ""},
		{[]string{"trials", "lr-search", ""}, ""},
		{[]string{"trials", "lr-search", "-o", ""}, "wide json"},
		{[]string{"status", "tune/l"}, "tune/lr-search"},
		{[]string{"status", "tuningjob/"}, "tuningjob/batch-search tuningjob/lr-search"},
		{[]string{"status", "r"}, "resnet"},
	} {
		if got := strings.Join(f.complete(tc.args...), " "); got != tc.want {
			t.Errorf("completing %v: %q; want %q", tc.args, got, tc.want)
		}
	}
}
