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
	"math/rand/v2"
	"slices"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// Observation is a trial's parameter values and its objective value, as a
// loss: smaller is better, whatever the search's direction (Loss).
type Observation struct {
	Parameters []v1beta1.ParameterValue
	Loss       float64
}

// Loss turns an objective value into one where smaller is better.
func Loss(value float64, direction v1beta1.ObjectiveDirection) float64 {
	if direction == v1beta1.Maximize {
		return -value
	}
	return value
}

// Better says whether objective value a beats b.
func Better(a, b float64, direction v1beta1.ObjectiveDirection) bool {
	return Loss(a, direction) < Loss(b, direction)
}

// Suggest chooses the parameter values of the trial with the given index.
// observed are the trials with an objective value so far. ok is false when
// the algorithm has no more points (a grid walked to its end).
func Suggest(algorithm v1beta1.TuningAlgorithm, space *Space, seed int64, index int32, observed []Observation) ([]v1beta1.ParameterValue, bool) {
	rng := TrialRNG(seed, index)
	switch algorithm.Name {
	case v1beta1.AlgorithmGrid:
		return space.GridPoint(int64(index))
	case v1beta1.AlgorithmTPE:
		if int32(len(observed)) < max(algorithm.StartupTrials, 2) {
			return space.Random(rng), true
		}
		return space.tpe(rng, observed), true
	default:
		return space.Random(rng), true
	}
}

// TPE's settings: the share of the observations that count as good, and
// how many candidates it scores.
const (
	tpeGoodShare  = 0.25
	tpeCandidates = 24
)

// tpe is the tree-structured Parzen estimator, each parameter on its own:
// the observations are split into the good (the best quarter) and the bad;
// a density of each over [0, 1] is a mixture of a flat prior and a normal
// kernel around each of its points; candidates are drawn from the good
// density, and the one where the good density is largest against the bad
// wins.
func (s *Space) tpe(rng *rand.Rand, observed []Observation) []v1beta1.ParameterValue {
	sorted := slices.Clone(observed)
	slices.SortStableFunc(sorted, func(a, b Observation) int {
		switch {
		case a.Loss < b.Loss:
			return -1
		case a.Loss > b.Loss:
			return 1
		}
		return 0
	})
	nGood := max(1, int(math.Ceil(tpeGoodShare*float64(len(sorted)))))
	good, bad := sorted[:nGood], sorted[nGood:]
	out := make([]v1beta1.ParameterValue, len(s.dims))
	for i, d := range s.dims {
		goodPoints, badPoints := unitPoints(d, good), unitPoints(d, bad)
		var u float64
		if d.typ == v1beta1.ParameterCategorical {
			u = bestCategory(rng, len(d.values), goodPoints, badPoints)
		} else {
			u = bestContinuous(rng, goodPoints, badPoints)
		}
		out[i] = v1beta1.ParameterValue{Name: d.name, Value: d.unitToValue(u)}
	}
	return out
}

// unitPoints are the observations' values of one parameter in [0, 1].
func unitPoints(d dimension, obs []Observation) []float64 {
	var out []float64
	for _, o := range obs {
		for _, p := range o.Parameters {
			if p.Name != d.name {
				continue
			}
			if u, ok := d.valueToUnit(p.Value); ok {
				out = append(out, min(max(u, 0), 1))
			}
		}
	}
	return out
}

// parzen is a density over [0, 1]: a flat prior with the weight of one
// point, and a normal kernel around each point.
type parzen struct {
	points []float64
	sigma  float64
}

func newParzen(points []float64) parzen {
	// Scott's rule, kept within sensible bounds for a unit interval.
	sigma := 1.06 * 0.3 * math.Pow(float64(len(points)+1), -0.2)
	return parzen{points: points, sigma: min(max(sigma, 0.03), 0.5)}
}

func (p parzen) density(x float64) float64 {
	sum := 1.0 // the flat prior
	for _, c := range p.points {
		z := (x - c) / p.sigma
		sum += math.Exp(-z*z/2) / (p.sigma * math.Sqrt(2*math.Pi))
	}
	return sum / float64(len(p.points)+1)
}

func (p parzen) sample(rng *rand.Rand) float64 {
	k := rng.IntN(len(p.points) + 1)
	if k == len(p.points) {
		return rng.Float64()
	}
	return min(max(p.points[k]+rng.NormFloat64()*p.sigma, 0), 1)
}

func bestContinuous(rng *rand.Rand, good, bad []float64) float64 {
	l, g := newParzen(good), newParzen(bad)
	best, bestScore := 0.0, math.Inf(-1)
	for range tpeCandidates {
		x := l.sample(rng)
		if score := math.Log(l.density(x)) - math.Log(g.density(x)); score > bestScore {
			best, bestScore = x, score
		}
	}
	return best
}

// bestCategory works on the categories' counts, each with a prior of one,
// and returns the middle of the winning category's share of [0, 1].
func bestCategory(rng *rand.Rand, n int, good, bad []float64) float64 {
	count := func(points []float64) []float64 {
		c := make([]float64, n)
		for i := range c {
			c[i] = 1
		}
		for _, u := range points {
			c[min(int(u*float64(n)), n-1)]++
		}
		return c
	}
	l, g := count(good), count(bad)
	lSum, gSum := float64(len(good)+n), float64(len(bad)+n)
	best, bestScore := 0, math.Inf(-1)
	for range tpeCandidates {
		// Draw a category by the good counts.
		r, k := rng.Float64()*lSum, 0
		for ; k < n-1 && r >= l[k]; k++ {
			r -= l[k]
		}
		if score := math.Log(l[k]/lSum) - math.Log(g[k]/gSum); score > bestScore {
			best, bestScore = k, score
		}
	}
	return (float64(best) + 0.5) / float64(n)
}
