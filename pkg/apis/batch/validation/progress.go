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

package validation

import (
	"fmt"
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch"
)

// progressMetricName is what a metric may be called: short, readable and
// usable as a Prometheus label value or a column header.
var progressMetricName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_./-]*$`)

// ValidateProgressReport checks the body of a POST to a job's progress
// subresource. Its fields sit at the top of the body, so the paths have no
// prefix.
func ValidateProgressReport(report *batch.ProgressReport) field.ErrorList {
	v := &report.ProgressValues
	if v.Percent == nil && v.Step == nil && v.Epoch == nil && len(v.Metrics) == 0 && v.Message == "" && v.RemainingSeconds == nil {
		return field.ErrorList{field.Required(field.NewPath("percent"),
			"a report carries at least one of percent, step, epoch, remainingSeconds, metrics or message")}
	}
	return validateProgressValues(v, nil)
}

// validateProgressValues checks the bounds of a report, in a request or in
// a job's status.
func validateProgressValues(v *batch.ProgressValues, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if v.Percent != nil && (*v.Percent < 0 || *v.Percent > 100) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("percent"), *v.Percent, "must be between 0 and 100"))
	}
	allErrs = append(allErrs, validateCount(v.Step, v.TotalSteps, fldPath.Child("step"), fldPath.Child("totalSteps"))...)
	allErrs = append(allErrs, validateCount(int64Of(v.Epoch), int64Of(v.TotalEpochs), fldPath.Child("epoch"), fldPath.Child("totalEpochs"))...)
	if s := v.RemainingSeconds; s != nil && (*s < 0 || *s > batch.MaxProgressRemainingSeconds) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("remainingSeconds"), *s,
			fmt.Sprintf("must be between 0 and %d (ten years)", batch.MaxProgressRemainingSeconds)))
	}
	if len(v.Message) > batch.MaxProgressMessageBytes {
		allErrs = append(allErrs, field.TooLong(fldPath.Child("message"), "" /*unused*/, batch.MaxProgressMessageBytes))
	}
	return append(allErrs, validateProgressMetrics(v.Metrics, fldPath.Child("metrics"))...)
}

// validateCount checks a done/total pair: neither negative, total at least
// one, done at most total, and no total without a count.
func validateCount(done, total *int64, donePath, totalPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if done != nil && *done < 0 {
		allErrs = append(allErrs, nonNegative(donePath, *done))
	}
	if total == nil {
		return allErrs
	}
	switch {
	case *total < 1:
		allErrs = append(allErrs, field.Invalid(totalPath, *total, "must be at least 1"))
	case done == nil:
		allErrs = append(allErrs, field.Required(donePath, fmt.Sprintf("%s is given", totalPath)))
	case *done > *total:
		allErrs = append(allErrs, field.Invalid(donePath, *done, fmt.Sprintf("must be at most %s (%d)", totalPath, *total)))
	}
	return allErrs
}

func validateProgressMetrics(metrics []batch.ProgressMetric, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(metrics) > batch.MaxProgressMetrics {
		return field.ErrorList{field.TooMany(fldPath, len(metrics), batch.MaxProgressMetrics)}
	}
	seen := make(map[string]bool, len(metrics))
	for i, m := range metrics {
		namePath := fldPath.Index(i).Child("name")
		switch {
		case m.Name == "":
			allErrs = append(allErrs, field.Required(namePath, ""))
		case len(m.Name) > batch.MaxProgressMetricNameChars:
			allErrs = append(allErrs, field.TooLong(namePath, "" /*unused*/, batch.MaxProgressMetricNameChars))
		case !progressMetricName.MatchString(m.Name):
			allErrs = append(allErrs, field.Invalid(namePath, m.Name,
				"must start with a letter and hold only letters, digits, '_', '-', '.' and '/'"))
		case seen[m.Name]:
			allErrs = append(allErrs, field.Duplicate(namePath, m.Name))
		}
		seen[m.Name] = true
		valuePath := fldPath.Index(i).Child("value")
		if len(m.Value) > batch.MaxProgressMetricValueLen {
			allErrs = append(allErrs, field.TooLong(valuePath, "" /*unused*/, batch.MaxProgressMetricValueLen))
			continue
		}
		if _, err := batch.ParseMetricValue(m.Value); err != nil {
			allErrs = append(allErrs, field.Invalid(valuePath, m.Value, "must be a finite decimal number, such as 0.25 or 1.5e3"))
		}
	}
	return allErrs
}

func int64Of(v *int32) *int64 {
	if v == nil {
		return nil
	}
	n := int64(*v)
	return &n
}

// validateProgressHistory bounds a history that arrives with a whole status,
// as another controller's copy of a job (MultiKueue) writes it; the server
// keeps the history of its own jobs itself.
func validateProgressHistory(history []batch.ProgressSample, fldPath *field.Path) field.ErrorList {
	if len(history) > batch.MaxProgressHistory {
		return field.ErrorList{field.TooMany(fldPath, len(history), batch.MaxProgressHistory)}
	}
	var allErrs field.ErrorList
	for i := range history {
		allErrs = append(allErrs, validateProgressMetrics(history[i].Metrics, fldPath.Index(i).Child("metrics"))...)
	}
	return allErrs
}
