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

// tasksOf is a task of replicas replicas of containers containers, each
// recorded as ended with a reason and message of the given lengths.
func tasksOf(replicas, containers, reason, message int) []TaskStatus {
	task := TaskStatus{Type: "worker"}
	for range replicas {
		var rs ReplicaStatus
		for range containers {
			rs.Containers = append(rs.Containers, ContainerStatus{Name: "c", State: "Terminated", ExitCode: 1,
				LastTermination: &ContainerTermination{ExitCode: 1, Reason: strings.Repeat("r", reason),
					Message: "start " + strings.Repeat("m", message-len("start ")-len(" end")) + " end"}})
		}
		task.ReplicaStatus = append(task.ReplicaStatus, rs)
	}
	return []TaskStatus{task}
}

func TestCompactTerminations(t *testing.T) {
	count := func(tasks []TaskStatus) (records, longestMessage, longestReason int, lastHasRecord bool) {
		for _, rs := range tasks[0].ReplicaStatus {
			for _, c := range rs.Containers {
				if l := c.LastTermination; l != nil {
					records++
					longestMessage = max(longestMessage, len(l.Message))
					longestReason = max(longestReason, len(l.Reason))
				}
			}
		}
		last := tasks[0].ReplicaStatus[len(tasks[0].ReplicaStatus)-1]
		return records, longestMessage, longestReason, last.Containers[0].LastTermination != nil
	}
	cases := []struct {
		name                         string
		tasks                        []TaskStatus
		records, message, reason     int
		lastKept, messagesKeepTheEnd bool
	}{
		{"a small job keeps everything", tasksOf(8, 2, 9, 256), 16, 256, 9, true, true},
		{"a large job keeps shorter messages", tasksOf(1000, 1, 9, 256), 1000, (TerminationBudget - 1000*(terminationRecordBytes+9)) / 1000, 9, true, true},
		{"without room for messages, reasons are cut", tasksOf(1000, 1, 128, 256), 1000, 0, compactReasonBytes, true, false},
		{"without room for every record, the last replicas' go", tasksOf(1000, 4, 128, 256), TerminationBudget / (terminationRecordBytes + compactReasonBytes), 0, compactReasonBytes, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			CompactTerminations(tc.tasks)
			records, message, reason, lastKept := count(tc.tasks)
			if records != tc.records || message != tc.message || reason != tc.reason || lastKept != tc.lastKept {
				t.Errorf("records %d, longest message %d, longest reason %d, last replica's kept %v; want %d, %d, %d, %v",
					records, message, reason, lastKept, tc.records, tc.message, tc.reason, tc.lastKept)
			}
			first := tc.tasks[0].ReplicaStatus[0].Containers[0]
			if first.ExitCode != 1 || first.LastTermination == nil || first.LastTermination.ExitCode != 1 {
				t.Errorf("the first replica's exit codes %+v, want them kept", first)
			}
			if tc.messagesKeepTheEnd && !strings.HasSuffix(first.LastTermination.Message, " end") {
				t.Errorf("message %q, want its end kept", first.LastTermination.Message)
			}
		})
	}
}
