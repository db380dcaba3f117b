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
	return ellipsis + strings.TrimLeft(batch.TailBytes(message, MaxTerminationMessageBytes-len(ellipsis)), " \t\r\n")
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

// TerminationBudget bounds the bytes a job's status spends on how its
// containers ended: their reasons and the records of their last
// termination (CompactTerminations). A few containers of a job keep every
// record whole (each at most MaxTerminationMessageBytes of message); a job of
// a thousand replicas with sidecars, all failing at once, keeps shorter ones,
// so that its status still fits in what etcd stores.
const TerminationBudget = 192 << 10

// terminationRecordBytes approximates the encoding of a termination record
// besides its reason and message: field names, codes and the time.
const terminationRecordBytes = 128

// compactReasonBytes is how long a reason stays once reasons must be cut:
// the kubelet's reasons (OOMKilled, ContainerStatusUnknown) are shorter.
const compactReasonBytes = 32

// CompactTerminations keeps what tasks record of container ends within
// TerminationBudget. While over it, in order: termination messages are cut
// to a shorter tail, the same length for all; messages go and reasons are
// cut to compactReasonBytes; the records of the last replicas go, last first.
// Exit codes and states stay.
func CompactTerminations(tasks []TaskStatus) {
	var fixed, messages, records int
	each := func(fn func(c *ContainerStatus)) {
		for ti := range tasks {
			for ri := range tasks[ti].ReplicaStatus {
				for ci := range tasks[ti].ReplicaStatus[ri].Containers {
					fn(&tasks[ti].ReplicaStatus[ri].Containers[ci])
				}
			}
		}
	}
	measure := func() {
		fixed, messages, records = 0, 0, 0
		each(func(c *ContainerStatus) {
			fixed += len(c.Reason)
			if t := c.LastTermination; t != nil {
				fixed += terminationRecordBytes + len(t.Reason)
				messages += len(t.Message)
				records++
			}
		})
	}
	measure()
	if fixed+messages <= TerminationBudget {
		return
	}
	if fixed < TerminationBudget && records > 0 {
		keep := (TerminationBudget - fixed) / records
		each(func(c *ContainerStatus) {
			if t := c.LastTermination; t != nil && len(t.Message) > keep {
				t.Message = batch.TailBytes(t.Message, keep)
			}
		})
		return
	}
	each(func(c *ContainerStatus) {
		c.Reason = batch.CutBytes(c.Reason, compactReasonBytes)
		if t := c.LastTermination; t != nil {
			t.Message, t.Reason = "", batch.CutBytes(t.Reason, compactReasonBytes)
		}
	})
	measure()
	for ti := len(tasks) - 1; ti >= 0 && fixed > TerminationBudget; ti-- {
		replicas := tasks[ti].ReplicaStatus
		for ri := len(replicas) - 1; ri >= 0 && fixed > TerminationBudget; ri-- {
			for ci := range replicas[ri].Containers {
				if t := replicas[ri].Containers[ci].LastTermination; t != nil {
					fixed -= terminationRecordBytes + len(t.Reason)
					replicas[ri].Containers[ci].LastTermination = nil
				}
			}
		}
	}
}

// CutReason bounds a reason the kubelet gave to what validation accepts.
func CutReason(reason string) string { return batch.CutBytes(reason, batch.MaxContainerReasonLength) }
