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
	"strconv"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// Sample is one value a trial reported: the metric's value at an amount of
// progress, oldest first.
type Sample struct {
	Progress int64
	Value    float64
}

// MergeCurve adds a trial's recent samples to its stored curve and thins
// it to at most batch.MaxTrialCurvePoints. The samples are the authority
// on the progress they cover: stored points from there on are replaced. A
// sample behind the one before it is a rewind (the trial restarted from an
// earlier checkpoint, or from the beginning): the points after it go.
func MergeCurve(curve []v1beta1.CurvePoint, samples []Sample) []v1beta1.CurvePoint {
	if len(samples) == 0 {
		return curve
	}
	out := make([]v1beta1.CurvePoint, 0, len(curve)+len(samples))
	for _, p := range curve {
		if p.Progress < samples[0].Progress {
			out = append(out, p)
		}
	}
	for _, s := range samples {
		for len(out) > 0 && out[len(out)-1].Progress >= s.Progress {
			out = out[:len(out)-1]
		}
		out = append(out, v1beta1.CurvePoint{Progress: s.Progress, Value: formatValue(s.Value)})
	}
	return thin(out, batch.MaxTrialCurvePoints)
}

// thin drops every other point but the last until at most n remain, so
// that the whole run stays in view at a coarser grain.
func thin(curve []v1beta1.CurvePoint, n int) []v1beta1.CurvePoint {
	for len(curve) > n {
		kept := curve[:0:0]
		for i := 0; i < len(curve)-1; i += 2 {
			kept = append(kept, curve[i])
		}
		curve = append(kept, curve[len(curve)-1])
	}
	return curve
}

// CurveValues reads a stored curve back.
func CurveValues(curve []v1beta1.CurvePoint) []Sample {
	out := make([]Sample, 0, len(curve))
	for _, p := range curve {
		if v, err := batch.ParseMetricValue(p.Value); err == nil {
			out = append(out, Sample{Progress: p.Progress, Value: v})
		}
	}
	return out
}

// TrialValue is a trial's objective value by objective.trialValue: the
// last value, the best of its curve and of the value it had (a thinned
// curve may have lost the best point), or the value at objective.step.
func TrialValue(objective *v1beta1.TuningObjective, curve []Sample, previous *float64) (float64, bool) {
	if len(curve) == 0 {
		if previous != nil {
			return *previous, true
		}
		return 0, false
	}
	switch objective.TrialValue {
	case v1beta1.TrialValueBest:
		best := curve[0].Value
		for _, s := range curve[1:] {
			if Better(s.Value, best, objective.Direction) {
				best = s.Value
			}
		}
		if previous != nil && Better(*previous, best, objective.Direction) {
			best = *previous
		}
		return best, true
	case v1beta1.TrialValueAtStep:
		found, value := false, 0.0
		for _, s := range curve {
			if objective.Step != nil && s.Progress <= *objective.Step {
				found, value = true, s.Value
			}
		}
		return value, found
	default:
		return curve[len(curve)-1].Value, true
	}
}

// formatValue writes a metric value as the API stores it.
func formatValue(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }

// FormatValue writes an objective value for the status.
func FormatValue(v float64) string { return formatValue(v) }
