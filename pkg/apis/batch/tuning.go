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

package batch

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Limits of a search, so that its status stays well inside an object's size.
const (
	MaxTuningParameters = 16
	MaxTrials           = 500
	MaxTrialCurvePoints = 16
	// MaxGridPoints bounds the values one parameter's step makes.
	MaxGridPoints = 10000
)

// Placeholders a trial template may hold: ${param.<name>} is the trial's
// value of a parameter, ${trial.name} the trial's job name.
const (
	ParamPlaceholderPrefix = "param."
	TrialNamePlaceholder   = "trial.name"
)

// placeholderPattern finds ${...} in a string of the trial template.
var placeholderPattern = regexp.MustCompile(`\$\{([^}]*)\}`)

// ParamPlaceholder is the placeholder of a parameter.
func ParamPlaceholder(name string) string { return "${" + ParamPlaceholderPrefix + name + "}" }

// TrialName is the job name of a search's trial.
func TrialName(search string, index int32) string { return fmt.Sprintf("%s-%d", search, index) }

// WalkPlaceholders calls visit with every placeholder found in the strings
// of a JSON document (as encoding/json decodes it into any), and the field
// path of the string that holds it.
func WalkPlaceholders(doc any, path *field.Path, visit func(placeholder string, path *field.Path)) {
	switch v := doc.(type) {
	case string:
		for _, m := range placeholderPattern.FindAllStringSubmatch(v, -1) {
			visit(m[1], path)
		}
	case map[string]any:
		for k, child := range v {
			WalkPlaceholders(child, path.Child(k), visit)
		}
	case []any:
		for i, child := range v {
			WalkPlaceholders(child, path.Index(i), visit)
		}
	}
}

// SubstitutePlaceholders replaces, in every string of a JSON document, each
// placeholder named in values with its value, and returns the document.
// Placeholders it does not know are left as they are; validation refuses
// them before a trial is made.
func SubstitutePlaceholders(doc any, values map[string]string) any {
	switch v := doc.(type) {
	case string:
		if !strings.Contains(v, "${") {
			return v
		}
		return placeholderPattern.ReplaceAllStringFunc(v, func(m string) string {
			if value, ok := values[m[2:len(m)-1]]; ok {
				return value
			}
			return m
		})
	case map[string]any:
		for k, child := range v {
			v[k] = SubstitutePlaceholders(child, values)
		}
	case []any:
		for i, child := range v {
			v[i] = SubstitutePlaceholders(child, values)
		}
	}
	return doc
}

// ParseMetricValue reads a reported metric value or an objective's goal: a
// finite decimal number.
func ParseMetricValue(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, errors.New("must be a finite decimal number, such as 0.25 or 1e-3")
	}
	return v, nil
}

// ParseParameterNumber reads a double or int parameter's min, max or step.
func ParseParameterNumber(s string, typ TuningParameterType) (float64, error) {
	if typ == ParameterInt {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v > 1<<53 || v < -(1<<53) {
			return 0, errors.New("must be a whole number from -2^53 to 2^53")
		}
		return float64(v), nil
	}
	return ParseMetricValue(s)
}

// Conditions of a search.
const (
	TuningRunning   = "Running"
	TuningSuspended = "Suspended"
	TuningSucceeded = "Succeeded"
	TuningFailed    = "Failed"
)

// TuningFinished says whether a search has ended: Succeeded or Failed.
func TuningFinished(status *TuningJobStatus) bool {
	for _, c := range status.Conditions {
		if (c.Type == TuningSucceeded || c.Type == TuningFailed) && c.Status == metav1.ConditionTrue {
			return true
		}
	}
	return false
}

// TuningState is a search's one-word state, for tables: the last of its
// Succeeded, Failed, Suspended and Running conditions that holds, or
// Pending.
func TuningState(status *TuningJobStatus) string {
	state := "Pending"
	for _, t := range []string{TuningRunning, TuningSuspended, TuningFailed, TuningSucceeded} {
		for _, c := range status.Conditions {
			if c.Type == t && c.Status == metav1.ConditionTrue {
				state = t
			}
		}
	}
	return state
}
