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
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/watch"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/generated/clientset/versioned"
	typedv1beta1 "tensorstack.dev/training/pkg/generated/clientset/versioned/typed/batch/v1beta1"
)

// showTuningJob is status for a search: its view, and with --watch the view
// again on every change until the search ends.
func (o *statusOptions) showTuningJob(ctx context.Context, e *env, name string) error {
	c, err := e.clients()
	if err != nil {
		return err
	}
	job, err := getTuningJob(ctx, c.training, c.namespace, name)
	if err != nil {
		return err
	}
	show := func(job *v1beta1.TuningJob) error {
		events, err := objectEvents(ctx, c.kube, tuningJobKind, tuningRef(job.Name), job)
		if err != nil {
			return err
		}
		return writeTuningJobStatus(e.streams.Out, job, events, e.now())
	}
	if err := show(job); err != nil {
		return err
	}
	if !o.watch {
		return nil
	}
	deleted, err := watchTuningJob(ctx, c.training, job, func(job *v1beta1.TuningJob) error {
		fmt.Fprintln(e.streams.Out)
		return show(job)
	})
	if deleted {
		fmt.Fprintf(e.streams.Out, "\n%s was deleted\n", tuningRef(job.Name))
	}
	return err
}

// watchTuningJob calls changed with the search on every change until it
// ends, is deleted or ctx ends (Ctrl-C), as watchJob does for a job, and
// says whether it was deleted. A watch the server closes is opened again.
func watchTuningJob(ctx context.Context, client versioned.Interface, job *v1beta1.TuningJob, changed func(*v1beta1.TuningJob) error) (deleted bool, err error) {
	searches := client.BatchV1beta1().TuningJobs(job.Namespace)
	for !tuningFinished(&job.Status) {
		w, err := searches.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", job.Name).String(),
			ResourceVersion: job.ResourceVersion,
		})
		if err != nil {
			if ctx.Err() != nil {
				return false, nil
			}
			return false, fmt.Errorf("watching %s: %w", tuningRef(job.Name), err)
		}
		next, done, err := nextTuningChange(ctx, w, job, searches)
		w.Stop()
		switch {
		case ctx.Err() != nil:
			return false, nil
		case err != nil:
			return false, fmt.Errorf("watching %s: %w", tuningRef(job.Name), err)
		case done:
			return true, nil
		}
		if next != job {
			job = next
			if err := changed(job); err != nil {
				return false, err
			}
		}
	}
	return false, nil
}

// nextTuningChange waits for the search to change. It returns the search
// unchanged when the watch closed without news, and done when the search
// was deleted.
func nextTuningChange(ctx context.Context, w watch.Interface, job *v1beta1.TuningJob, searches typedv1beta1.TuningJobInterface) (*v1beta1.TuningJob, bool, error) {
	for {
		select {
		case <-ctx.Done():
			return job, false, nil
		case event, ok := <-w.ResultChan():
			if !ok {
				return job, false, nil
			}
			switch event.Type {
			case watch.Added, watch.Modified:
				changed, ok := event.Object.(*v1beta1.TuningJob)
				if !ok || changed.Name != job.Name || changed.ResourceVersion == job.ResourceVersion {
					continue
				}
				return changed, false, nil
			case watch.Deleted:
				if deleted, ok := event.Object.(*v1beta1.TuningJob); ok && deleted.Name == job.Name {
					return job, true, nil
				}
			case watch.Error:
				err := apierrors.FromObject(event.Object)
				if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
					return job, false, err
				}
				// The version watched from is too old: start again from now.
				current, err := searches.Get(ctx, job.Name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return job, true, nil
				}
				return current, false, err
			}
		}
	}
}

// writeTuningJobStatus is the human view of one search.
func writeTuningJobStatus(out io.Writer, job *v1beta1.TuningJob, events []corev1.Event, now time.Time) error {
	spec, status := &job.Spec, &job.Status
	w := newTabWriter(out)
	fmt.Fprintf(w, "Job:\t%s\n", tuningRef(job.Name))
	fmt.Fprintf(w, "Kind:\t%s\n", tuningJobKind)
	fmt.Fprintf(w, "Namespace:\t%s\n", job.Namespace)
	fmt.Fprintf(w, "State:\t%s\n", tuningState(status))
	fmt.Fprintf(w, "Age:\t%s\n", age(job.CreationTimestamp.Time, now))
	took := "-"
	if d, started := batch.RunLength(status.StartTime, status.CompletionTime, now); started {
		took = duration.HumanDuration(d)
	}
	fmt.Fprintf(w, "Duration:\t%s\n", took)
	fmt.Fprintf(w, "Objective:\t%s\n", objectiveSummary(&spec.Objective))
	fmt.Fprintf(w, "Algorithm:\t%s\n", algorithmSummary(&spec.Algorithm, status.Seed))
	fmt.Fprintf(w, "Early stopping:\t%s\n", earlyStoppingSummary(spec.EarlyStopping))
	fmt.Fprintf(w, "Trials:\t%d/%d made, %d at once\n", len(status.Trials), spec.MaxTrials, spec.ParallelTrials)
	fmt.Fprintf(w, "Counts:\t%s\n", countsSummary(&status.Counts, spec.MaxFailedTrials))
	fmt.Fprintf(w, "Best:\t%s\n", bestSummary(job))
	if err := w.Flush(); err != nil {
		return err
	}

	w = newTabWriter(out)
	fmt.Fprintln(w, "Conditions:")
	if len(status.Conditions) == 0 {
		fmt.Fprintln(w, "  <none>")
	} else {
		fmt.Fprintln(w, "  TYPE\tSTATUS\tREASON\tAGE\tMESSAGE")
		for _, c := range status.Conditions {
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, orDash(c.Reason), age(c.LastTransitionTime.Time, now), orDash(c.Message))
		}
	}
	fmt.Fprintln(w, "Events:")
	if len(events) == 0 {
		fmt.Fprintln(w, "  <none>")
	} else {
		fmt.Fprintln(w, "  TYPE\tREASON\tAGE\tFROM\tMESSAGE")
		for _, event := range events {
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", event.Type, event.Reason, eventAge(event, now), eventSource(event), strings.TrimSpace(event.Message))
		}
	}
	return w.Flush()
}

