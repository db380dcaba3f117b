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
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/tuning"
)

// observation is what a trial's job says of the trial.
type observation struct {
	// exists is false when the search's cache holds no job of the name.
	exists bool
	// foreign is a job of the trial's name that the search does not own.
	foreign bool
	phase   v1beta1.JobPhase
	// paused is whether the job's spec asks for it to be paused.
	paused bool
	// samples are the objective metric's recent values, oldest first.
	samples []tuning.Sample
	// metrics are the names of the metrics the job's reports carry.
	metrics []string
	// checkpointPolicy says whether the job declares the checkpoint
	// contract, and checkpointStep is the step of its last checkpoint.
	checkpointPolicy bool
	checkpointStep   *int64
	// failure is why the job failed.
	failure string
	// judgeable says whether the job's last report is of its current run:
	// it runs, and reported since it started running again. Until then its
	// reports are those of before its last pause, when it may have gone
	// past the checkpoint it now resumes from, and no rung may judge it.
	judgeable bool
}

// actionKind is what the sync does to a trial's job once the status that
// asks for it is stored.
type actionKind string

const (
	actCreate actionKind = "create"
	actPause  actionKind = "pause"
	actResume actionKind = "resume"
)

type action struct {
	kind  actionKind
	trial string
}

// event is an event the sync records on the search.
type event struct {
	eventType, reason, message string
}

// Reasons of the search's conditions and events.
const (
	ReasonTrialsRunning     = "TrialsRunning"
	ReasonSuspended         = "Suspended"
	ReasonGoalReached       = "GoalReached"
	ReasonTrialsSpent       = "TrialsSpent"
	ReasonTooManyFailed     = "TooManyFailedTrials"
	ReasonMetricNotReported = "MetricNotReported"
	ReasonTrialCreated      = "TrialCreated"
	ReasonTrialPaused       = "TrialPaused"
	ReasonTrialPromoted     = "TrialPromoted"
	ReasonTrialStopped      = "TrialStopped"
	ReasonTrialFailed       = "TrialFailed"
	ReasonTrialLost         = "TrialLost"
)

// planner decides a search's next status and the actions on its trials'
// jobs from what the jobs say. It makes no API call.
type planner struct {
	search   *v1beta1.TuningJob
	space    *tuning.Space
	asha     *tuning.ASHA
	seed     int64
	observed map[string]observation
	now      metav1.Time

	status  *v1beta1.TuningJobStatus
	events  []event
	actions []action
}

// plan returns the search's next status, the actions on its trials' jobs
// that the status asks for, and the events to record.
func plan(search *v1beta1.TuningJob, seed int64, observed map[string]observation, now metav1.Time) (*v1beta1.TuningJobStatus, []action, []event, error) {
	space, err := tuning.NewSpace(search.Spec.Parameters)
	if err != nil {
		return nil, nil, nil, err
	}
	p := &planner{search: search, space: space, seed: seed, observed: observed, now: now, status: search.Status.DeepCopy()}
	if es := search.Spec.EarlyStopping; es != nil && es.ASHA != nil {
		a := tuning.NewASHA(es.ASHA)
		p.asha = &a
	}
	st := p.status
	if st.StartTime == nil {
		st.StartTime = &now
	}
	st.Seed = &seed
	for i := range st.Trials {
		p.observe(&st.Trials[i])
	}
	if !p.finished() {
		for i := range st.Trials {
			p.stopEarly(&st.Trials[i])
		}
		p.judge()
	}
	if !p.finished() && !search.Spec.Suspend {
		p.fill()
	}
	if p.finished() {
		p.stopAll()
	}
	p.summarize()
	p.act()
	return st, p.actions, p.events, nil
}

func (p *planner) objective() *v1beta1.TuningObjective { return &p.search.Spec.Objective }

func (p *planner) loss(value string) (float64, bool) {
	v, err := batch.ParseMetricValue(value)
	if err != nil {
		return 0, false
	}
	return tuning.Loss(v, p.objective().Direction), true
}

