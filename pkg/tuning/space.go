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
	"math"
	"math/rand/v2"
	"strconv"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// Space is the values a search's parameters may take.
type Space struct {
	dims []dimension
}

// dimension is one parameter, its range read once.
type dimension struct {
	name   string
	typ    v1beta1.TuningParameterType
	lo, hi float64
	step   float64 // 0: continuous (double) or every whole number (int)
	log    bool
	values []string // categorical
}

// NewSpace reads the parameters of a validated search.
func NewSpace(params []v1beta1.TuningParameter) (*Space, error) {
	s := &Space{}
	for _, p := range params {
		d := dimension{name: p.Name, typ: p.Type, log: p.LogScale, values: p.Values}
		if p.Type != v1beta1.ParameterCategorical {
			var err error
			typ := batch.TuningParameterType(p.Type)
			if d.lo, err = batch.ParseParameterNumber(p.Min, typ); err != nil {
				return nil, fmt.Errorf("parameter %s: min: %w", p.Name, err)
			}
			if d.hi, err = batch.ParseParameterNumber(p.Max, typ); err != nil {
				return nil, fmt.Errorf("parameter %s: max: %w", p.Name, err)
			}
			if p.Step != "" {
				if d.step, err = batch.ParseParameterNumber(p.Step, typ); err != nil {
					return nil, fmt.Errorf("parameter %s: step: %w", p.Name, err)
				}
			}
		} else if len(p.Values) == 0 {
			return nil, fmt.Errorf("parameter %s has no values", p.Name)
		}
		s.dims = append(s.dims, d)
	}
	return s, nil
}

// unitToValue maps u in [0, 1] to the parameter's value: evenly over the
// range (over its logarithm on a log scale), snapped to the step; for a
// categorical parameter, to one of the values.
func (d dimension) unitToValue(u float64) string {
	u = min(max(u, 0), 1)
	if d.typ == v1beta1.ParameterCategorical {
		return d.values[min(int(u*float64(len(d.values))), len(d.values)-1)]
	}
	lo, hi := d.lo, d.hi
	if d.typ == v1beta1.ParameterInt && d.step == 0 {
		hi++ // every whole number from lo to hi gets an equal share
	}
	var v float64
	if d.log {
		v = math.Exp(math.Log(lo) + u*(math.Log(hi)-math.Log(lo)))
	} else {
		v = lo + u*(hi-lo)
	}
	return d.format(v)
}

// format snaps v to the parameter's grid and writes it.
func (d dimension) format(v float64) string {
	switch {
	case d.step > 0:
		v = d.lo + math.Round((v-d.lo)/d.step)*d.step
	case d.typ == v1beta1.ParameterInt:
		v = math.Floor(v)
	}
	v = min(max(v, d.lo), d.hi)
	if d.typ == v1beta1.ParameterInt {
		return strconv.FormatInt(int64(math.Round(v)), 10)
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// valueToUnit is the inverse of unitToValue, for the values of trials made
// so far: where in [0, 1] the value lies. ok is false for a value the
// parameter cannot take.
func (d dimension) valueToUnit(s string) (float64, bool) {
	if d.typ == v1beta1.ParameterCategorical {
		for i, v := range d.values {
			if v == s {
				return (float64(i) + 0.5) / float64(len(d.values)), true
			}
		}
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false
	}
	lo, hi := d.lo, d.hi
	if d.typ == v1beta1.ParameterInt && d.step == 0 {
		hi++
		v += 0.5 // the middle of the whole number's share
	}
	if hi == lo {
		return 0.5, true
	}
	if d.log {
		return (math.Log(v) - math.Log(lo)) / (math.Log(hi) - math.Log(lo)), true
	}
	return (v - lo) / (hi - lo), true
}

// gridValues are the values a grid search walks for the parameter.
func (d dimension) gridValues() []string {
	if d.typ == v1beta1.ParameterCategorical {
		return d.values
	}
	step := d.step
	if step == 0 {
		step = 1 // an int parameter without a step; validation requires one of a double
	}
	var out []string
	for i := 0; ; i++ {
		v := d.lo + float64(i)*step
		if v > d.hi+step*1e-9 || i > batch.MaxGridPoints {
			break
		}
		out = append(out, d.format(v))
	}
	return out
}

// Random draws every parameter independently and evenly.
func (s *Space) Random(rng *rand.Rand) []v1beta1.ParameterValue {
	out := make([]v1beta1.ParameterValue, len(s.dims))
	for i, d := range s.dims {
		out[i] = v1beta1.ParameterValue{Name: d.name, Value: d.unitToValue(rng.Float64())}
	}
	return out
}

// GridSize is the number of points of the grid, at most limit.
func (s *Space) GridSize(limit int64) int64 {
	n := int64(1)
	for _, d := range s.dims {
		n *= int64(len(d.gridValues()))
		if n >= limit {
			return limit
		}
	}
	return n
}

// GridPoint is the index-th point of the grid, the last parameter varying
// fastest; false past the grid's end.
func (s *Space) GridPoint(index int64) ([]v1beta1.ParameterValue, bool) {
	out := make([]v1beta1.ParameterValue, len(s.dims))
	for i := len(s.dims) - 1; i >= 0; i-- {
		values := s.dims[i].gridValues()
		out[i] = v1beta1.ParameterValue{Name: s.dims[i].name, Value: values[index%int64(len(values))]}
		index /= int64(len(values))
	}
	return out, index == 0
}

// TrialRNG is the random source of one trial's choice: a function of the
// search's seed and the trial's index alone, so that a search replays.
func TrialRNG(seed int64, index int32) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), uint64(index)))
}
