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
	"strings"
	"testing"
)

func TestMetricChart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []float64
		want   string
	}{
		{
			name:   "a falling loss",
			values: []float64{2.5, 2, 1.5, 1.2, 1, 0.8, 0.7, 0.5},
			want: `
2.5 |*
    | *
    |
    |  **
    |    **
0.5 |      **`,
		},
		{
			name:   "a rising accuracy",
			values: []float64{0.1, 0.5, 0.9},
			want: `
0.9 |  *
    |
    |
    | *
    |
0.1 |*`,
		},
		{
			name:   "flat",
			values: []float64{3, 3, 3},
			want: `
3 |
  |
  |
  |***
  |
3 |`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(metricChart(tc.values, chartHeight), "\n")
			if want := strings.TrimPrefix(tc.want, "\n"); got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
	if rows := metricChart([]float64{1}, chartHeight); rows != nil {
		t.Errorf("one value drew %q", rows)
	}
}