func (p *planner) record(eventType, reason, format string, args ...any) {
	p.events = append(p.events, event{eventType: eventType, reason: reason, message: fmt.Sprintf(format, args...)})
}

func (p *planner) finished() bool { return ended(p.status.Conditions) }

// ended says whether a search's conditions say it has ended: Succeeded or
// Failed.
func ended(conditions []metav1.Condition) bool {
	return meta.IsStatusConditionTrue(conditions, batch.TuningSucceeded) ||
		meta.IsStatusConditionTrue(conditions, batch.TuningFailed)
}

// observe brings a trial's status up to date with its job.
func (p *planner) observe(t *v1beta1.TrialStatus) {
	o := p.observed[t.Name]
	switch {
	case o.foreign:
		if t.State != v1beta1.TrialFailed {
			t.State, t.Message = v1beta1.TrialFailed, "a job of the trial's name exists that the search does not own"
			p.record(corev1.EventTypeWarning, ReasonTrialFailed, "Trial %s: %s", t.Name, t.Message)
		}
		return
	case !o.exists:
		// A trial seen before whose job is gone was deleted by someone
		// else; a pending one is created below.
		if t.State == v1beta1.TrialRunning || t.State == v1beta1.TrialPaused {
			t.State, t.Message = v1beta1.TrialFailed, "its job was deleted"
			p.record(corev1.EventTypeWarning, ReasonTrialLost, "Trial %s: %s", t.Name, t.Message)
		}
		return
	}
	if len(o.samples) > 0 {
		t.Curve = tuning.MergeCurve(t.Curve, o.samples)
		var previous *float64
		if t.Value != "" {
			if v, err := batch.ParseMetricValue(t.Value); err == nil {
				previous = &v
			}
		}
		if v, ok := tuning.TrialValue(p.objective(), tuning.CurveValues(t.Curve), previous); ok {
			t.Value = tuning.FormatValue(v)
		}
		t.Progress = &o.samples[len(o.samples)-1].Progress
	}
	switch o.phase {
	case v1beta1.JobSucceeded:
		if t.State != v1beta1.TrialSucceeded {
			t.State, t.Message = v1beta1.TrialSucceeded, ""
		}
	case v1beta1.JobFailed:
		if t.State != v1beta1.TrialFailed {
			t.State, t.Message = v1beta1.TrialFailed, o.failure
			p.record(corev1.EventTypeWarning, ReasonTrialFailed, "Trial %s failed: %s", t.Name, o.failure)
		}
	default:
		if t.State == v1beta1.TrialPending {
			t.State = v1beta1.TrialRunning
		}
	}
}

// lossesAt are the losses every trial recorded at a rung.
func (p *planner) lossesAt(rung int32) []float64 {
	var out []float64
	for _, t := range p.status.Trials {
		if int32(len(t.RungValues)) > rung {
			if l, ok := p.loss(t.RungValues[rung]); ok {
				out = append(out, l)
			}
		}
	}
	return out
}

