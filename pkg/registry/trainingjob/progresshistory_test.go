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

package trainingjob

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

func samplesOfSteps(steps ...int64) []batch.ProgressSample {
	start := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	out := make([]batch.ProgressSample, len(steps))
	for i, step := range steps {
		out[i] = batch.ProgressSample{ReportTime: metav1.NewMicroTime(start.Add(time.Duration(step) * time.Second)), Step: ptr.To(step)}
	}
	return out
}

func stepsOf(samples []batch.ProgressSample) []int64 {
	steps := make([]int64, len(samples))
	for i, s := range samples {
		steps[i] = *s.Step
	}
	return steps
}

func TestThinKeepsTheFirstAndEveryOther(t *testing.T) {
	for _, tc := range []struct {
		steps, want []int64
	}{
		{nil, []int64{}},
		{[]int64{1}, []int64{1}},
		{[]int64{1, 2, 3, 4}, []int64{1, 3}},
		{[]int64{1, 2, 3, 4, 5}, []int64{1, 3, 5}},
	} {
		if got := stepsOf(thin(samplesOfSteps(tc.steps...))); !slices.Equal(got, tc.want) {
			t.Errorf("thin(%v) = %v, want %v", tc.steps, got, tc.want)
		}
	}
}

func TestWithoutCopiesDropsRepeatedReports(t *testing.T) {
	// A merge cut short leaves the older chunk's samples in both chunks.
	samples := append(samplesOfSteps(1, 3, 5), samplesOfSteps(1, 2, 3, 4, 5, 6)...)
	if got, want := stepsOf(withoutCopies(samples)), []int64{1, 3, 5, 2, 4, 6}; !slices.Equal(got, want) {
		t.Errorf("withoutCopies = %v, want %v", got, want)
	}
}

func TestProgressHistoryBounds(t *testing.T) {
	if progressHistoryMaxChunks*progressHistoryChunkSamples != batch.MaxProgressHistorySamples {
		t.Errorf("%d chunks of %d samples hold %d, not MaxProgressHistorySamples (%d)", progressHistoryMaxChunks,
			progressHistoryChunkSamples, progressHistoryMaxChunks*progressHistoryChunkSamples, batch.MaxProgressHistorySamples)
	}
}
