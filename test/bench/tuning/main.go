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

// Command bench-tuning runs, on the local stack's real nodes, the example
// search of docs/tuning.md (artifacts/examples/tuning/pytorch-lr-search.yaml:
// 8 trials of a small PyTorch model, GenericJobs of the shipped generic
// runtime, 2 at a time, asha with 3 rungs) next to
// the same search without early stopping: the same seed, so the same 8
// parameter values, each trial run to its end. It records the pod-seconds
// each spends (every trial's starting and running seconds times its pods)
// and the best objective each reaches, and prints a markdown table. The goal
// (docs/benchmarks.md): asha reaches the same best loss, within
// BENCH_TUNING_TOLERANCE (10% by default), for at most half the pod-seconds.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	clientset "tensorstack.dev/training/pkg/generated/clientset/versioned"
	"tensorstack.dev/training/test/bench/internal/benchkit"
)

const namespace = "default"

// outcome is what one search spent and found.
type outcome struct {
	name               string
	trials             int
	podSeconds         float64
	wall               time.Duration
	best               float64
	bestTrial          string
	paused, promotions int
}

func main() {
	localDir := flag.String("local-dir", "", "the local stack's directory (_output/local)")
	example := flag.String("example", "artifacts/examples/tuning/pytorch-lr-search.yaml", "the search to run")
	out := flag.String("out", "", "also write the table to this file")
	flag.Parse()
	if err := run(*localDir, *example, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench-tuning:", err)
		os.Exit(1)
	}
}

func run(localDir, example, out string) error {
	stack, err := benchkit.LoadStack(localDir)
	if err != nil {
		return err
	}
	cfg, err := stack.AdminConfig()
	if err != nil {
		return err
	}
	training := clientset.NewForConfigOrDie(cfg)
	data, err := os.ReadFile(example)
	if err != nil {
		return err
	}
	asha := &v1beta1.TuningJob{}
	if err := yaml.UnmarshalStrict(data, asha); err != nil {
		return fmt.Errorf("%s: %w", example, err)
	}
	asha.Name = "bench-asha"
	full := asha.DeepCopy()
	full.Name, full.Spec.EarlyStopping = "bench-full", nil

	tolerance, err := strconv.ParseFloat(benchkit.StringEnv("BENCH_TUNING_TOLERANCE", "0.10"), 64)
	if err != nil {
		return fmt.Errorf("BENCH_TUNING_TOLERANCE: %w", err)
	}
	ctx := context.Background()
	var outcomes []outcome
	for _, search := range []*v1beta1.TuningJob{full, asha} {
		o, err := runSearch(ctx, training, search)
		if err != nil {
			return fmt.Errorf("search %s: %w", search.Name, err)
		}
		benchkit.Logf("%s: %d trials, %.0f pod-seconds in %s, best %s %g", o.name, o.trials, o.podSeconds, o.wall.Round(time.Second), o.bestTrial, o.best)
		outcomes = append(outcomes, o)
	}
	f, a := outcomes[0], outcomes[1]
	table := &benchkit.Table{Header: []string{"search", "trials", "pod-seconds", "wall", "best loss", "trials paused at a rung", "promotions"}}
	for _, o := range outcomes {
		table.Add(o.name, strconv.Itoa(o.trials), fmt.Sprintf("%.0f", o.podSeconds), o.wall.Round(time.Second).String(),
			fmt.Sprintf("%.4g (%s)", o.best, o.bestTrial), strconv.Itoa(o.paused), strconv.Itoa(o.promotions))
	}
	sameBest := a.best <= f.best*(1+tolerance)
	half := a.podSeconds <= f.podSeconds/2
	table.Add("asha / random", "", benchkit.Ratio(a.podSeconds, f.podSeconds), benchkit.Ratio(a.wall.Seconds(), f.wall.Seconds()),
		fmt.Sprintf("%+.1f%% (goal: within %.0f%%: %s)", 100*(a.best-f.best)/f.best, 100*tolerance, met(sameBest)),
		"goal: pod-seconds at most 0.50×: "+met(half), "")
	var b strings.Builder
	if err := table.Write(&b); err != nil {
		return err
	}
	fmt.Print(b.String())
	if out != "" {
		return os.WriteFile(out, []byte(b.String()), 0o644)
	}
	return nil
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}

// runSearch creates the search, waits for its end and sums what its trials
// spent; it deletes the search (and so its trials) afterwards.
func runSearch(ctx context.Context, training clientset.Interface, search *v1beta1.TuningJob) (outcome, error) {
	searches := training.BatchV1beta1().TuningJobs(namespace)
	_ = searches.Delete(ctx, search.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := searches.Get(ctx, search.Name, metav1.GetOptions{})
		return err != nil, nil
	}); err != nil {
		return outcome{}, fmt.Errorf("an earlier %s is still there: %w", search.Name, err)
	}
	start := time.Now()
	if _, err := searches.Create(ctx, search, metav1.CreateOptions{}); err != nil {
		return outcome{}, err
	}
	var ended *v1beta1.TuningJob
	if err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 30*time.Minute, true, func(ctx context.Context) (bool, error) {
		s, err := searches.Get(ctx, search.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if c := apimeta.FindStatusCondition(s.Status.Conditions, "Failed"); c != nil && c.Status == metav1.ConditionTrue {
			return false, fmt.Errorf("the search failed: %s: %s", c.Reason, c.Message)
		}
		ended = s
		return apimeta.IsStatusConditionTrue(s.Status.Conditions, "Succeeded"), nil
	}); err != nil {
		return outcome{}, err
	}
	o := outcome{name: searchLabel(search), trials: len(ended.Status.Trials), wall: time.Since(start), bestTrial: ended.Status.BestTrial}
	best, err := strconv.ParseFloat(ended.Status.BestValue, 64)
	if err != nil {
		return outcome{}, fmt.Errorf("best value %q: %w", ended.Status.BestValue, err)
	}
	o.best = best
	for _, t := range ended.Status.Trials {
		o.promotions += int(t.Promotions)
		if t.Rung > 0 && t.Promotions == 0 && t.State == v1beta1.TrialStopped {
			o.paused++
		}
	}
	// The trials' accounting is final once each has ended; a trial the
	// search stopped is paused, its seconds counted up to its pause.
	jobs, err := training.BatchV1beta1().GenericJobs(namespace).List(ctx, metav1.ListOptions{LabelSelector: v1beta1.LabelTuningJob + "=" + search.Name})
	if err != nil {
		return outcome{}, err
	}
	for _, j := range jobs.Items {
		a := j.Status.Accounting
		if a == nil {
			continue
		}
		pods := int32(0)
		for _, r := range j.Spec.ReplicaSpecs {
			pods += ptr.Deref(r.Replicas, 1)
		}
		o.podSeconds += float64(a.StartingSeconds+a.RunningSeconds) * float64(pods)
	}
	if err := searches.Delete(ctx, search.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
		return outcome{}, err
	}
	return o, nil
}

func searchLabel(s *v1beta1.TuningJob) string {
	if s.Spec.EarlyStopping != nil && s.Spec.EarlyStopping.ASHA != nil {
		return fmt.Sprintf("%s, asha (rungs %d, factor %d)", s.Spec.Algorithm.Name, s.Spec.EarlyStopping.ASHA.Rungs, s.Spec.EarlyStopping.ASHA.ReductionFactor)
	}
	return fmt.Sprintf("%s, no early stopping", s.Spec.Algorithm.Name)
}