// stopEarly applies the early stopping rule to a running trial.
func (p *planner) stopEarly(t *v1beta1.TrialStatus) {
	if t.State != v1beta1.TrialRunning || t.Value == "" || t.Progress == nil || !p.observed[t.Name].judgeable {
		return
	}
	loss, ok := p.loss(t.Value)
	if !ok {
		return
	}
	if p.asha != nil {
		rungs := p.asha.Rungs()
		for reached := p.asha.Reached(*t.Progress); t.Rung < reached; {
			t.RungValues = append(t.RungValues[:t.Rung], t.Value)
			t.Rung++
			at := p.lossesAt(t.Rung - 1)
			if !p.asha.InBestShare(loss, at) {
				t.State = v1beta1.TrialPaused
				t.Message = fmt.Sprintf("paused at rung %d (%d %s): %s %s is not among the best %d of the %d trials there",
					t.Rung, rungs[t.Rung-1], p.search.Spec.EarlyStopping.ASHA.Resource, p.objective().Metric, t.Value,
					max(1, len(at)/int(p.search.Spec.EarlyStopping.ASHA.ReductionFactor)), len(at))
				p.record(corev1.EventTypeNormal, ReasonTrialPaused, "Trial %s %s", t.Name, t.Message)
				return
			}
		}
		return
	}
	m := p.search.Spec.EarlyStopping
	if m == nil || m.MedianStop == nil || *t.Progress < m.MedianStop.StartStep {
		return
	}
	best := loss
	var others [][]tuning.Point
	for _, other := range p.status.Trials {
		curve := p.losses(other.Curve)
		if other.Name == t.Name {
			for _, pt := range curve {
				best = min(best, pt.Loss)
			}
			continue
		}
		if len(curve) > 0 {
			others = append(others, curve)
		}
	}
	if tuning.MedianStops(best, *t.Progress, others, int(m.MedianStop.MinTrials)) {
		t.State = v1beta1.TrialStopped
		t.Message = fmt.Sprintf("stopped at %d by the median rule: its best %s is worse than the median of the other trials there",
			*t.Progress, p.objective().Metric)
		p.record(corev1.EventTypeNormal, ReasonTrialStopped, "Trial %s %s", t.Name, t.Message)
	}
}

func (p *planner) losses(curve []v1beta1.CurvePoint) []tuning.Point {
	var out []tuning.Point
	for _, s := range tuning.CurveValues(curve) {
		out = append(out, tuning.Point{Progress: s.Progress, Loss: tuning.Loss(s.Value, p.objective().Direction)})
	}
	return out
}

// judge ends the search when the goal is reached, too many trials failed,
// or the trials that ended reported no objective metric.
func (p *planner) judge() {
	spec, st := &p.search.Spec, p.status
	failed, ended, valued := 0, 0, 0
	for _, t := range st.Trials {
		switch t.State {
		case v1beta1.TrialFailed:
			failed++
		case v1beta1.TrialSucceeded:
			ended++
		}
		if t.Value != "" {
			valued++
		}
	}
	if limit := ptrOr(spec.MaxFailedTrials, v1beta1.DefaultMaxFailedTrials); int32(failed) > limit {
		p.finish(batch.TuningFailed, ReasonTooManyFailed, fmt.Sprintf("%d trials failed, more than maxFailedTrials (%d)", failed, limit))
		return
	}
	if ended > 0 && valued == 0 {
		p.finish(batch.TuningFailed, ReasonMetricNotReported, fmt.Sprintf(
			"%d trial(s) ended and none reported the objective metric %q; their progress reports carry: %s",
			ended, spec.Objective.Metric, p.metricsSeen()))
		return
	}
	if spec.Objective.Goal == "" {
		return
	}
	goal, err := batch.ParseMetricValue(spec.Objective.Goal)
	if err != nil {
		return
	}
	for _, t := range st.Trials {
		if v, err := batch.ParseMetricValue(t.Value); err == nil && t.Value != "" && !tuning.Better(goal, v, spec.Objective.Direction) {
			p.finish(batch.TuningSucceeded, ReasonGoalReached, fmt.Sprintf("trial %s reached the goal: %s %s", t.Name, spec.Objective.Metric, t.Value))
			return
		}
	}
}

