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
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// tuningTimeout bounds a search on kwok: a few rounds of trials.
const tuningTimeout = 4 * time.Minute

// genericSearch is a search over lr whose trials are one-pod GenericJobs
// that kwok runs for runFor; a fake trainer (fakeTrainer) reports their
// loss.
func genericSearch(name string, runFor string, mod func(*framework.JobBuilder)) *v1beta1.TuningJob {
	b := framework.NewGenericJob("trial").WithReplicas("worker", 1).ExitCode(0).RunFor(runFor)
	if mod != nil {
		mod(b)
	}
	trial := b.Build("").(*v1beta1.GenericJob)
	return &v1beta1.TuningJob{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1beta1.TuningJobSpec{
			TrialTemplate: v1beta1.TrainingJobTemplate{Labels: trial.Labels, Generic: &trial.Spec},
			Parameters:    []v1beta1.TuningParameter{{Name: "lr", Type: v1beta1.ParameterDouble, Min: "0.0001", Max: "1", LogScale: true}},
			Objective:     v1beta1.TuningObjective{Metric: "loss", Direction: v1beta1.Minimize},
			Algorithm:     v1beta1.TuningAlgorithm{Name: v1beta1.AlgorithmRandom, Seed: ptr.To[int64](3)},
		},
	}
}

// fakeTrainer stands in for the trials' training code on kwok: every
// period it reports the next step of each running, unpaused trial of the
// search, with the loss lossOf gives for the trial's lr at that step, under
// the name metric. It counts each trial's running trial jobs at once.
type fakeTrainer struct {
	f       *framework.Framework
	search  string
	metric  string
	steps   map[string]int64
	mu      sync.Mutex
	running int // the most trials that ran at once
	uids    map[string]types.UID
	reused  []string // trial names whose job was made again
}

func lossOf(lr float64, step int64) float64 {
	return math.Pow(math.Log10(lr)+2, 2) + 5/(5+float64(step))
}

