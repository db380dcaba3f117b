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
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// ReasonDeadlineExceeded is the Failed condition's reason, and the event's,
// for a job active longer than its activeDeadlineSeconds.
const ReasonDeadlineExceeded = "DeadlineExceeded"

// activeDeadline is when a job that became active at start runs out of its
// activeDeadlineSeconds; ok is false for a job without a deadline. A
// deadline stored before the bound existed could overflow the duration; no
// deadline later than the bound makes a difference.
func activeDeadline(spec *v1beta1.TrainingJobSpec, start time.Time) (deadline time.Time, ok bool) {
	ads := spec.RunPolicy.ActiveDeadlineSeconds
	if ads == nil || *ads <= 0 {
		return time.Time{}, false
	}
	seconds := min(*ads, batch.MaxActiveDeadlineSeconds)
	return start.Add(time.Duration(seconds) * time.Second), true
}

// deadlineDecision is what the active deadline decides in one reconcile.
type deadlineDecision struct {
	// exceeded: the job fails now, and message says why.
	exceeded bool
	message  string
	// comeBack is when the deadline falls, for a job it has not failed;
	// zero for a job without one.
	comeBack time.Time
}

// decideDeadline fails a job that has been active longer than
// spec.runPolicy.activeDeadlineSeconds, counted from startTime (now for a
// job not started yet), and otherwise names when to look again.
func decideDeadline(spec *v1beta1.TrainingJobSpec, startTime *metav1.Time, now time.Time) deadlineDecision {
	start := now
	if startTime != nil {
		start = startTime.Time
	}
	deadline, ok := activeDeadline(spec, start)
	switch {
	case !ok:
		return deadlineDecision{}
	case now.Before(deadline):
		return deadlineDecision{comeBack: deadline}
	}
	return deadlineDecision{exceeded: true, message: fmt.Sprintf(
		"the job was active longer than activeDeadlineSeconds (%ds)", *spec.RunPolicy.ActiveDeadlineSeconds)}
}
