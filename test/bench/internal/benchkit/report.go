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

package benchkit

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Percentile returns the p-th percentile (0 < p <= 100, nearest rank) of ds,
// or 0 for none.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sorted := append([]time.Duration(nil), ds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	if rank < 1 {
		rank = 1
	}
	if rank > len(sorted) {
		rank = len(sorted)
	}
	return sorted[rank-1]
}

// Median returns the median of ds (the lower one of an even count).
func Median(ds []time.Duration) time.Duration { return Percentile(ds, 50) }

// Ms formats a duration in milliseconds.
func Ms(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	if ms < 10 {
		return fmt.Sprintf("%.2f", ms)
	}
	if ms < 100 {
		return fmt.Sprintf("%.1f", ms)
	}
	return fmt.Sprintf("%.0f", ms)
}

// MiB formats a byte count in MiB.
func MiB(b int64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }

// Ratio formats a/b as "1.23×", or "n/a" when a is negative (not measured)
// or b is not a positive number.
func Ratio(a, b float64) string {
	if a < 0 || b <= 0 || math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// Table is a markdown table.
type Table struct {
	Header []string
	Rows   [][]string
}

// Add appends a row.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

// Write prints the table with padded columns, so that it also reads well as
// plain text.
func (t *Table) Write(w io.Writer) error {
	widths := make([]int, len(t.Header))
	all := append([][]string{t.Header}, t.Rows...)
	for _, r := range all {
		for i, c := range r {
			if i < len(widths) && utf8.RuneCountInString(c) > widths[i] {
				widths[i] = utf8.RuneCountInString(c)
			}
		}
	}
	line := func(cells []string) string {
		var b strings.Builder
		b.WriteString("|")
		for i := range widths {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			b.WriteString(" ")
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)))
			b.WriteString(" |")
		}
		return b.String() + "\n"
	}
	var b strings.Builder
	b.WriteString(line(t.Header))
	b.WriteString("|")
	for _, w := range widths {
		b.WriteString(strings.Repeat("-", w+2))
		b.WriteString("|")
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		b.WriteString(line(r))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
