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

package v1beta1

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTerminationMessageTail(t *testing.T) {
	long := strings.Repeat("x", 1000) + "\nTraceback: CUDA out of memory\n"
	multibyte := strings.Repeat("é", 300)
	cases := []struct {
		name, in, want string
	}{
		{"short, trimmed", "  killed\n", "killed"},
		{"empty", "", ""},
		{"long keeps the end", long, "…" + strings.Repeat("x", MaxTerminationMessageBytes-len("…")-len("\nTraceback: CUDA out of memory")) + "\nTraceback: CUDA out of memory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := TerminationMessageTail(tc.in); got != tc.want {
				t.Errorf("TerminationMessageTail(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	t.Run("multi-byte characters are not cut", func(t *testing.T) {
		got := TerminationMessageTail(multibyte)
		if len(got) > MaxTerminationMessageBytes || !utf8.ValidString(got) || !strings.HasSuffix(got, "éé") {
			t.Errorf("TerminationMessageTail of 300 × é = %q (%d bytes), want at most %d valid bytes ending in é",
				got, len(got), MaxTerminationMessageBytes)
		}
	})
}

func TestTerminationSummary(t *testing.T) {
	cases := []struct {
		t    ContainerTermination
		want string
	}{
		{ContainerTermination{ExitCode: 137, Reason: "OOMKilled"}, "OOMKilled (exit 137)"},
		{ContainerTermination{ExitCode: 3, Reason: "Error", Message: "loss is NaN\nat step 7"}, "Error (exit 3): loss is NaN at step 7"},
		{ContainerTermination{ExitCode: 143, Signal: 15}, "Terminated (exit 143, signal 15)"},
	}
	for _, tc := range cases {
		if got := tc.t.Summary(); got != tc.want {
			t.Errorf("Summary of %+v = %q, want %q", tc.t, got, tc.want)
		}
	}
}

func TestTerminationBrief(t *testing.T) {
	traceback := "Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n" +
		"    step(model)\nValueError: loss is NaN at step 7\n\n"
	cases := []struct {
		t    ContainerTermination
		want string
	}{
		{ContainerTermination{ExitCode: 137, Reason: "OOMKilled"}, "OOMKilled (exit 137)"},
		{ContainerTermination{ExitCode: 1, Reason: "Error", Message: traceback}, "Error (exit 1): ValueError: loss is NaN at step 7"},
		{ContainerTermination{ExitCode: 3, Reason: "Error", Message: "one line"}, "Error (exit 3): one line"},
	}
	for _, tc := range cases {
		if got := tc.t.Brief(); got != tc.want {
			t.Errorf("Brief of %+v = %q, want %q", tc.t, got, tc.want)
		}
	}
}