func (p *planner) metricsSeen() string {
	seen := map[string]bool{}
	for _, o := range p.observed {
		for _, m := range o.metrics {
			seen[m] = true
		}
	}
	if len(seen) == 0 {
		return "no metrics at all"
	}
	names := make([]string, 0, len(seen))
	for m := range seen {
		names = append(names, m)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func ptrOr(v *int32, def int32) int32 {
	if v == nil {
		return def
	}
	return *v
}

// fill uses the free places of parallelTrials: for promoted trials first,
// then for new ones; and ends the search once no trial runs and none is
// left to make or promote.
func (p *planner) fill() {
	spec, st := &p.search.Spec, p.status
	active := 0
	for _, t := range st.Trials {
		if t.State == v1beta1.TrialRunning || t.State == v1beta1.TrialPending {
			active++
		}
	}
	exhausted := false
	for free := int(spec.ParallelTrials) - active; free > 0; free-- {
		if p.promote() {
			active++
			continue
		}
		if exhausted || int32(len(st.Trials)) >= spec.MaxTrials {
			break
		}
		index := int32(len(st.Trials))
		params, ok := tuning.Suggest(spec.Algorithm, p.space, p.seed, index, p.observations())
		if !ok {
			exhausted = true
			break
		}
		st.Trials = append(st.Trials, v1beta1.TrialStatus{
			Name: batch.TrialName(p.search.Name, index), Index: index, Parameters: params, State: v1beta1.TrialPending,
		})
		active++
	}
	if active > 0 || (!exhausted && int32(len(st.Trials)) < spec.MaxTrials) {
		return
	}
	// Nothing runs and nothing is left: paused trials stay stopped.
	for i := range st.Trials {
		if t := &st.Trials[i]; t.State == v1beta1.TrialPaused {
			t.State = v1beta1.TrialStopped
		}
	}
	if st.BestTrial == "" && p.best() == nil {
		p.finish(batch.TuningFailed, ReasonMetricNotReported, fmt.Sprintf(
			"every trial ended and none reported the objective metric %q; their progress reports carry: %s",
			spec.Objective.Metric, p.metricsSeen()))
		return
	}
	p.finish(batch.TuningSucceeded, ReasonTrialsSpent, fmt.Sprintf("all %d trials ended", len(st.Trials)))
}

// promote resumes the paused trial that now ranks best at its rung, the
// highest rung first; false when none does.
func (p *planner) promote() bool {
	if p.asha == nil {
		return false
	}
	var best *v1beta1.TrialStatus
	bestLoss := 0.0
	for i := range p.status.Trials {
		t := &p.status.Trials[i]
		if t.State != v1beta1.TrialPaused || t.Rung == 0 || int32(len(t.RungValues)) < t.Rung {
			continue
		}
		loss, ok := p.loss(t.RungValues[t.Rung-1])
		if !ok || !p.asha.InBestShare(loss, p.lossesAt(t.Rung-1)) {
			continue
		}
		if best == nil || t.Rung > best.Rung || (t.Rung == best.Rung && loss < bestLoss) {
			best, bestLoss = t, loss
		}
	}
	if best == nil {
		return false
	}
	best.State = v1beta1.TrialRunning
	best.Promotions++
	o := p.observed[best.Name]
	switch {
	case o.checkpointPolicy && o.checkpointStep != nil:
		best.Message = fmt.Sprintf("promoted from rung %d: resumes from its checkpoint at step %d", best.Rung, *o.checkpointStep)
	case o.checkpointPolicy:
		best.Message = fmt.Sprintf("promoted from rung %d: resumes from its checkpoint", best.Rung)
	default:
		best.Message = fmt.Sprintf("promoted from rung %d: restarts from the beginning, for its template has no checkpoint policy", best.Rung)
	}
	p.record(corev1.EventTypeNormal, ReasonTrialPromoted, "Trial %s %s", best.Name, best.Message)
	return true
}

// observations are the trials with an objective value, for the algorithm.
func (p *planner) observations() []tuning.Observation {
	var out []tuning.Observation
	for _, t := range p.status.Trials {
		if l, ok := p.loss(t.Value); ok && t.Value != "" {
			out = append(out, tuning.Observation{Parameters: t.Parameters, Loss: l})
		}
	}
	return out
}

// best is the trial with the best objective value.
func (p *planner) best() *v1beta1.TrialStatus {
	var best *v1beta1.TrialStatus
	bestLoss := 0.0
	for i := range p.status.Trials {
		t := &p.status.Trials[i]
		if l, ok := p.loss(t.Value); ok && t.Value != "" && (best == nil || l < bestLoss) {
			best, bestLoss = t, l
		}
	}
	return best
}

// stopAll stops what still runs of a search that has ended.
func (p *planner) stopAll() {
	for i := range p.status.Trials {
		t := &p.status.Trials[i]
		if t.State == v1beta1.TrialRunning || t.State == v1beta1.TrialPending || t.State == v1beta1.TrialPaused {
			t.State, t.Message = v1beta1.TrialStopped, "the search ended"
		}
	}
	if p.status.CompletionTime == nil {
		p.status.CompletionTime = &p.now
	}
}

func (p *planner) finish(condition, reason, message string) {
	p.setCondition(condition, metav1.ConditionTrue, reason, message)
	eventType := corev1.EventTypeNormal
	if condition == batch.TuningFailed {
		eventType = corev1.EventTypeWarning
	}
	p.record(eventType, reason, "%s", message)
}

func (p *planner) setCondition(conditionType string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&p.status.Conditions, metav1.Condition{
		Type: conditionType, Status: status, Reason: reason, Message: message,
		ObservedGeneration: p.search.Generation, LastTransitionTime: p.now,
	})
}

// summarize counts the trials, names the best, and sets the Running and
// Suspended conditions.
func (p *planner) summarize() {
	st := p.status
	st.Counts = v1beta1.TrialCounts{}
	for _, t := range st.Trials {
		switch t.State {
		case v1beta1.TrialPending:
			st.Counts.Pending++
		case v1beta1.TrialRunning:
			st.Counts.Running++
		case v1beta1.TrialPaused:
			st.Counts.Paused++
		case v1beta1.TrialSucceeded:
			st.Counts.Succeeded++
		case v1beta1.TrialFailed:
			st.Counts.Failed++
		case v1beta1.TrialStopped:
			st.Counts.Stopped++
		}
	}
	if b := p.best(); b != nil {
		st.BestTrial, st.BestValue = b.Name, b.Value
	}
	st.ObservedGeneration = p.search.Generation
	switch {
	case p.finished():
		p.setCondition(batch.TuningRunning, metav1.ConditionFalse, "Ended", "the search has ended")
		p.setCondition(batch.TuningSuspended, metav1.ConditionFalse, "Ended", "the search has ended")
	case p.search.Spec.Suspend:
		p.setCondition(batch.TuningRunning, metav1.ConditionFalse, ReasonSuspended, "the search is paused: no trial starts, running trials are paused")
		p.setCondition(batch.TuningSuspended, metav1.ConditionTrue, ReasonSuspended, "the search is paused: no trial starts, running trials are paused")
	default:
		p.setCondition(batch.TuningRunning, metav1.ConditionTrue, ReasonTrialsRunning,
			fmt.Sprintf("%d of %d trials made, %d running", len(st.Trials), p.search.Spec.MaxTrials, st.Counts.Running+st.Counts.Pending))
		p.setCondition(batch.TuningSuspended, metav1.ConditionFalse, ReasonTrialsRunning, "the search runs")
	}
}

// act lists what the trials' jobs need: creating the pending ones, and
// pausing or resuming each so that it runs exactly when its trial does.
func (p *planner) act() {
	suspend := p.search.Spec.Suspend
	for _, t := range p.status.Trials {
		o := p.observed[t.Name]
		if t.State == v1beta1.TrialPending && !o.exists && !o.foreign {
			p.actions = append(p.actions, action{kind: actCreate, trial: t.Name})
			continue
		}
		if !o.exists || o.foreign || o.phase.IsFinished() {
			continue
		}
		pause := slices.Contains([]v1beta1.TrialState{v1beta1.TrialPaused, v1beta1.TrialStopped, v1beta1.TrialFailed}, t.State) ||
			(t.State == v1beta1.TrialRunning && suspend)
		switch {
		case pause && !o.paused:
			p.actions = append(p.actions, action{kind: actPause, trial: t.Name})
		case !pause && o.paused:
			p.actions = append(p.actions, action{kind: actResume, trial: t.Name})
		}
	}
}
