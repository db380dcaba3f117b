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

package tuning

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/reference"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/tuning"
)

// simJob is a trial's job in a simulated cluster: it trains stepsPerTick
// steps a tick while it runs, and reports its loss at every step.
type simJob struct {
	params     []v1beta1.ParameterValue
	phase      v1beta1.JobPhase
	paused     bool
	step       int64
	checkpoint *int64
	reports    []tuning.Sample
	// sinceStart counts the ticks the job trained since it last started.
	sinceStart int
	// resumedAt is the step of its last resume, -1 before any.
	resumedAt int64
}

// world is the simulated cluster the planner drives.
type world struct {
	t               *testing.T
	jobs            map[string]*simJob
	creates         map[string]int
	totalSteps      int64
	stepsPerTick    int64
	checkpoints     bool
	metric          string
	fail            bool
	maxRunning      int
	resumedFromStep map[string][]int64
}

func newWorld(t *testing.T) *world {
	return &world{t: t, jobs: map[string]*simJob{}, creates: map[string]int{}, totalSteps: 90, stepsPerTick: 5,
		checkpoints: true, metric: "loss", resumedFromStep: map[string][]int64{}}
}

// lossOf is the known objective: best at lr 0.01, falling with the steps.
func lossOf(params []v1beta1.ParameterValue, step int64) float64 {
	lr, _ := strconv.ParseFloat(params[0].Value, 64)
	return math.Pow(math.Log10(lr)+2, 2) + 10/(10+float64(step))
}

func (w *world) observe(search *v1beta1.TuningJob) map[string]observation {
	out := map[string]observation{}
	for name, j := range w.jobs {
		o := observation{exists: true, phase: j.phase, paused: j.paused, checkpointPolicy: w.checkpoints, checkpointStep: j.checkpoint,
			judgeable: j.phase == v1beta1.JobRunning && !j.paused && j.sinceStart > 0}
		// The last 30 reports, as status.progress.history holds them.
		recent := j.reports[max(0, len(j.reports)-30):]
		for _, r := range recent {
			if w.metric == search.Spec.Objective.Metric {
				o.samples = append(o.samples, r)
			}
		}
		if len(recent) > 0 {
			o.metrics = []string{w.metric}
		}
		if j.phase == v1beta1.JobFailed {
			o.failure = "exit code 1"
		}
		out[name] = o
	}
	return out
}

func (w *world) apply(search *v1beta1.TuningJob, actions []action) {
	for _, a := range actions {
		switch a.kind {
		case actCreate:
			w.creates[a.trial]++
			if w.creates[a.trial] > 1 {
				w.t.Fatalf("trial %s created %d times", a.trial, w.creates[a.trial])
			}
			i := slices.IndexFunc(search.Status.Trials, func(t v1beta1.TrialStatus) bool { return t.Name == a.trial })
			w.jobs[a.trial] = &simJob{params: search.Status.Trials[i].Parameters, phase: v1beta1.JobPending, resumedAt: -1}
		case actPause:
			j := w.jobs[a.trial]
			j.paused = true
			if w.checkpoints {
				j.checkpoint = ptr.To(j.step)
			}
			if j.resumedAt >= 0 && j.step <= j.resumedAt {
				w.t.Errorf("trial %s paused again at step %d, before training past %d, where it resumed", a.trial, j.step, j.resumedAt)
			}
			// The pod trains on while it stops, past the checkpoint and
			// even past the next rung; those reports stay in its history.
			for range 12 {
				j.step++
				j.reports = append(j.reports, tuning.Sample{Progress: j.step, Value: lossOf(j.params, j.step)})
			}
		case actResume:
			j := w.jobs[a.trial]
			j.paused, j.sinceStart, j.phase = false, 0, v1beta1.JobPending
			j.step = 0
			if j.checkpoint != nil {
				j.step = *j.checkpoint
				w.resumedFromStep[a.trial] = append(w.resumedFromStep[a.trial], j.step)
			}
			j.resumedAt = j.step
		}
	}
}

