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
	"sort"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// ASHA is asynchronous successive halving: rungs at growing amounts of the
// resource (steps or epochs), and at each the best 1/factor of the trials
// that reached it go on.
type ASHA struct {
	rungs  []int64
	factor int
}

// NewASHA reads a defaulted, validated asha spec.
func NewASHA(spec *v1beta1.ASHA) ASHA {
	a := ASHA{factor: int(spec.ReductionFactor)}
	r := spec.MinResource
	for range spec.Rungs {
		a.rungs = append(a.rungs, r)
		r *= int64(spec.ReductionFactor)
	}
	return a
}

// Rungs are the resource amounts of the rungs, first rung first.
func (a ASHA) Rungs() []int64 { return a.rungs }

// Reached is how many rungs a trial at progress has reached.
func (a ASHA) Reached(progress int64) int32 {
	return int32(sort.Search(len(a.rungs), func(i int) bool { return a.rungs[i] > progress }))
}

// InBestShare says whether loss ranks among the best 1/factor of the
// losses recorded at a rung (its own among them), at least the best one:
// the first trial at a rung always goes on.
func (a ASHA) InBestShare(loss float64, atRung []float64) bool {
	keep := max(1, len(atRung)/a.factor)
	better := 0
	for _, l := range atRung {
		if l < loss {
			better++
		}
	}
	return better < keep
}

// Point is one value of a trial's objective metric, as a loss, at an
// amount of progress.
type Point struct {
	Progress int64
	Loss     float64
}

// MedianStops is the median stopping rule: a trial whose best loss so far
// is worse than the median of the other trials' losses at the same
// progress stops. Another trial's loss there is that of the last point of
// its curve at or before it; the rule judges only when at least minTrials
// other trials have one.
func MedianStops(best float64, progress int64, others [][]Point, minTrials int) bool {
	var at []float64
	for _, curve := range others {
		found, loss := false, 0.0
		for _, p := range curve {
			if p.Progress <= progress {
				found, loss = true, p.Loss
			}
		}
		if found {
			at = append(at, loss)
		}
	}
	if len(at) < max(minTrials, 1) {
		return false
	}
	sort.Float64s(at)
	median := at[len(at)/2]
	if len(at)%2 == 0 {
		median = (at[len(at)/2-1] + at[len(at)/2]) / 2
	}
	return best > median && !math.IsNaN(best)
}
