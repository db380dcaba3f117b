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
	"strconv"
	"testing"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

func mustSpace(t *testing.T, params ...v1beta1.TuningParameter) *Space {
	t.Helper()
	s, err := NewSpace(params)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRandomStaysInRange(t *testing.T) {
	s := mustSpace(t,
		v1beta1.TuningParameter{Name: "lr", Type: v1beta1.ParameterDouble, Min: "0.0001", Max: "0.1", LogScale: true},
		v1beta1.TuningParameter{Name: "depth", Type: v1beta1.ParameterInt, Min: "2", Max: "4"},
		v1beta1.TuningParameter{Name: "opt", Type: v1beta1.ParameterCategorical, Values: []string{"sgd", "adam"}},
		v1beta1.TuningParameter{Name: "drop", Type: v1beta1.ParameterDouble, Min: "0", Max: "0.5", Step: "0.1"},
	)
	depths, opts, decades := map[string]int{}, map[string]int{}, map[int]int{}
	for i := range int32(2000) {
		values := s.Random(TrialRNG(42, i))
		lr, _ := strconv.ParseFloat(values[0].Value, 64)
		if lr < 0.0001 || lr > 0.1 {
			t.Fatalf("lr %v out of range", lr)
		}
		decades[int(math.Floor(math.Log10(lr)))]++
		depths[values[1].Value]++
		opts[values[2].Value]++
		drop, _ := strconv.ParseFloat(values[3].Value, 64)
		if k := drop / 0.1; math.Abs(k-math.Round(k)) > 1e-9 || drop < 0 || drop > 0.5 {
			t.Fatalf("drop %v is not on the step's grid from 0 to 0.5", drop)
		}
	}
	// Log scale: every decade from 1e-4 to 1e-2 gets about a third.
	for d := -4; d <= -2; d++ {
		if n := decades[d]; n < 500 || n > 830 {
			t.Errorf("decade 1e%d drawn %d times of 2000, want about 667 on a log scale", d, n)
		}
	}
	// Every whole number from min to max, max included.
	for _, d := range []string{"2", "3", "4"} {
		if n := depths[d]; n < 550 || n > 780 {
			t.Errorf("depth %s drawn %d times of 2000, want about 667", d, n)
		}
	}
	if len(depths) != 3 || len(opts) != 2 {
		t.Errorf("depths %v, optimizers %v", depths, opts)
	}
	// The same seed and index, the same values; another index, others.
	a, b, c := s.Random(TrialRNG(7, 3)), s.Random(TrialRNG(7, 3)), s.Random(TrialRNG(7, 4))
	if a[0] != b[0] || a[0] == c[0] {
		t.Errorf("replay: %v %v, next index %v", a, b, c)
	}
}

func TestGrid(t *testing.T) {
	s := mustSpace(t,
		v1beta1.TuningParameter{Name: "depth", Type: v1beta1.ParameterInt, Min: "1", Max: "3"},
		v1beta1.TuningParameter{Name: "lr", Type: v1beta1.ParameterDouble, Min: "0.1", Max: "0.3", Step: "0.1"},
	)
	if n := s.GridSize(1000); n != 9 {
		t.Fatalf("grid size %d, want 9", n)
	}
	seen := map[string]bool{}
	for i := range int64(9) {
		p, ok := s.GridPoint(i)
		if !ok {
			t.Fatalf("point %d: past the end", i)
		}
		seen[p[0].Value+"/"+p[1].Value] = true
	}
	if len(seen) != 9 || !seen["1/0.1"] || !seen["3/0.3"] || !seen["2/0.2"] {
		t.Errorf("grid points %v", seen)
	}
	if _, ok := s.GridPoint(9); ok {
		t.Error("point 9 of a 9-point grid exists")
	}
}

// bowl is a known objective: smallest (0) at lr 0.01, depth 6, and a
// categorical whose "adam" is better.
func bowl(values []v1beta1.ParameterValue) float64 {
	lr, _ := strconv.ParseFloat(values[0].Value, 64)
	depth, _ := strconv.ParseFloat(values[1].Value, 64)
	loss := math.Pow(math.Log10(lr)+2, 2) + math.Pow((depth-6)/4, 2)
	if values[2].Value != "adam" {
		loss += 0.5
	}
	return loss
}

// TestTPEBeatsRandom: on a known bowl, over many seeds, the best loss TPE
// finds in 30 trials is smaller on average than random search's, and its
// late choices crowd around the minimum.
func TestTPEBeatsRandom(t *testing.T) {
	s := mustSpace(t,
		v1beta1.TuningParameter{Name: "lr", Type: v1beta1.ParameterDouble, Min: "0.00001", Max: "1", LogScale: true},
		v1beta1.TuningParameter{Name: "depth", Type: v1beta1.ParameterInt, Min: "1", Max: "16"},
		v1beta1.TuningParameter{Name: "opt", Type: v1beta1.ParameterCategorical, Values: []string{"sgd", "adam", "rmsprop"}},
	)
	search := func(algorithm v1beta1.TuningAlgorithm, seed int64) (best, lateMean float64) {
		var observed []Observation
		best, late := math.Inf(1), 0.0
		for i := range int32(30) {
			values, _ := Suggest(algorithm, s, seed, i, observed)
			loss := bowl(values)
			observed = append(observed, Observation{Parameters: values, Loss: loss})
			best = min(best, loss)
			if i >= 20 {
				late += loss / 10
			}
		}
		return best, late
	}
	var tpeBest, randomBest, tpeLate, randomLate float64
	const seeds = 40
	for seed := range int64(seeds) {
		b, l := search(v1beta1.TuningAlgorithm{Name: v1beta1.AlgorithmTPE, StartupTrials: 5}, seed)
		tpeBest, tpeLate = tpeBest+b/seeds, tpeLate+l/seeds
		b, l = search(v1beta1.TuningAlgorithm{Name: v1beta1.AlgorithmRandom}, seed)
		randomBest, randomLate = randomBest+b/seeds, randomLate+l/seeds
	}
	t.Logf("mean best loss: tpe %.3f, random %.3f; mean loss of trials 20-29: tpe %.3f, random %.3f", tpeBest, randomBest, tpeLate, randomLate)
	if tpeBest >= randomBest {
		t.Errorf("tpe's mean best %.3f is not below random's %.3f", tpeBest, randomBest)
	}
	if tpeLate >= randomLate/2 {
		t.Errorf("tpe's late trials average %.3f, not under half of random's %.3f", tpeLate, randomLate)
	}
}

func TestASHA(t *testing.T) {
	a := NewASHA(&v1beta1.ASHA{MinResource: 10, ReductionFactor: 3, Rungs: 3})
	if got := a.Rungs(); len(got) != 3 || got[0] != 10 || got[1] != 30 || got[2] != 90 {
		t.Fatalf("rungs %v, want 10 30 90", got)
	}
	for progress, want := range map[int64]int32{0: 0, 9: 0, 10: 1, 29: 1, 30: 2, 90: 3, 1000: 3} {
		if got := a.Reached(progress); got != want {
			t.Errorf("Reached(%d) = %d, want %d", progress, got, want)
		}
	}
	// The first at a rung goes on; of 3, only the best; of 6, the best 2.
	if !a.InBestShare(5, []float64{5}) {
		t.Error("the first trial at a rung was not kept")
	}
	if a.InBestShare(5, []float64{4, 5}) || !a.InBestShare(4, []float64{4, 5, 6}) || a.InBestShare(5, []float64{4, 5, 6}) {
		t.Error("with two or three at the rung, only the best goes on")
	}
	six := []float64{1, 2, 3, 4, 5, 6}
	if !a.InBestShare(2, six) || a.InBestShare(3, six) {
		t.Error("with six at the rung, the best two go on")
	}
}

func TestMedianStops(t *testing.T) {
	others := [][]Point{
		{{Progress: 5, Loss: 3}, {Progress: 10, Loss: 2}},
		{{Progress: 5, Loss: 4}, {Progress: 10, Loss: 3}},
		{{Progress: 5, Loss: 5}, {Progress: 10, Loss: 4}},
		{{Progress: 20, Loss: 0.1}}, // nothing at or before 10
	}
	if !MedianStops(3.5, 10, others, 3) {
		t.Error("3.5 against a median of 3 at step 10: not stopped")
	}
	if MedianStops(2.5, 10, others, 3) {
		t.Error("2.5 against a median of 3: stopped")
	}
	if MedianStops(9, 10, others, 4) {
		t.Error("judged with 3 trials at the step where 4 are required")
	}
}

func TestMergeCurve(t *testing.T) {
	var curve []v1beta1.CurvePoint
	curve = MergeCurve(curve, []Sample{{1, 5}, {2, 4}, {3, 3}})
	curve = MergeCurve(curve, []Sample{{3, 3}, {4, 2.5}}) // the history overlaps what is stored
	if len(curve) != 4 || curve[3].Progress != 4 {
		t.Fatalf("curve %v, want steps 1 to 4", curve)
	}
	// A restart from step 2's checkpoint: step 3 and 4 are replaced.
	curve = MergeCurve(curve, []Sample{{4, 2.5}, {3, 2.9}})
	if len(curve) != 3 || curve[2].Progress != 3 || curve[2].Value != "2.9" {
		t.Fatalf("after a rewind: %v", curve)
	}
	var long []Sample
	for i := range int64(100) {
		long = append(long, Sample{Progress: i + 10, Value: float64(100 - i)})
	}
	curve = MergeCurve(curve, long)
	if len(curve) > 16 || curve[0].Progress != 1 || curve[len(curve)-1].Progress != 109 {
		t.Errorf("thinned curve %v: want at most 16 points, from the first to the last", curve)
	}
}

func TestTrialValue(t *testing.T) {
	curve := []Sample{{1, 3}, {5, 1}, {9, 2}}
	step := int64(6)
	for _, tt := range []struct {
		objective v1beta1.TuningObjective
		previous  *float64
		want      float64
	}{
		{v1beta1.TuningObjective{TrialValue: v1beta1.TrialValueLast, Direction: v1beta1.Minimize}, nil, 2},
		{v1beta1.TuningObjective{TrialValue: v1beta1.TrialValueBest, Direction: v1beta1.Minimize}, nil, 1},
		{v1beta1.TuningObjective{TrialValue: v1beta1.TrialValueBest, Direction: v1beta1.Maximize}, nil, 3},
		{v1beta1.TuningObjective{TrialValue: v1beta1.TrialValueBest, Direction: v1beta1.Minimize}, ptr(0.5), 0.5},
		{v1beta1.TuningObjective{TrialValue: v1beta1.TrialValueAtStep, Step: &step, Direction: v1beta1.Minimize}, nil, 1},
	} {
		if got, ok := TrialValue(&tt.objective, curve, tt.previous); !ok || got != tt.want {
			t.Errorf("%+v: %v %v, want %v", tt.objective, got, ok, tt.want)
		}
	}
}

func ptr(v float64) *float64 { return &v }