func startFakeTrainer(t *testing.T, f *framework.Framework, search, metric string) *fakeTrainer {
	ft := &fakeTrainer{f: f, search: search, metric: metric, steps: map[string]int64{}, uids: map[string]types.UID{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			ft.round(ctx)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return ft
}

func (ft *fakeTrainer) round(ctx context.Context) {
	jobs := ft.f.Training.BatchV1beta1().GenericJobs(ft.f.Namespace)
	list, err := jobs.List(ctx, metav1.ListOptions{LabelSelector: v1beta1.LabelTuningJob + "=" + ft.search})
	if err != nil {
		return
	}
	ft.mu.Lock()
	defer ft.mu.Unlock()
	running := 0
	for _, job := range list.Items {
		if uid, seen := ft.uids[job.Name]; seen && uid != job.UID {
			ft.reused = append(ft.reused, job.Name)
		}
		ft.uids[job.Name] = job.UID
		if job.Status.Phase != v1beta1.JobRunning || v1beta1.PauseEnabled(&job.Spec.TrainingJobSpec) {
			continue
		}
		running++
		lr, err := strconv.ParseFloat(lrOf(job.Spec.ReplicaSpecs[0].Template.Spec.Containers[0].Env), 64)
		if err != nil {
			continue
		}
		ft.steps[job.Name]++
		step := ft.steps[job.Name]
		_, _ = jobs.ReportProgress(ctx, job.Name, &v1beta1.ProgressReport{ProgressValues: v1beta1.ProgressValues{
			Step:    ptr.To(step),
			Metrics: []v1beta1.ProgressMetric{{Name: ft.metric, Value: strconv.FormatFloat(lossOf(lr, step), 'g', 6, 64)}},
		}}, metav1.CreateOptions{})
	}
	ft.running = max(ft.running, running)
}

func lrOf(env []corev1.EnvVar) string {
	for _, e := range env {
		if e.Name == "LR" {
			return e.Value
		}
	}
	return ""
}

// withLR passes the trial's lr to it as the variable LR.
func withLR(b *framework.JobBuilder) { b.Env("LR", "${param.lr}") }

func waitForSearch(f *framework.Framework, name string, cond func(*v1beta1.TuningJob) (bool, error)) *v1beta1.TuningJob {
	f.T.Helper()
	var search *v1beta1.TuningJob
	f.Eventually(tuningTimeout, "search "+name, func(ctx context.Context) (bool, error) {
		var err error
		search, err = f.Training.BatchV1beta1().TuningJobs(f.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return cond(search)
	})
	return search
}

func searchEnded(want string) func(*v1beta1.TuningJob) (bool, error) {
	return func(s *v1beta1.TuningJob) (bool, error) {
		for _, c := range []string{"Succeeded", "Failed"} {
			if apimeta.IsStatusConditionTrue(s.Status.Conditions, c) {
				if c != want {
					return false, framework.Stop("the search ended %s: %+v", c, s.Status.Conditions)
				}
				return true, nil
			}
		}
		return false, nil
	}
}

// createdTrialEvents counts the controller's TrialCreated events of a
// search per trial.
func createdTrialEvents(t *testing.T, f *framework.Framework, search string) map[string]int {
	t.Helper()
	list, err := f.Kube.CoreV1().Events(f.Namespace).List(f.Context(), metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": search, "reason": "TrialCreated"}.String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, e := range list.Items {
		name := strings.Fields(strings.TrimPrefix(e.Message, "Created trial "))[0]
		out[name] += int(max(e.Count, 1))
	}
	return out
}

// TestTuningSearchSurvivesControllerKill: a search of six trials, two at a
// time, under asha, whose controller is killed (SIGKILL) while trials run:
// the search still ends Succeeded with six trials, none made twice, some
// paused at a rung; kubectl shows it.
func TestTuningSearchSurvivesControllerKill(t *testing.T) {
	f := framework.New(t, "tune-kill")
	search := genericSearch("kill", "25s", withLR)
	search.Spec.ParallelTrials, search.Spec.MaxTrials = 2, 6
	search.Spec.EarlyStopping = &v1beta1.EarlyStopping{ASHA: &v1beta1.ASHA{MinResource: 4, ReductionFactor: 2, Rungs: 2}}
	if _, err := f.Training.BatchV1beta1().TuningJobs(f.Namespace).Create(f.Context(), search, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ft := startFakeTrainer(t, f, "kill", "loss")
	waitForSearch(f, "kill", func(s *v1beta1.TuningJob) (bool, error) { return len(s.Status.Trials) >= 3, nil })
	f.RestartComponent("--kill", "training-controller-manager")
	ended := waitForSearch(f, "kill", searchEnded("Succeeded"))

	if n := len(ended.Status.Trials); n != 6 {
		t.Errorf("%d trials after the kill, want 6", n)
	}
	ft.mu.Lock()
	if len(ft.reused) > 0 || len(ft.uids) != 6 {
		t.Errorf("trial jobs seen: %d, made again under the same name: %v", len(ft.uids), ft.reused)
	}
	ft.mu.Unlock()
	// A kill may lose the event of a trial it created last, never make one
	// twice.
	created := createdTrialEvents(t, f, "kill")
	if len(created) < 4 {
		t.Errorf("TrialCreated events of %d trials, want most of the 6: %v", len(created), created)
	}
	for name, n := range created {
		if n != 1 {
			t.Errorf("trial %s created %d times", name, n)
		}
	}
	jobs, err := f.Training.BatchV1beta1().GenericJobs(f.Namespace).List(f.Context(), metav1.ListOptions{LabelSelector: v1beta1.LabelTuningJob + "=kill"})
	if err != nil || len(jobs.Items) != 6 {
		t.Fatalf("trial jobs: %d, %v; want 6", len(jobs.Items), err)
	}
	rungs := 0
	for _, tr := range ended.Status.Trials {
		if tr.Rung > 0 {
			rungs++
		}
	}
	if rungs == 0 || ended.Status.BestTrial == "" {
		t.Errorf("no trial reached a rung, or no best: %+v", ended.Status)
	}
	out := f.MustKubectl("get", "tune", "kill", "-n", f.Namespace, "--no-headers")
	if fieldsOf := strings.Fields(out); len(fieldsOf) < 4 || fieldsOf[1] != "Succeeded" || fieldsOf[2] != ended.Status.BestValue || fieldsOf[3] != "6/6" {
		t.Errorf("kubectl get tune: %q", out)
	}
	if out := f.MustKubectl("explain", "tuningjobs.spec.earlyStopping.asha.minResource"); !strings.Contains(out, "FIELD: minResource") {
		t.Errorf("kubectl explain: %s", out)
	}
}

// TestTuningSearchInKueueQueue: a search of four parallel trials in a queue
// whose quota holds two: never more than two trials run, and the search
// ends with every trial made.
func TestTuningSearchInKueueQueue(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "tune-kueue")
	needsKueue(t, f)
	pool := f.NewNodePool(1, 8)
	queue := f.NewKueueQueue(pool, 2, "lq")
	search := genericSearch("queued", "10s", func(b *framework.JobBuilder) {
		withLR(b)
		b.GPUs(1).Label("kueue.x-k8s.io/queue-name", queue)
	})
	search.Spec.ParallelTrials, search.Spec.MaxTrials = 4, 6
	if _, err := f.Training.BatchV1beta1().TuningJobs(f.Namespace).Create(f.Context(), search, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ft := startFakeTrainer(t, f, "queued", "loss")
	// Count trials with pods at every moment, beside the trainer's count of
	// running trials.
	most := 0
	f.Eventually(tuningTimeout, "the search to end", func(ctx context.Context) (bool, error) {
		pods, err := f.Kube.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		withPods := map[string]bool{}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				withPods[p.Labels[v1beta1.LabelJobName]] = true
			}
		}
		most = max(most, len(withPods))
		s, err := f.Training.BatchV1beta1().TuningJobs(f.Namespace).Get(ctx, "queued", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if apimeta.IsStatusConditionTrue(s.Status.Conditions, "Failed") {
			return false, framework.Stop("the search failed: %+v", s.Status.Conditions)
		}
		return apimeta.IsStatusConditionTrue(s.Status.Conditions, "Succeeded"), nil
	})
	ft.mu.Lock()
	defer ft.mu.Unlock()
	t.Logf("at most %d trials had pods at once; the trainer saw at most %d running", most, ft.running)
	if most > 2 || ft.running > 2 {
		t.Errorf("%d trials had pods at once (the trainer saw %d running); the queue's quota holds 2", most, ft.running)
	}
	if most < 2 {
		t.Errorf("never two trials at once: the queue's quota of 2 went unused")
	}
}

// TestTuningSearchMetricNotReported: trials that report another metric end
// the search Failed, with a reason that names both, once the first trials
// end; the search does not hang.
func TestTuningSearchMetricNotReported(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "tune-nometric")
	search := genericSearch("nometric", "8s", withLR)
	search.Spec.ParallelTrials, search.Spec.MaxTrials = 2, 6
	if _, err := f.Training.BatchV1beta1().TuningJobs(f.Namespace).Create(f.Context(), search, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	startFakeTrainer(t, f, "nometric", "accuracy")
	ended := waitForSearch(f, "nometric", searchEnded("Failed"))
	c := apimeta.FindStatusCondition(ended.Status.Conditions, "Failed")
	if c.Reason != "MetricNotReported" || !strings.Contains(c.Message, `"loss"`) || !strings.Contains(c.Message, "accuracy") {
		t.Errorf("Failed %s: %s; want MetricNotReported naming loss and accuracy", c.Reason, c.Message)
	}
	if n := len(ended.Status.Trials); n > 4 {
		t.Errorf("%d trials made before the search failed, want it to fail after the first ones", n)
	}
	// Refused: each a 4xx naming the field.
	for _, tt := range []struct{ patch, field string }{
		{`{"spec":{"parameters":[]}}`, "spec.parameters"},
		{`{"spec":{"parallelTrials":-1}}`, "spec.parallelTrials"},
		{`{"spec":{"parameters":[{"name":"lr","type":"double","min":"2","max":"1"}]}}`, "spec.parameters[0].max"},
	} {
		r := f.Kubectl("patch", "tune", "nometric", "-n", f.Namespace, "--type=merge", "-p", tt.patch)
		if r.Err == nil || !strings.Contains(r.Stderr, tt.field) {
			t.Errorf("kubectl patch %s: %s; want a refusal naming %s", tt.patch, r, tt.field)
		}
	}
}

// runningSearch makes a search whose one trial runs until the test ends,
// with the loss value reported: every series of the search controller then
// exists, for the monitoring tests.
func runningSearch(f *framework.Framework, name, value string) {
	f.T.Helper()
	search := genericSearch(name, "1s", func(b *framework.JobBuilder) { b.Forever("worker") })
	search.Spec.MaxTrials = 1
	if _, err := f.Training.BatchV1beta1().TuningJobs(f.Namespace).Create(f.Context(), search, metav1.CreateOptions{}); err != nil {
		f.T.Fatal(err)
	}
	trials := f.Training.BatchV1beta1().GenericJobs(f.Namespace)
	f.Eventually(framework.Timeout, "the search's trial running", func(ctx context.Context) (bool, error) {
		job, err := trials.Get(ctx, name+"-0", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return job.Status.Phase == v1beta1.JobRunning, nil
	})
	if _, err := trials.ReportProgress(f.Context(), name+"-0", &v1beta1.ProgressReport{ProgressValues: v1beta1.ProgressValues{
		Step: ptr.To[int64](1), Metrics: []v1beta1.ProgressMetric{{Name: "loss", Value: value}},
	}}, metav1.CreateOptions{}); err != nil {
		f.T.Fatal(err)
	}
	waitForSearch(f, name, func(s *v1beta1.TuningJob) (bool, error) { return s.Status.BestValue != "", nil })
}