// tick runs every job that runs for stepsPerTick steps.
func (w *world) tick() {
	running := 0
	for _, j := range w.jobs {
		if j.paused || j.phase.IsFinished() {
			continue
		}
		running++
		if j.phase == v1beta1.JobPending {
			// Starting (again) takes a tick: the pod runs, nothing trained yet.
			j.phase = v1beta1.JobRunning
			continue
		}
		j.sinceStart++
		if w.fail {
			j.phase = v1beta1.JobFailed
			continue
		}
		for range w.stepsPerTick {
			j.step++
			j.reports = append(j.reports, tuning.Sample{Progress: j.step, Value: lossOf(j.params, j.step)})
			if j.step >= w.totalSteps {
				j.phase = v1beta1.JobSucceeded
				break
			}
		}
	}
	w.maxRunning = max(w.maxRunning, running)
}

func ashaSearch() *v1beta1.TuningJob {
	return &v1beta1.TuningJob{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", UID: "uid-1", Generation: 1},
		Spec: v1beta1.TuningJobSpec{
			Parameters: []v1beta1.TuningParameter{
				{Name: "lr", Type: v1beta1.ParameterDouble, Min: "0.0001", Max: "1", LogScale: true},
			},
			Objective:       v1beta1.TuningObjective{Metric: "loss", Direction: v1beta1.Minimize, TrialValue: v1beta1.TrialValueLast},
			Algorithm:       v1beta1.TuningAlgorithm{Name: v1beta1.AlgorithmRandom},
			EarlyStopping:   &v1beta1.EarlyStopping{ASHA: &v1beta1.ASHA{Resource: v1beta1.ResourceSteps, MinResource: 10, ReductionFactor: 2, Rungs: 3}},
			ParallelTrials:  2,
			MaxTrials:       8,
			MaxFailedTrials: ptr.To[int32](3),
		},
	}
}

// run drives the search until it ends or ticks run out. Every lose-th
// round the actions are lost, as when the controller stops between the
// status write and the calls that follow it.
func run(t *testing.T, w *world, search *v1beta1.TuningJob, ticks, lose int) {
	t.Helper()
	now := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	for i := range ticks {
		status, actions, _, err := plan(search, 1, w.observe(search), metav1.NewTime(now))
		if err != nil {
			t.Fatal(err)
		}
		search.Status = *status
		if lose == 0 || i%lose != lose-1 {
			w.apply(search, actions)
		}
		if batch.TuningFinished(internalConditions(status)) {
			return
		}
		w.tick()
		now = now.Add(time.Minute)
	}
	t.Fatalf("the search did not end in %d ticks: %+v", ticks, search.Status.Counts)
}

func internalConditions(s *v1beta1.TuningJobStatus) *batch.TuningJobStatus {
	return &batch.TuningJobStatus{Conditions: s.Conditions}
}

// TestASHAPausesAndPromotes: eight trials, two at a time, three rungs: the
// search ends Succeeded with eight trials, never runs more than two, pauses
// trials at rungs, resumes a promoted one from its checkpoint, and finds a
// best trial better than the median; even when the actions of every third
// round are lost, no trial is created twice.
func TestASHAPausesAndPromotes(t *testing.T) {
	for _, lose := range []int{0, 3} {
		w := newWorld(t)
		search := ashaSearch()
		run(t, w, search, 500, lose)
		st := &search.Status
		if c := meta.FindStatusCondition(st.Conditions, batch.TuningSucceeded); c == nil || c.Reason != ReasonTrialsSpent {
			t.Fatalf("lose %d: conditions %+v, want Succeeded TrialsSpent", lose, st.Conditions)
		}
		if len(st.Trials) != 8 || len(w.creates) != 8 {
			t.Errorf("lose %d: %d trials, %d jobs created, want 8", lose, len(st.Trials), len(w.creates))
		}
		if w.maxRunning > 2 {
			t.Errorf("lose %d: %d trials ran at once, parallelTrials is 2", lose, w.maxRunning)
		}
		paused, promoted := 0, 0
		var values []float64
		for _, tr := range st.Trials {
			if tr.Rung > 0 && tr.State == v1beta1.TrialStopped {
				paused++
			}
			if tr.Promotions > 0 {
				promoted++
				if len(w.resumedFromStep[tr.Name]) == 0 || w.resumedFromStep[tr.Name][0] < 10 {
					t.Errorf("lose %d: promoted trial %s resumed from %v, want its checkpoint at a rung", lose, tr.Name, w.resumedFromStep[tr.Name])
				}
			}
			v, _ := strconv.ParseFloat(tr.Value, 64)
			values = append(values, v)
		}
		if paused == 0 || promoted == 0 {
			t.Errorf("lose %d: %d trials stopped at a rung, %d promoted; want some of each:\n%+v", lose, paused, promoted, st.Trials)
		}
		sort.Float64s(values)
		best, _ := strconv.ParseFloat(st.BestValue, 64)
		if best != values[0] || best >= values[len(values)/2] {
			t.Errorf("lose %d: best %v, values %v", lose, best, values)
		}
		if st.Counts.Succeeded+st.Counts.Stopped != 8 {
			t.Errorf("lose %d: counts %+v", lose, st.Counts)
		}
	}
}

