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
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/generated/clientset/versioned"
)

// The names of a TuningJob, a hyperparameter search, as kubectl knows them.
// A search is not a training job kind (jobKinds): it makes training jobs,
// its trials, and the commands that take one name it tune/NAME.
const (
	tuningJobKind      = "TuningJob"
	tuningJobResource  = "tuningjobs"
	tuningJobShortName = "tune"
)

// tuningRef is how the commands name a search: tune/NAME.
func tuningRef(name string) string { return tuningJobShortName + "/" + name }

// tuningJobNamed says whether a kubectl-style resource word names
// TuningJobs, as kindNamed does for the job kinds: the short name, the
// singular or plural resource or the kind, case-insensitively, with or
// without the group (and version) after a dot.
func tuningJobNamed(word string) bool {
	word = strings.ToLower(word)
	resource, group, qualified := strings.Cut(word, ".")
	if qualified && group != v1beta1.GroupName && group != v1beta1.SchemeGroupVersion.Version+"."+v1beta1.GroupName {
		return false
	}
	return resource == tuningJobShortName || resource == strings.ToLower(tuningJobKind) || resource == tuningJobResource
}

// parseTuningArg reads an argument that names a search: tune/NAME (or
// tuningjob/NAME, ...) and, when plainName is true, NAME too. ok is false
// for an argument of another form, which may name a training job.
func parseTuningArg(arg string, plainName bool) (name string, ok bool, err error) {
	word, name, qualified := strings.Cut(arg, "/")
	switch {
	case !qualified && !plainName:
		return "", false, nil
	case !qualified:
		name = arg
	case !tuningJobNamed(word):
		return "", false, nil
	}
	if name == "" || strings.Contains(name, "/") {
		return "", true, fmt.Errorf("%q is not a search: name one as %s", arg, tuningRef("NAME"))
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return "", true, fmt.Errorf("%q is not a search name: %s", name, strings.Join(errs, "; "))
	}
	return name, true, nil
}

// getTuningJob fetches a search.
func getTuningJob(ctx context.Context, client versioned.Interface, namespace, name string) (*v1beta1.TuningJob, error) {
	job, err := client.BatchV1beta1().TuningJobs(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("getting %s in namespace %q: %w", tuningRef(name), namespace, err)
	}
	return job, nil
}

// tuningState is the search's one-word state, the one the server's table
// shows: the API's rule (batch.TuningState), which reads the conditions
// alone.
func tuningState(status *v1beta1.TuningJobStatus) string {
	return batch.TuningState(&batch.TuningJobStatus{Conditions: status.Conditions})
}

// tuningFinished says whether the search has ended, as batch.TuningFinished.
func tuningFinished(status *v1beta1.TuningJobStatus) bool {
	return batch.TuningFinished(&batch.TuningJobStatus{Conditions: status.Conditions})
}

// rankedTrials are the search's trials, best first by the objective's
// direction; trials without a value (or with one that is not a number)
// follow, in the order they were made, as do trials of equal value.
func rankedTrials(job *v1beta1.TuningJob) []v1beta1.TrialStatus {
	type ranked struct {
		trial    v1beta1.TrialStatus
		value    float64
		hasValue bool
	}
	rows := make([]ranked, len(job.Status.Trials))
	for i, trial := range job.Status.Trials {
		rows[i].trial = trial
		if trial.Value != "" {
			v, err := batch.ParseMetricValue(trial.Value)
			rows[i].value, rows[i].hasValue = v, err == nil
		}
	}
	maximize := job.Spec.Objective.Direction == v1beta1.Maximize
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		switch {
		case a.hasValue != b.hasValue:
			return a.hasValue
		case a.hasValue && a.value != b.value:
			if maximize {
				return a.value > b.value
			}
			return a.value < b.value
		default:
			return a.trial.Index < b.trial.Index
		}
	})
	trials := make([]v1beta1.TrialStatus, len(rows))
	for i, row := range rows {
		trials[i] = row.trial
	}
	return trials
}

// parameterNames are the search's parameters, in spec order; parameters a
// trial reports that the spec does not name (none, normally) follow.
func parameterNames(job *v1beta1.TuningJob) []string {
	var names []string
	seen := map[string]bool{}
	for _, p := range job.Spec.Parameters {
		if !seen[p.Name] {
			names = append(names, p.Name)
			seen[p.Name] = true
		}
	}
	for _, trial := range job.Status.Trials {
		for _, p := range trial.Parameters {
			if !seen[p.Name] {
				names = append(names, p.Name)
				seen[p.Name] = true
			}
		}
	}
	return names
}

// parameterValue is a trial's value of a parameter, or "-".
func parameterValue(trial *v1beta1.TrialStatus, name string) string {
	for _, p := range trial.Parameters {
		if p.Name == name {
			return p.Value
		}
	}
	return "-"
}

// usesASHA says whether the search stops trials by asha, the only rule
// with rungs and promotions.
func usesASHA(spec *v1beta1.TuningJobSpec) bool {
	return spec.EarlyStopping != nil && spec.EarlyStopping.ASHA != nil
}
