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
	"fmt"
	"strings"
	"unicode/utf8"

	"tensorstack.dev/training/pkg/apis/batch"
)

// MaxTerminationMessageBytes bounds ContainerTermination.Message; the
// server refuses a status with a longer one.
const MaxTerminationMessageBytes = batch.MaxTerminationMessageBytes

// TerminationMessageTail returns the end of a termination message that
// fits MaxTerminationMessageBytes, cut at a character boundary, with
// surrounding white space removed. The end is kept because that is where a
// program, or its log, says what went wrong last.
func TerminationMessageTail(message string) string {
	message = strings.TrimSpace(message)
	if len(message) <= MaxTerminationMessageBytes {
		return message
	}
	const ellipsis = "…"
	start := len(message) - (MaxTerminationMessageBytes - len(ellipsis))
	for start < len(message) && !utf8.RuneStart(message[start]) {
		start++
	}
	return ellipsis + strings.TrimLeft(message[start:], " \t\r\n")
}

// Summary says how the container ended, as people read it:
// "OOMKilled (exit 137): <message>", "Error (exit 3, signal 9)".
func (t *ContainerTermination) Summary() string {
	return t.summary(strings.Join(strings.Fields(t.Message), " "))
}

// Brief is Summary with only the message's last non-empty line, for narrow
// places: a Python traceback ends with the exception, a log with the last
// thing the program said.
func (t *ContainerTermination) Brief() string {
	lines := strings.Split(strings.TrimSpace(t.Message), "\n")
	return t.summary(strings.Join(strings.Fields(lines[len(lines)-1]), " "))
}

func (t *ContainerTermination) summary(message string) string {
	reason := t.Reason
	if reason == "" {
		reason = "Terminated"
	}
	detail := fmt.Sprintf("exit %d", t.ExitCode)
	if t.Signal != 0 {
		detail += fmt.Sprintf(", signal %d", t.Signal)
	}
	s := fmt.Sprintf("%s (%s)", reason, detail)
	if message != "" {
		s += ": " + message
	}
	return s
}