// TestPromotedWithoutCheckpointRestarts: without a checkpoint policy a
// promoted trial starts from step 0, and its status says so.
func TestPromotedWithoutCheckpointRestarts(t *testing.T) {
	w := newWorld(t)
	w.checkpoints = false
	search := ashaSearch()
	run(t, w, search, 500, 0)
	found := false
	for _, tr := range search.Status.Trials {
		if tr.Promotions > 0 {
			found = true
			if len(w.resumedFromStep[tr.Name]) != 0 {
				t.Errorf("trial %s resumed from a checkpoint it cannot have", tr.Name)
			}
		}
	}
	if !found {
		t.Fatal("no trial was promoted")
	}
	// The message of the promotion stays until the trial ends; check the
	// event-free record through a fresh plan of a paused, promotable trial.
	s := ashaSearch()
	s.Status.Trials = []v1beta1.TrialStatus{
		{Name: "s-0", Index: 0, State: v1beta1.TrialSucceeded, Value: "1", Rung: 1, RungValues: []string{"1"}},
		{Name: "s-1", Index: 1, State: v1beta1.TrialPaused, Value: "2", Rung: 1, RungValues: []string{"2"}},
		{Name: "s-2", Index: 2, State: v1beta1.TrialPaused, Value: "3", Rung: 1, RungValues: []string{"3"}},
		{Name: "s-3", Index: 3, State: v1beta1.TrialSucceeded, Value: "4", Rung: 1, RungValues: []string{"4"}},
	}
	observed := map[string]observation{}
	for _, tr := range s.Status.Trials {
		phase := v1beta1.JobPaused
		if tr.State == v1beta1.TrialSucceeded {
			phase = v1beta1.JobSucceeded
		}
		observed[tr.Name] = observation{exists: true, phase: phase, paused: phase == v1beta1.JobPaused}
	}
	status, actions, _, err := plan(s, 1, observed, metav1.Now())
	if err != nil {
		t.Fatal(err)
	}
	if status.Trials[1].State != v1beta1.TrialRunning || status.Trials[1].Message == "" ||
		!slices.Contains(actions, action{kind: actResume, trial: "s-1"}) {
		t.Fatalf("s-1 (second best of four at rung 1): %+v, actions %v", status.Trials[1], actions)
	}
	if want := "restarts from the beginning"; !strings.Contains(status.Trials[1].Message, want) {
		t.Errorf("message %q, want it to say it %s", status.Trials[1].Message, want)
	}
}

