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
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Restart backoff defaults, as Kubernetes' Job controller has them.
const (
	DefaultRestartBackoffBase = 10 * time.Second
	DefaultRestartBackoffMax  = 6 * time.Minute
	// DefaultRestartBackoffReset is how long a replica's pod must have run
	// for its next exit to start the delays from the base again.
	DefaultRestartBackoffReset = 10 * time.Minute
)

// RestartBackoff is the delay before a replica whose pod exited is started
// again: Base, doubled for each restart in a row, at most Max.
type RestartBackoff struct {
	Base, Max, Reset time.Duration
}

func (b RestartBackoff) withDefaults() RestartBackoff {
	if b.Base <= 0 {
		b.Base = DefaultRestartBackoffBase
	}
	if b.Max <= 0 {
		b.Max = DefaultRestartBackoffMax
	}
	if b.Max < b.Base {
		b.Max = b.Base
	}
	if b.Reset <= 0 {
		b.Reset = DefaultRestartBackoffReset
	}
	return b
}

// Delay is the wait before restart number n (1 for the first) of a run of
// restarts in a row.
func (b RestartBackoff) Delay(n int32) time.Duration {
	d := b.Base
	for i := int32(1); i < n; i++ {
		if d >= b.Max/2 {
			return b.Max
		}
		d *= 2
	}
	return min(d, b.Max)
}

// exitTime is when a pod's program ended: the latest time one of its
// containers finished, else the time its deletion began, else ok is false.
func exitTime(pod *corev1.Pod) (t time.Time, ok bool) {
	for _, cs := range pod.Status.ContainerStatuses {
		if term := cs.State.Terminated; term != nil && term.FinishedAt.After(t) {
			t, ok = term.FinishedAt.Time, true
		}
	}
	if !ok && pod.DeletionTimestamp != nil {
		return pod.DeletionTimestamp.Time, true
	}
	return t, ok
}

// runTime is how long a pod ran before it ended at the given time; 0 when it
// never started.
func runTime(pod *corev1.Pod, end time.Time) time.Duration {
	if pod.Status.StartTime == nil || end.Before(pod.Status.StartTime.Time) {
		return 0
	}
	return end.Sub(pod.Status.StartTime.Time)
}
