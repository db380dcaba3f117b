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

package controller

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

func TestLastBytes(t *testing.T) {
	log := strings.Repeat("x", 100) + "\nTraceback: ValueError: bad shape\n"
	cases := []struct {
		name         string
		r            io.Reader
		keep, limit  int
		want         string
		wantComplete bool
		wantErr      bool
	}{
		{name: "short log, whole", r: strings.NewReader("a\nb\n"), keep: 64, limit: 1 << 10, want: "a\nb\n", wantComplete: true},
		{name: "the end is kept, not the start", r: strings.NewReader(log), keep: 33, limit: 1 << 10,
			want: "Traceback: ValueError: bad shape\n", wantComplete: true},
		{name: "one byte at a time", r: iotest.OneByteReader(strings.NewReader(log)), keep: 33, limit: 1 << 10,
			want: "Traceback: ValueError: bad shape\n", wantComplete: true},
		{name: "exactly the limit is complete", r: strings.NewReader("abcd"), keep: 2, limit: 4, want: "cd", wantComplete: true},
		{name: "over the limit is not", r: strings.NewReader("abcdef"), keep: 2, limit: 4, want: "cd", wantComplete: false},
		{name: "a failed read", r: io.MultiReader(strings.NewReader("ab"), iotest.ErrReader(errors.New("reset"))), keep: 8,
			limit: 1 << 10, want: "ab", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, complete, err := lastBytes(tc.r, tc.keep, tc.limit)
			if (err != nil) != tc.wantErr || string(got) != tc.want || complete != tc.wantComplete {
				t.Errorf("lastBytes = %q, complete %t, error %v; want %q, complete %t, error %t",
					got, complete, err, tc.want, tc.wantComplete, tc.wantErr)
			}
		})
	}
}

func TestLogTailText(t *testing.T) {
	long := strings.Repeat("step=1 loss=0.5\n", 20) + "RuntimeError: " + strings.Repeat("y", 40) + "\n"
	cases := []struct {
		name     string
		raw      string
		n        int
		complete bool
		want     string
	}{
		{name: "fits", raw: "a\nb\n", n: 64, complete: true, want: "a\nb\n"},
		{name: "cut, it starts at a line", raw: long, n: 80, complete: true,
			want: "step=1 loss=0.5\nRuntimeError: " + strings.Repeat("y", 40) + "\n"},
		{name: "the last line alone over the budget keeps its end", raw: long, n: 20, complete: true,
			want: strings.Repeat("y", 19) + "\n"},
		{name: "part of a line is not cut to a line", raw: "abc\ndefgh", n: 7, complete: false, want: "c\ndefgh"},
		{name: "bytes that are not UTF-8", raw: "ok\n\xff\xfe tail\n", n: 64, complete: true, want: "ok\n\uFFFD tail\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := logTailText([]byte(tc.raw), tc.n, tc.complete)
			if got != tc.want || len(got) > tc.n || !utf8.ValidString(got) {
				t.Errorf("logTailText = %q (%d bytes), want %q", got, len(got), tc.want)
			}
		})
	}
}
