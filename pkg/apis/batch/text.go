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
	"strings"
	"unicode/utf8"
)

// Text the status keeps from elsewhere (a kubelet's reason, a termination
// message, a log's end) is cut to a byte budget without splitting a
// character, and made valid UTF-8 first: a program may write any bytes to
// its log or /dev/termination-log, and JSON carries each invalid byte as a
// six-byte escape that decodes to three, so that text cut to its budget
// before would pass it after the trip and have the status write refused.

// ValidText replaces each run of bytes of s that is not UTF-8 with U+FFFD.
func ValidText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// CutBytes keeps at most n bytes of s, made valid UTF-8, ending at a
// character boundary.
func CutBytes(s string, n int) string {
	s = ValidText(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// TailBytes keeps at most n bytes of the end of s, made valid UTF-8,
// starting at a character boundary.
func TailBytes(s string, n int) string {
	s = ValidText(s)
	if len(s) <= n {
		return s
	}
	start := len(s) - n
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return s[start:]
}
