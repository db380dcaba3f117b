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

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

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

// planDeadline fails the job once its deadline has passed, and otherwise
// looks at it again when it falls. It says whether the job failed.
func (r *reconciler) planDeadline() (exceeded bool) {
	start := r.now
	if r.status.StartTime != nil {
		start = r.status.StartTime.Time
	}
	deadline, ok := activeDeadline(r.spec, start)
	if !ok {
		return false
	}
	if r.now.Before(deadline) {
		r.requeueAt(deadline)
		return false
	}
	r.finish(v1beta1.JobFailed, ReasonDeadlineExceeded,
		fmt.Sprintf("the job was active longer than activeDeadlineSeconds (%ds)", *r.spec.RunPolicy.ActiveDeadlineSeconds))
	return true
}
