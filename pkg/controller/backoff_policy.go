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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReasonBackOff is a replica's status reason while it waits out its restart
// backoff.
const ReasonBackOff = "BackOff"

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

// replicaRestart is when a replica whose pod exited starts again.
type replicaRestart struct {
	// count is the replica's restarts in a row, this one included.
	count int32
	// at is when its new pod may be created, to the second as the status
	// stores it; nil for at once.
	at *metav1.Time
}

// decideRestart times the restart of a replica whose pod exited (exited is
// nil for a pod that vanished), that had restarted count times in a row:
// the backoff's delay, counted from the exit. A pod that ran for the
// backoff's Reset period starts the run of restarts anew.
func decideRestart(exited *corev1.Pod, count int32, b RestartBackoff, now time.Time) replicaRestart {
	exitedAt := now
	var ran time.Duration
	if exited != nil {
		if t, ok := exitTime(exited); ok && t.Before(now) {
			exitedAt = t
		}
		ran = runTime(exited, exitedAt)
	}
	if ran >= b.Reset {
		count = 0
	}
	count++
	at := exitedAt.Add(b.Delay(count))
	if !at.After(now) {
		return replicaRestart{count: count}
	}
	t := metav1.NewTime(at).Rfc3339Copy()
	if t.Time.Before(at) {
		// Rounded down to the second: wait for the second after.
		t = metav1.NewTime(t.Add(time.Second))
	}
	return replicaRestart{count: count, at: &t}
}

// exitTime is when a pod's program ended, as Kubernetes' Job controller
// works it out: the latest time one of its containers finished; for a pod
// that failed without its containers saying (its node lost), when it turned
// not Ready; else when its deletion began (the deletion timestamp less the
// grace period the delete gave it); else ok is false.
func exitTime(pod *corev1.Pod) (t time.Time, ok bool) {
	for _, cs := range pod.Status.ContainerStatuses {
		if term := cs.State.Terminated; term != nil && term.FinishedAt.After(t) {
			t, ok = term.FinishedAt.Time, true
		}
	}
	if ok {
		return t, true
	}
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && !c.LastTransitionTime.IsZero() {
				return c.LastTransitionTime.Time, true
			}
		}
	}
	if d := pod.DeletionTimestamp; d != nil {
		grace := time.Duration(0)
		if g := pod.DeletionGracePeriodSeconds; g != nil && *g > 0 {
			grace = time.Duration(*g) * time.Second
		}
		return d.Add(-grace), true
	}
	return time.Time{}, false
}

// runTime is how long a pod ran before it ended at the given time; 0 when it
// never started.
func runTime(pod *corev1.Pod, end time.Time) time.Duration {
	if pod.Status.StartTime == nil || end.Before(pod.Status.StartTime.Time) {
		return 0
	}
	return end.Sub(pod.Status.StartTime.Time)
}