// TestMetricNotReported: trials that report other metrics end the search
// as Failed, with the metrics they do report, once the first trials end.
func TestMetricNotReported(t *testing.T) {
	w := newWorld(t)
	w.metric = "accuracy"
	search := ashaSearch()
	run(t, w, search, 100, 0)
	c := meta.FindStatusCondition(search.Status.Conditions, batch.TuningFailed)
	if c == nil || c.Reason != ReasonMetricNotReported || !strings.Contains(c.Message, "accuracy") || !strings.Contains(c.Message, `"loss"`) {
		t.Fatalf("conditions %+v, want Failed MetricNotReported naming loss and accuracy", search.Status.Conditions)
	}
	if len(w.creates) > 2 {
		t.Errorf("%d trials made, want the search to end with the first two", len(w.creates))
	}
}

// TestTooManyFailedTrials: failing trials end the search once more than
// maxFailedTrials failed.
func TestTooManyFailedTrials(t *testing.T) {
	w := newWorld(t)
	w.fail = true
	search := ashaSearch()
	run(t, w, search, 100, 0)
	c := meta.FindStatusCondition(search.Status.Conditions, batch.TuningFailed)
	if c == nil || c.Reason != ReasonTooManyFailed || search.Status.Counts.Failed != 4 {
		t.Fatalf("conditions %+v, counts %+v: want Failed after 4 failures", search.Status.Conditions, search.Status.Counts)
	}
}

// TestGoalEndsTheSearch: a trial that reaches the goal ends the search, and
// the trials still running are stopped.
func TestGoalEndsTheSearch(t *testing.T) {
	w := newWorld(t)
	search := ashaSearch()
	search.Spec.EarlyStopping = nil
	search.Spec.Objective.Goal = "100" // the first value reported reaches it
	run(t, w, search, 100, 0)
	if c := meta.FindStatusCondition(search.Status.Conditions, batch.TuningSucceeded); c == nil || c.Reason != ReasonGoalReached {
		t.Fatalf("conditions %+v, want Succeeded GoalReached", search.Status.Conditions)
	}
	status, actions, _, _ := plan(search, 1, w.observe(search), metav1.Now())
	for _, tr := range status.Trials {
		if tr.State == v1beta1.TrialRunning || tr.State == v1beta1.TrialPending {
			t.Errorf("trial %s still %s after the search ended", tr.Name, tr.State)
		}
	}
	for _, a := range actions {
		if a.kind != actPause {
			t.Errorf("action %v after the search ended", a)
		}
	}
}

// TestSuspend: a suspended search pauses its running trials and starts no
// new one; resumed, it goes on.
func TestSuspend(t *testing.T) {
	w := newWorld(t)
	search := ashaSearch()
	status, actions, _, _ := plan(search, 1, w.observe(search), metav1.Now())
	search.Status = *status
	w.apply(search, actions)
	w.tick()
	search.Spec.Suspend = true
	status, actions, _, _ = plan(search, 1, w.observe(search), metav1.Now())
	search.Status = *status
	if len(actions) != 2 || actions[0].kind != actPause || actions[1].kind != actPause {
		t.Fatalf("actions of a suspended search: %v, want its two trials paused", actions)
	}
	if !meta.IsStatusConditionTrue(status.Conditions, batch.TuningSuspended) || len(status.Trials) != 2 {
		t.Errorf("conditions %+v, %d trials", status.Conditions, len(status.Trials))
	}
	w.apply(search, actions)
	search.Spec.Suspend = false
	status, actions, _, _ = plan(search, 1, w.observe(search), metav1.Now())
	if len(actions) != 2 || actions[0].kind != actResume {
		t.Errorf("actions of a resumed search: %v, want its two trials resumed", actions)
	}
	if !meta.IsStatusConditionTrue(status.Conditions, batch.TuningRunning) {
		t.Errorf("conditions %+v, want Running", status.Conditions)
	}
}

// TestMedianStop: under the median rule the worse trials stop before their
// end and the search still ends.
func TestMedianStop(t *testing.T) {
	w := newWorld(t)
	search := ashaSearch()
	search.Spec.EarlyStopping = &v1beta1.EarlyStopping{MedianStop: &v1beta1.MedianStop{StartStep: 10, MinTrials: 2}}
	run(t, w, search, 500, 0)
	if search.Status.Counts.Stopped == 0 || search.Status.Counts.Succeeded == 0 {
		t.Errorf("counts %+v: want some trials stopped by the median rule and some that ran to the end", search.Status.Counts)
	}
}

