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
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// writeAttempts shows the job's attempts as a table, oldest first, then the
// log tail of each replica that failed in them: what a failure left behind
// once its pod is gone.
func writeAttempts(w io.Writer, status *v1beta1.TrainingJobStatus, now time.Time) {
	if len(status.Attempts) == 0 {
		return
	}
	header := fmt.Sprintf("Attempts: %d", status.AttemptCount)
	if n := int32(len(status.Attempts)); n < status.AttemptCount {
		header += fmt.Sprintf(" (the last %d)", n)
	}
	fmt.Fprintln(w, header)
	fmt.Fprintln(w, "  #\tSTARTED\tRAN\tENDED BY\tSTEPS\tRESUMED FROM\tLAST CHECKPOINT\tFAILED REPLICAS")
	for _, a := range status.Attempts {
		end, endedBy := now, "(running)"
		if a.EndTime != nil {
			end, endedBy = a.EndTime.Time, a.Reason
		}
		steps := "-"
		if a.Steps != nil {
			steps = fmt.Sprint(*a.Steps)
		}
		fmt.Fprintf(w, "  %d\t%s ago\t%s\t%s\t%s\t%s\t%s\t%s\n", a.Number,
			duration.HumanDuration(now.Sub(a.StartTime.Time)), duration.HumanDuration(end.Sub(a.StartTime.Time)),
			orDash(endedBy), steps, attemptCheckpointText(a.ResumedFrom), attemptCheckpointText(a.LastCheckpoint), failedReplicasText(a))
	}
	for _, a := range status.Attempts {
		for _, f := range a.FailedReplicas {
			fmt.Fprintf(w, "  Attempt %d, %s on %s: %s\n", a.Number, f.Name, orDash(f.Node), failedReplicaEnd(f))
			switch {
			case f.Logs != "":
				for _, line := range strings.Split(strings.TrimRight(f.Logs, "\n"), "\n") {
					fmt.Fprintf(w, "    | %s\n", line)
				}
			case f.LogError != "":
				fmt.Fprintf(w, "    (its log could not be read: %s)\n", f.LogError)
			}
		}
	}
}

func attemptCheckpointText(c *v1beta1.AttemptCheckpoint) string {
	switch {
	case c == nil:
		return "-"
	case c.Step != nil:
		return fmt.Sprintf("step %d", *c.Step)
	default:
		return c.Path
	}
}

// failedReplicasText names the replicas that failed in an attempt, and how
// many more did beyond those listed.
func failedReplicasText(a v1beta1.Attempt) string {
	if a.FailedReplicaCount == 0 {
		return "-"
	}
	names := make([]string, 0, len(a.FailedReplicas))
	for _, f := range a.FailedReplicas {
		names = append(names, f.Name)
	}
	if more := int(a.FailedReplicaCount) - len(names); more > 0 {
		names = append(names, fmt.Sprintf("%d more", more))
	}
	return strings.Join(names, ", ")
}

func failedReplicaEnd(f v1beta1.FailedReplica) string {
	if f.ExitCode != nil {
		return fmt.Sprintf("%s (exit code %d)", orDash(f.Reason), *f.ExitCode)
	}
	return orDash(f.Reason)
}
