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
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

func TestStatusOfASearch(t *testing.T) {
	f := newFixture(t, lrSearch(),
		jobEvent("lr-search", "TuningJob", "uid-lr-search", "CreatedTrial", "Created trial lr-search-4", 3*time.Minute, 1),
		jobEvent("lr-search", "PyTorchTrainingJob", "uid-lr-search", "CreatedPod", "an event of a job of that name", time.Minute, 1),
	)
	want := `Job:              tune/lr-search
Kind:             TuningJob
Namespace:        default
State:            Running
Age:              120m
Duration:         90m
Objective:        minimize loss (last value), goal 0.05
Algorithm:        tpe (seed 42, 3 startup trials)
Early stopping:   asha over steps, rungs at 100, 300, 900, reduction factor 3
Trials:           5/20 made, 2 at once
Counts:           1 running, 1 pending, 1 paused, 1 succeeded, 1 failed (3 allowed), 0 stopped
Best:             lr-search-2 = 0.12 (lr=0.003, optimizer=adam)
Conditions:
  TYPE      STATUS   REASON          AGE   MESSAGE
  Running   True     TrialsRunning   90m   -
Events:
  TYPE     REASON         AGE   FROM                  MESSAGE
  Normal   CreatedTrial   3m    training-controller   Created trial lr-search-4
`
	for _, arg := range []string{"tune/lr-search", "tuningjob/lr-search", "TuningJobs.v1beta1.batch.tensorstack.dev/lr-search"} {
		if out := f.mustRun("status", arg); out != want {
			t.Errorf("status %s:\n%s\nwant:\n%s", arg, out, want)
		}
	}
	for _, action := range f.kube.Actions() {
		if list, ok := action.(clienttesting.ListActionImpl); ok && list.Resource.Resource == "events" {
			if got, want := list.ListOptions.FieldSelector, "involvedObject.kind=TuningJob,involvedObject.name=lr-search"; got != want {
				t.Errorf("events listed with field selector %q; want %q", got, want)
			}
		}
	}
}