// TestTrialJob: the job of a trial has the values in place of the
// placeholders, the search's label and its owner reference.
func TestTrialJob(t *testing.T) {
	search := ashaSearch()
	search.Spec.TrialTemplate = v1beta1.TrainingJobTemplate{
		Labels: map[string]string{"kueue.x-k8s.io/queue-name": "team"},
		Pytorch: &v1beta1.PyTorchTrainingJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{
			RuntimeRef: &v1beta1.RuntimeRef{Name: "torch-distributed"},
			Trainer:    &v1beta1.Trainer{Args: []string{"--lr=${param.lr}", "--run", "${trial.name}", "${param.unknown}"}},
		}},
	}
	trial := &v1beta1.TrialStatus{Name: "s-3", Index: 3, Parameters: []v1beta1.ParameterValue{{Name: "lr", Value: "0.01"}}}
	job, kind, err := trialJob(search, trial)
	if err != nil {
		t.Fatal(err)
	}
	if kind.Name != "PyTorchTrainingJob" || job.GetName() != "s-3" || job.GetNamespace() != "ns" {
		t.Fatalf("%s %s/%s", kind.Name, job.GetNamespace(), job.GetName())
	}
	if got := job.CommonSpec().Trainer.Args; !slices.Equal(got, []string{"--lr=0.01", "--run", "s-3", "${param.unknown}"}) {
		t.Errorf("args %q", got)
	}
	if l := job.GetLabels(); l[v1beta1.LabelTuningJob] != "s" || l[v1beta1.LabelTrialIndex] != "3" || l["kueue.x-k8s.io/queue-name"] != "team" {
		t.Errorf("labels %v", l)
	}
	if owner := metav1.GetControllerOf(job); owner == nil || owner.UID != "uid-1" || owner.Kind != "TuningJob" {
		t.Errorf("owner %+v", owner)
	}
	if o := observe(search, job); o.foreign {
		t.Error("the search's own trial observed as foreign")
	}
	// Judged only on a report of the run it is in.
	started := metav1.NewTime(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	st := job.JobStatus()
	st.Phase = v1beta1.JobRunning
	st.Accounting = &v1beta1.Accounting{State: v1beta1.AccountingRunning, StateSince: &started}
	st.Progress = &v1beta1.ProgressStatus{ProgressValues: v1beta1.ProgressValues{Step: ptr.To[int64](16),
		Metrics: []v1beta1.ProgressMetric{{Name: "loss", Value: "0.5"}}}}
	for _, tt := range []struct {
		reported time.Duration
		want     bool
	}{{-time.Second, false}, {0, true}, {time.Second, true}} {
		at := metav1.NewMicroTime(started.Add(tt.reported))
		st.Progress.ReportTime = &at
		if o := observe(search, job); o.judgeable != tt.want || len(o.samples) != 1 {
			t.Errorf("a report %s after the run's start: judgeable %v, samples %v; want %v", tt.reported, o.judgeable, o.samples, tt.want)
		}
	}
	job.SetOwnerReferences(nil)
	if o := observe(search, job); !o.foreign {
		t.Error("a job the search does not own observed as its trial")
	}
}

// TestEventObject: events of a search are recorded on a reference with its
// kind, which the recorder's scheme cannot give it.
func TestEventObject(t *testing.T) {
	ref := eventObject(ashaSearch())
	if ref.Kind != "TuningJob" || ref.APIVersion != "batch.tensorstack.dev/v1beta1" || ref.Name != "s" || ref.Namespace != "ns" || ref.UID != "uid-1" {
		t.Errorf("reference %+v", ref)
	}
	if _, err := reference.GetReference(scheme.Scheme, ref); err != nil {
		t.Errorf("the recorder cannot use it: %v", err)
	}
	if _, err := reference.GetReference(scheme.Scheme, ashaSearch()); err == nil {
		t.Error("the search itself is in the recorder's scheme: the reference is not needed")
	}
}
