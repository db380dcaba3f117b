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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// The stops that remove running pods: each asks a job with a checkpoint
// policy for a checkpoint first, and each is an interruption the
// accounting counts.
const (
	StopPause      = "Pause"
	StopEvicted    = "Evicted"
	StopResize     = "Resize"
	StopRestartJob = "RestartJob"
	StopStalled    = "Stalled"
)

// Events of the checkpoint a stop asks for.
const (
	ReasonCheckpointRequested = "CheckpointRequested"
	ReasonCheckpointWritten   = "CheckpointWritten"
	ReasonCheckpointTimedOut  = "CheckpointTimedOut"
)

// A stop that removes running pods (a pause, an eviction, a resize, a
// whole-job restart, a stall) first asks a job with a checkpoint policy for a
// checkpoint. The stop is a small state machine whose state lives in
// status.checkpoint.requestTime, so it survives controller restarts:
//
//	no request ──(cache behind)──────────────────────▶ stopAwaitsCache   (held)
//	no request ──(nothing to save, or no policy)──────▶ stopGoes         (goes)
//	no request ──────────────────────────────────────▶ stopAsks         (held; the request is recorded)
//	requested ───(a checkpoint reported after it)─────▶ stopAfterCheckpoint (goes; the request is cleared)
//	requested ───(grace passed, or no pod runs)───────▶ stopAfterTimeout (goes; the request is cleared)
//	requested ───────────────────────────────────────▶ stopAwaitsCheckpoint (held)
//
// decideCheckpointStop is the whole of it: it reads nothing but its input.

// checkpointStopStep is the transition a stop takes in one reconcile.
type checkpointStopStep string

const (
	// stopGoes: no checkpoint policy, or nothing left to save; the pods go.
	stopGoes checkpointStopStep = "Goes"
	// stopAwaitsCache: a request must wait until the cache shows every
	// create and delete, or pods deleted a moment ago would be asked too.
	stopAwaitsCache checkpointStopStep = "AwaitsCache"
	// stopAsks: the request is recorded now and the running pods asked.
	stopAsks checkpointStopStep = "Asks"
	// stopAwaitsCheckpoint: asked, and the grace has not passed.
	stopAwaitsCheckpoint checkpointStopStep = "AwaitsCheckpoint"
	// stopAfterCheckpoint: a checkpoint came after the request; the pods go.
	stopAfterCheckpoint checkpointStopStep = "AfterCheckpoint"
	// stopAfterTimeout: none came within the grace, or no pod is left to
	// write one; the pods go.
	stopAfterTimeout checkpointStopStep = "AfterTimeout"
)

// checkpointStopInput is what a stop is decided on.
type checkpointStopInput struct {
	// reason is the stop's (StopPause, StopRestartJob, ...).
	reason string
	// policy is spec.runPolicy.checkpoint; nil when the job has none.
	policy *v1beta1.CheckpointPolicy
	// request is status.checkpoint.requestTime, latest its latest checkpoint.
	request *metav1.MicroTime
	latest  *v1beta1.CheckpointRecord
	// running are the pods that could still write a checkpoint.
	running []*corev1.Pod
	// cacheCaughtUp: the caches show every create and delete made for the job.
	cacheCaughtUp bool
	now           time.Time
}

// checkpointStop is what a stop does in one reconcile.
type checkpointStop struct {
	step checkpointStopStep
	// asks are the running pods to mark with the request (AnnotationCheckpointRequest).
	asks []*corev1.Pod
	// comeBack is when to look again while the stop is held; zero for none.
	comeBack time.Time
	// event explains the step; nil for none.
	event *pendingEvent
	// interruption: the stop counts as an interruption in status.accounting;
	// answered, for a stop that asked, is whether a checkpoint came.
	interruption bool
	answered     *bool
}

// goes says whether the stop removes the pods now.
func (d checkpointStop) goes() bool {
	switch d.step {
	case stopGoes, stopAfterCheckpoint, stopAfterTimeout:
		return true
	}
	return false
}

// decideCheckpointStop decides one stop's step.
func decideCheckpointStop(in checkpointStopInput) checkpointStop {
	if in.policy == nil || (in.request == nil && len(in.running) == 0) {
		// Without a checkpoint to wait for, the stop goes; it interrupted
		// work only when pods ran, and only pods the cache is sure of.
		return checkpointStop{step: stopGoes, interruption: len(in.running) > 0 && in.cacheCaughtUp}
	}
	grace := stopGraceDuration(in.policy)
	if in.request == nil {
		if !in.cacheCaughtUp {
			return checkpointStop{step: stopAwaitsCache}
		}
		return checkpointStop{
			step:     stopAsks,
			asks:     in.running,
			comeBack: in.now.Add(grace),
			event: &pendingEvent{corev1.EventTypeNormal, ReasonCheckpointRequested, fmt.Sprintf(
				"Asked %d running pod(s) for a checkpoint before the stop (%s); waiting up to %ds",
				len(in.running), in.reason, stopGrace(in.policy))},
		}
	}
	waited := in.now.Sub(in.request.Time)
	if in.latest != nil && in.latest.ReportTime.After(in.request.Time) {
		answered := true
		return checkpointStop{
			step: stopAfterCheckpoint,
			event: &pendingEvent{corev1.EventTypeNormal, ReasonCheckpointWritten, fmt.Sprintf(
				"Checkpoint %s written %.1fs after the request; stopping the pods (%s)",
				describeCheckpoint(in.latest), in.latest.ReportTime.Sub(in.request.Time).Seconds(), in.reason)},
			interruption: true,
			answered:     &answered,
		}
	}
	if waited >= grace || len(in.running) == 0 {
		answered := false
		return checkpointStop{
			step: stopAfterTimeout,
			event: &pendingEvent{corev1.EventTypeWarning, ReasonCheckpointTimedOut, fmt.Sprintf(
				"No checkpoint arrived %.1fs after the request (grace %ds); stopping the pods (%s)",
				waited.Seconds(), stopGrace(in.policy), in.reason)},
			interruption: true,
			answered:     &answered,
		}
	}
	// Pods that started, or were recreated, since the request have not seen it.
	value := in.request.Format(metav1.RFC3339Micro)
	var asks []*corev1.Pod
	for _, p := range in.running {
		if p.Annotations[v1beta1.AnnotationCheckpointRequest] != value {
			asks = append(asks, p)
		}
	}
	return checkpointStop{step: stopAwaitsCheckpoint, asks: asks, comeBack: in.request.Add(grace)}
}

// stopGrace is how long, in seconds, a stop waits for its checkpoint: the
// policy's stopGraceSeconds, at least one.
func stopGrace(policy *v1beta1.CheckpointPolicy) int32 {
	if policy.StopGraceSeconds == nil {
		return 1
	}
	return max(*policy.StopGraceSeconds, 1)
}

func stopGraceDuration(policy *v1beta1.CheckpointPolicy) time.Duration {
	return time.Duration(stopGrace(policy)) * time.Second
}

func describeCheckpoint(c *v1beta1.CheckpointRecord) string {
	if c.Step != nil {
		return fmt.Sprintf("at step %d (%s)", *c.Step, c.Path)
	}
	return c.Path
}