// TestStatusOfANewSearch: before the controller sees it, a search is
// Pending, with no best trial; a seed it picked is said to be picked.
func TestStatusOfANewSearch(t *testing.T) {
	job := lrSearch()
	job.Namespace = "team"
	job.Spec.Objective = v1beta1.TuningObjective{Metric: "accuracy", Direction: v1beta1.Maximize,
		TrialValue: v1beta1.TrialValueAtStep, Step: ptr.To[int64](500)}
	job.Spec.Algorithm = v1beta1.TuningAlgorithm{Name: v1beta1.AlgorithmRandom}
	job.Spec.EarlyStopping = &v1beta1.EarlyStopping{MedianStop: &v1beta1.MedianStop{StartStep: 10, MinTrials: 5}}
	job.Spec.MaxFailedTrials = nil
	job.Status = v1beta1.TuningJobStatus{Seed: ptr.To[int64](7)}
	out := newFixture(t, job).mustRun("status", "tune/lr-search", "-n", "team")
	want := `Job:              tune/lr-search
Kind:             TuningJob
Namespace:        team
State:            Pending
Age:              120m
Duration:         -
Objective:        maximize accuracy (value at step 500)
Algorithm:        random (seed 7, picked by the search)
Early stopping:   median stop from step 10, against at least 5 trials
Trials:           0/20 made, 2 at once
Counts:           0 running, 0 pending, 0 paused, 0 succeeded, 0 failed (3 allowed), 0 stopped
Best:             <none>
Conditions:
  <none>
Events:
  <none>
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
}

// TestStatusOfASearchState: the state is the API's rule over the
// conditions.
func TestStatusOfASearchState(t *testing.T) {
	for _, tc := range []struct {
		conditions map[string]metav1.ConditionStatus
		want       string
	}{
		{nil, "Pending"},
		{map[string]metav1.ConditionStatus{"Running": metav1.ConditionTrue}, "Running"},
		{map[string]metav1.ConditionStatus{"Running": metav1.ConditionFalse, "Suspended": metav1.ConditionTrue}, "Suspended"},
		{map[string]metav1.ConditionStatus{"Running": metav1.ConditionFalse, "Failed": metav1.ConditionTrue}, "Failed"},
		{map[string]metav1.ConditionStatus{"Running": metav1.ConditionFalse, "Succeeded": metav1.ConditionTrue}, "Succeeded"},
	} {
		job := lrSearch()
		job.Status.Conditions = nil
		for typ, status := range tc.conditions {
			job.Status.Conditions = append(job.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: "Test"})
		}
		out := newFixture(t, job).mustRun("status", "tune/lr-search")
		if !strings.Contains(out, "\nState:            "+tc.want+"\n") {
			t.Errorf("conditions %v: want state %s in\n%s", tc.conditions, tc.want, out)
		}
	}
}

func TestStatusWatchOfASearch(t *testing.T) {
	job := lrSearch()
	job.ResourceVersion = "1"
	f := newFixture(t, job)
	w := watch.NewFake()
	var watches []clienttesting.WatchActionImpl
	f.training.PrependWatchReactor("tuningjobs", func(action clienttesting.Action) (bool, watch.Interface, error) {
		watches = append(watches, action.(clienttesting.WatchActionImpl))
		return true, w, nil
	})
	go func() {
		changed := job.DeepCopy()
		changed.ResourceVersion = "2"
		changed.Status.BestTrial, changed.Status.BestValue = "lr-search-0", "0.04"
		changed.Status.Conditions = []metav1.Condition{
			{Type: "Running", Status: metav1.ConditionFalse, Reason: "GoalReached", LastTransitionTime: ago(time.Minute)},
			{Type: "Succeeded", Status: metav1.ConditionTrue, Reason: "GoalReached", LastTransitionTime: ago(time.Minute)},
		}
		w.Modify(changed)
	}()
	out := f.mustRun("status", "tune/lr-search", "--watch")

	var states, bests []string
	for _, line := range strings.Split(out, "\n") {
		if state, ok := strings.CutPrefix(line, "State:"); ok {
			states = append(states, strings.TrimSpace(state))
		}
		if best, ok := strings.CutPrefix(line, "Best:"); ok {
			bests = append(bests, strings.TrimSpace(best))
		}
	}
	if want := []string{"Running", "Succeeded"}; !cmp.Equal(states, want) {
		t.Errorf("states shown %v; want %v\n%s", states, want, out)
	}
	if want := []string{"lr-search-2 = 0.12 (lr=0.003, optimizer=adam)", "lr-search-0 = 0.04 (lr=0.01, optimizer=sgd)"}; !cmp.Equal(bests, want) {
		t.Errorf("best trials shown %v; want %v", bests, want)
	}
	if len(watches) != 1 {
		t.Fatalf("%d watches; want 1", len(watches))
	}
	if opts := watches[0].WatchRestrictions; opts.ResourceVersion != "1" || opts.Fields.String() != "metadata.name=lr-search" {
		t.Errorf("watched from version %q with fields %q; want version 1 of metadata.name=lr-search", opts.ResourceVersion, opts.Fields)
	}
}

func TestStatusWatchOfASearchEndsWhenItIsDeleted(t *testing.T) {
	job := lrSearch()
	f := newFixture(t, job)
	w := watch.NewFake()
	f.training.PrependWatchReactor("tuningjobs", func(clienttesting.Action) (bool, watch.Interface, error) { return true, w, nil })
	go w.Delete(job)
	out := f.mustRun("status", "tune/lr-search", "-w")
	if !strings.HasSuffix(out, "\ntune/lr-search was deleted\n") {
		t.Errorf("output ends %q; want it to say the search was deleted", out[max(0, len(out)-60):])
	}
}

func TestStatusOfASearchErrors(t *testing.T) {
	f := newFixture(t, lrSearch())
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"status", "tune/missing"}, `getting tune/missing in namespace "default": tuningjobs.batch.tensorstack.dev "missing" not found`},
		{[]string{"status", "tune/"}, `"tune/" is not a search: name one as tune/NAME`},
		{[]string{"status", "tuningjobs.kubeflow.org/lr-search"}, `"tuningjobs.kubeflow.org" is not a training job kind`},
		// A plain name is a training job's.
		{[]string{"status", "lr-search"}, "no " + everyKind() + ` named "lr-search" in namespace "default"`},
	} {
		err := f.run(tc.args...)
		if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
			t.Errorf("%v: error %v; want %q", tc.args, err, tc.wantErr)
		}
	}
}

func TestTuningJobNamed(t *testing.T) {
	for word, want := range map[string]bool{
		"tune": true, "TUNE": true, "tuningjob": true, "tuningjobs": true, "TuningJob": true,
		"tuningjobs.batch.tensorstack.dev": true, "tune.v1beta1.batch.tensorstack.dev": true,
		"tuningjobs.kubeflow.org": false, "pj": false, "tunes": false, "": false,
	} {
		if got := tuningJobNamed(word); got != want {
			t.Errorf("tuningJobNamed(%q) = %v; want %v", word, got, want)
		}
	}
}
