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

package batch

import (
	"encoding/json"
	"math/rand"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCutAndTailBytes(t *testing.T) {
	cases := []struct {
		name, in  string
		n         int
		cut, tail string
	}{
		{name: "short text stays", in: "exit 3", n: 16, cut: "exit 3", tail: "exit 3"},
		{name: "ASCII cut at n", in: "abcdef", n: 4, cut: "abcd", tail: "cdef"},
		{name: "a character is never split", in: "aé€b", n: 4, cut: "aé", tail: "€b"},
		{name: "an invalid byte becomes U+FFFD", in: "a\xffb", n: 16, cut: "a\uFFFDb", tail: "a\uFFFDb"},
		{name: "a run of invalid bytes becomes one U+FFFD", in: "a\xff\xfe\xfdb", n: 16, cut: "a\uFFFDb", tail: "a\uFFFDb"},
		{name: "cut after the replacement, in bytes", in: "\xffabc", n: 4, cut: "\uFFFDa", tail: "abc"},
		{name: "a truncated character at the end", in: "ab\xe2\x82", n: 16, cut: "ab\uFFFD", tail: "ab\uFFFD"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := CutBytes(tc.in, tc.n); got != tc.cut {
				t.Errorf("CutBytes(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.cut)
			}
			if got := TailBytes(tc.in, tc.n); got != tc.tail {
				t.Errorf("TailBytes(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.tail)
			}
		})
	}
}

// What a replica writes to its log or /dev/termination-log may be any
// bytes. Cut to a budget, it must stay within the budget once JSON has
// carried it to the apiserver, which counts the bytes it decoded.
func TestCutTextFitsAfterJSON(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 200; i++ {
		raw := make([]byte, 1+rng.Intn(3000))
		rng.Read(raw)
		n := 1 + rng.Intn(512)
		for name, cut := range map[string]func(string, int) string{"CutBytes": CutBytes, "TailBytes": TailBytes} {
			got := cut(string(raw), n)
			if !utf8.ValidString(got) {
				t.Fatalf("%s of %d random bytes to %d: not UTF-8: %q", name, len(raw), n, got)
			}
			encoded, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var decoded string
			if err := json.Unmarshal(encoded, &decoded); err != nil {
				t.Fatal(err)
			}
			if decoded != got || len(decoded) > n {
				t.Fatalf("%s of %d random bytes to %d: %d bytes after JSON (changed: %t)", name, len(raw), n, len(decoded), decoded != got)
			}
		}
	}
}

func TestValidTextKeepsValidText(t *testing.T) {
	s := strings.Repeat("loss=0.25 ✓ ", 10)
	if got := ValidText(s); got != s {
		t.Errorf("ValidText changed valid text: %q", got)
	}
}
