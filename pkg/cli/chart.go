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
	"math"
	"strconv"
	"strings"
)

// chartHeight is the number of rows of a metric's chart.
const chartHeight = 6

// metricChart draws values, oldest first, as rows of text, top row first:
// one column per value, a "*" in the row of its height between the lowest
// and the highest, which label the axis. Equal values sit in the middle
// row. It needs two values or more.
func metricChart(values []float64, height int) []string {
	if len(values) < 2 || height < 2 {
		return nil
	}
	lo, hi := values[0], values[0]
	for _, v := range values {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	rowOf := func(v float64) int {
		if hi == lo {
			return height / 2
		}
		// Row 0 is the top: the highest value.
		return int(math.Round((hi - v) / (hi - lo) * float64(height-1)))
	}
	grid := make([][]byte, height)
	for r := range grid {
		grid[r] = []byte(strings.Repeat(" ", len(values)))
	}
	for c, v := range values {
		grid[rowOf(v)][c] = '*'
	}
	top, bottom := formatAxis(hi), formatAxis(lo)
	width := max(len(top), len(bottom))
	rows := make([]string, height)
	for r := range grid {
		label := ""
		switch r {
		case 0:
			label = top
		case height - 1:
			label = bottom
		}
		rows[r] = strings.Repeat(" ", width-len(label)) + label + " |" + strings.TrimRight(string(grid[r]), " ")
	}
	return rows
}

// formatAxis writes an axis label short: four significant digits.
func formatAxis(v float64) string {
	return strconv.FormatFloat(v, 'g', 4, 64)
}
