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

// writeCheckpoint shows the job's last checkpoint and a stop waiting for
// one.
func writeCheckpoint(w io.Writer, status *v1beta1.TrainingJobStatus, now time.Time) {
	c := status.Checkpoint
	if c == nil {
		return
	}
	if l := c.Latest; l != nil {
		line := l.Path
		if l.Step != nil {
			line = fmt.Sprintf("step %d  %s", *l.Step, l.Path)
		}
		fmt.Fprintf(w, "Checkpoint:\t%s (%s ago, %d before it)\n", line, duration.HumanDuration(now.Sub(l.ReportTime.Time)), len(c.History))
	}
	if c.RequestTime != nil {
		fmt.Fprintf(w, "Checkpoint asked:\tfor %s, %s ago\n", c.RequestReason, duration.HumanDuration(now.Sub(c.RequestTime.Time)))
	}
}

// writeAccounting shows where the job's time went, the current state's
// share included, and what its interruptions lost.
func writeAccounting(w io.Writer, status *v1beta1.TrainingJobStatus, now time.Time) {
	a := status.Accounting
	if a == nil {
		return
	}
	var parts []string
	for _, s := range v1beta1.AccountingStates {
		seconds := *a.StateSeconds(s)
		if s == a.State && a.StateSince != nil {
			seconds += max(int64(now.Sub(a.StateSince.Time).Seconds()), 0)
		}
		if seconds > 0 || s == a.State {
			parts = append(parts, fmt.Sprintf("%s %s", strings.ToLower(string(s)), duration.HumanDuration(time.Duration(seconds)*time.Second)))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "Time:\t%s\n", strings.Join(parts, ", "))
	}
	line := fmt.Sprintf("%d", a.Interruptions)
	if a.Interruptions > 0 {
		line += fmt.Sprintf(", lost %s of replica time", duration.HumanDuration(time.Duration(a.LostReplicaSeconds)*time.Second))
		if a.LostSteps > 0 {
			line += fmt.Sprintf(" and %d steps", a.LostSteps)
		}
	}
	fmt.Fprintf(w, "Interruptions:\t%s\n", line)
	for _, in := range a.Recent {
		detail := fmt.Sprintf("%s  %s  %d replicas lost %ds", in.Time.UTC().Format(time.RFC3339), in.Reason, in.Replicas, in.LostSeconds)
		if in.LostSteps != nil {
			detail += fmt.Sprintf(" (%d steps)", *in.LostSteps)
		}
		if in.ResumeStep != nil {
			detail += fmt.Sprintf(", resumes at step %d", *in.ResumeStep+1)
		}
		if in.CheckpointAnswered != nil {
			if *in.CheckpointAnswered {
				detail += ", checkpoint written when asked"
			} else {
				detail += ", no checkpoint within the grace period"
			}
		}
		fmt.Fprintf(w, "\t%s\n", detail)
	}
}