// objectiveSummary: "minimize loss (last value), goal 0.05".
func objectiveSummary(o *v1beta1.TuningObjective) string {
	direction := o.Direction
	if direction == "" {
		direction = v1beta1.Minimize
	}
	var value string
	switch o.TrialValue {
	case v1beta1.TrialValueBest:
		value = "best value"
	case v1beta1.TrialValueAtStep:
		value = "value at step ?"
		if o.Step != nil {
			value = fmt.Sprintf("value at step %d", *o.Step)
		}
	default:
		value = "last value"
	}
	summary := fmt.Sprintf("%s %s (%s)", direction, o.Metric, value)
	if o.Goal != "" {
		summary += ", goal " + o.Goal
	}
	return summary
}

// algorithmSummary: "tpe (seed 42, 3 startup trials)"; a seed the search
// picked itself is said to be.
func algorithmSummary(a *v1beta1.TuningAlgorithm, picked *int64) string {
	name := a.Name
	if name == "" {
		name = v1beta1.AlgorithmRandom
	}
	var notes []string
	switch {
	case a.Seed != nil:
		notes = append(notes, fmt.Sprintf("seed %d", *a.Seed))
	case picked != nil:
		notes = append(notes, fmt.Sprintf("seed %d, picked by the search", *picked))
	}
	if name == v1beta1.AlgorithmTPE && a.StartupTrials > 0 {
		notes = append(notes, fmt.Sprintf("%d startup trials", a.StartupTrials))
	}
	if len(notes) == 0 {
		return string(name)
	}
	return fmt.Sprintf("%s (%s)", name, strings.Join(notes, ", "))
}

// earlyStoppingSummary: "asha over steps, rungs at 100, 300, 900, reduction
// factor 3", "median stop from step 1, against at least 3 trials" or
// "none".
func earlyStoppingSummary(es *v1beta1.EarlyStopping) string {
	switch {
	case es == nil:
		return "none"
	case es.ASHA != nil:
		a := es.ASHA
		resource, factor, rungs := a.Resource, a.ReductionFactor, a.Rungs
		if resource == "" {
			resource = v1beta1.ResourceSteps
		}
		if factor == 0 {
			factor = v1beta1.DefaultASHAReductionFactor
		}
		if rungs == 0 {
			rungs = v1beta1.DefaultASHARungs
		}
		at := make([]string, 0, rungs)
		for r, level := int32(0), a.MinResource; r < rungs; r, level = r+1, level*int64(factor) {
			at = append(at, fmt.Sprint(level))
		}
		return fmt.Sprintf("asha over %s, rungs at %s, reduction factor %d", resource, strings.Join(at, ", "), factor)
	case es.MedianStop != nil:
		m := es.MedianStop
		start, minTrials := m.StartStep, m.MinTrials
		if start == 0 {
			start = v1beta1.DefaultMedianStopStartStep
		}
		if minTrials == 0 {
			minTrials = v1beta1.DefaultMedianStopMinTrials
		}
		return fmt.Sprintf("median stop from step %d, against at least %d trials", start, minTrials)
	default:
		return "none"
	}
}

// countsSummary: "2 running, 0 pending, 1 paused, 3 succeeded, 1 failed (3
// allowed), 0 stopped".
func countsSummary(c *v1beta1.TrialCounts, maxFailed *int32) string {
	allowed := v1beta1.DefaultMaxFailedTrials
	if maxFailed != nil {
		allowed = *maxFailed
	}
	return fmt.Sprintf("%d running, %d pending, %d paused, %d succeeded, %d failed (%d allowed), %d stopped",
		c.Running, c.Pending, c.Paused, c.Succeeded, c.Failed, allowed, c.Stopped)
}

// bestSummary: "lr-search-3 = 0.125 (lr=0.01, batch=64)", or "<none>"
// before a trial has a value.
func bestSummary(job *v1beta1.TuningJob) string {
	status := &job.Status
	if status.BestTrial == "" {
		return "<none>"
	}
	summary := status.BestTrial + " = " + orDash(status.BestValue)
	for i := range status.Trials {
		trial := &status.Trials[i]
		if trial.Name != status.BestTrial || len(trial.Parameters) == 0 {
			continue
		}
		values := make([]string, len(trial.Parameters))
		for j, p := range trial.Parameters {
			values[j] = p.Name + "=" + p.Value
		}
		summary += " (" + strings.Join(values, ", ") + ")"
	}
	return summary
}

// completeStatusArg completes status's JOB: the jobs as completeJobArg
// does, and the searches once tune/ (or another word for TuningJobs) is
// typed.
func completeStatusArg(e *env) completionFunc {
	jobs := completeJobArg(e)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if word, _, typedKind := strings.Cut(toComplete, "/"); typedKind && len(args) == 0 && tuningJobNamed(word) {
			return tuningCompletions(cmd, e, word+"/", toComplete), cobra.ShellCompDirectiveNoFileComp
		}
		return jobs(cmd, args, toComplete)
	}
}
