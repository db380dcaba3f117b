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
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/jobclient"
	"tensorstack.dev/training/pkg/tuning"
)

// templateKind is the job kind of a search's trials and the template's
// spec of it, as JSON.
func templateKind(t *v1beta1.TrainingJobTemplate) (*jobclient.Kind, map[string]any, error) {
	raw, err := json.Marshal(t)
	if err != nil {
		return nil, nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, nil, err
	}
	kinds := batch.TemplateKinds()
	names := make([]string, 0, len(kinds))
	for kind := range kinds {
		names = append(names, kind)
	}
	sort.Strings(names)
	for _, kind := range names {
		if spec, ok := doc[kinds[kind]].(map[string]any); ok {
			k, found := jobclient.ByKind(kind)
			if !found {
				return nil, nil, fmt.Errorf("no client of %s", kind)
			}
			return k, spec, nil
		}
	}
	return nil, nil, fmt.Errorf("the trial template holds no job kind's spec")
}

// trialJob makes the job of a trial: the template's spec with the trial's
// values in place of the placeholders, named after the trial, labelled
// with the search, and owned by it.
func trialJob(search *v1beta1.TuningJob, trial *v1beta1.TrialStatus) (v1beta1.TrainingJob, *jobclient.Kind, error) {
	kind, spec, err := templateKind(&search.Spec.TrialTemplate)
	if err != nil {
		return nil, nil, err
	}
	values := map[string]string{batch.TrialNamePlaceholder: trial.Name}
	for _, p := range trial.Parameters {
		values[batch.ParamPlaceholderPrefix+p.Name] = p.Value
	}
	labels := map[string]string{}
	for k, v := range search.Spec.TrialTemplate.Labels {
		labels[k] = v
	}
	labels[v1beta1.LabelTuningJob] = search.Name
	labels[v1beta1.LabelTrialIndex] = strconv.Itoa(int(trial.Index))
	doc := map[string]any{
		"apiVersion": v1beta1.SchemeGroupVersion.String(),
		"kind":       kind.Name,
		"spec":       batch.SubstitutePlaceholders(spec, values),
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, nil, err
	}
	job := kind.New()
	if err := json.Unmarshal(raw, job); err != nil {
		return nil, nil, fmt.Errorf("the trial's job after substitution: %w", err)
	}
	job.SetName(trial.Name)
	job.SetNamespace(search.Namespace)
	job.SetLabels(labels)
	if len(search.Spec.TrialTemplate.Annotations) > 0 {
		job.SetAnnotations(search.Spec.TrialTemplate.Annotations)
	}
	job.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "TuningJob",
		Name: search.Name, UID: search.UID, Controller: ptr.To(true),
	}})
	return job, kind, nil
}

// observe reads what a trial's job says: its phase, its objective metric
// over its recent reports, its checkpoints.
func observe(search *v1beta1.TuningJob, job v1beta1.TrainingJob) observation {
	if owner := metav1.GetControllerOf(job); owner == nil || owner.UID != search.UID {
		return observation{exists: true, foreign: true}
	}
	status, spec := job.JobStatus(), job.CommonSpec()
	o := observation{
		exists:           true,
		phase:            status.Phase,
		paused:           v1beta1.PauseEnabled(spec),
		checkpointPolicy: spec.RunPolicy.Checkpoint != nil,
	}
	if c := status.Checkpoint; c != nil && c.Latest != nil {
		o.checkpointStep = c.Latest.Step
	}
	if status.Phase == v1beta1.JobFailed {
		o.failure = "the job failed"
		for _, c := range status.Conditions {
			if c.Type == string(v1beta1.JobFailed) && c.Status == metav1.ConditionTrue {
				o.failure = c.Message
			}
		}
	}
	pr := status.Progress
	if pr == nil {
		return o
	}
	if a := status.Accounting; status.Phase == v1beta1.JobRunning && a != nil && a.State == v1beta1.AccountingRunning &&
		a.StateSince != nil && pr.ReportTime != nil {
		// The start of the run is stored to the second: a report in that
		// second counts as the run's.
		o.judgeable = !pr.ReportTime.Time.Before(a.StateSince.Time)
	}
	metric := search.Spec.Objective.Metric
	epochs := false
	if es := search.Spec.EarlyStopping; es != nil && es.ASHA != nil && es.ASHA.Resource == v1beta1.ResourceEpochs {
		epochs = true
	}
	progressOf := func(step *int64, epoch *int32) (int64, bool) {
		if epochs {
			if epoch == nil {
				return 0, false
			}
			return int64(*epoch), true
		}
		if step == nil {
			return 0, false
		}
		return *step, true
	}
	add := func(progress int64, metrics []v1beta1.ProgressMetric) {
		for _, m := range metrics {
			if m.Name != metric {
				continue
			}
			if v, err := batch.ParseMetricValue(m.Value); err == nil {
				o.samples = append(o.samples, tuning.Sample{Progress: progress, Value: v})
			}
		}
	}
	for _, s := range pr.History {
		if progress, ok := progressOf(s.Step, s.Epoch); ok {
			add(progress, s.Metrics)
		}
	}
	// The last report, when the history does not end with it.
	if progress, ok := progressOf(pr.Step, pr.Epoch); ok {
		if n := len(o.samples); n == 0 || o.samples[n-1].Progress != progress {
			add(progress, pr.Metrics)
		}
	}
	for _, m := range pr.Metrics {
		if !slices.Contains(o.metrics, m.Name) {
			o.metrics = append(o.metrics, m.Name)
		}
	}
	return o
}
