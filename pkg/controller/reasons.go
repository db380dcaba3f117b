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

// Reasons of the job's conditions and events. The events about the objects
// a job owns (created, adopted, deleted, a name taken) have theirs in
// package owner; owner.ReasonFailedCreate is also the ReplicaFailure
// condition's reason when the apiserver refuses a pod.
const (
	// Initialized condition.
	ReasonCreatingReplicas = "CreatingReplicas"
	ReasonReplicasCreated  = "ReplicasCreated"
	// Running condition; when False its reason is the job's phase.
	ReasonReplicasRunning = "ReplicasRunning"
	// ReplicaFailure condition.
	ReasonReplicaFailed   = "ReplicaFailed"
	ReasonReplicasHealthy = "ReplicasHealthy"
	// ReplicaFailure condition and events: a job beyond the limits on
	// replicas (stored before they existed), and a status too large to
	// store; each condition turns False with the second reason once its
	// cause is gone.
	ReasonTooManyReplicas     = "TooManyReplicas"
	ReasonReplicasWithinLimit = "ReplicasWithinLimit"
	ReasonStatusTooLarge      = "StatusTooLarge"
	ReasonStatusStored        = "StatusStored"
	// GangScheduled condition: the whole gang is placed, the controller runs
	// without a gang scheduler; v1beta1.ReasonWaitingForGang while pods of
	// the gang wait for room.
	ReasonGangPlaced      = "GangPlaced"
	ReasonNoGangScheduler = "NoGangScheduler"
	// Queued condition: a job with more replica types than Kueue's pod
	// sets allow waits with this reason.
	ReasonTooManyPodSets = "TooManyPodSets"
	// Paused condition and events.
	ReasonPausing = "Pausing"
	ReasonPaused  = "Paused"
	ReasonResumed = "Resumed"
	// Completed and Failed conditions and events.
	ReasonSucceeded            = "Succeeded"
	ReasonFailed               = "Failed"
	ReasonDeadlineExceeded     = "DeadlineExceeded"
	ReasonBackoffLimitExceeded = "BackoffLimitExceeded"
	// ReasonPodFailurePolicy: a failurePolicy rule with action FailJob
	// matched, named as Kubernetes' Job names it.
	ReasonPodFailurePolicy = "PodFailurePolicy"
	// Replica status: waiting out the restart backoff.
	ReasonBackOff = "BackOff"
	// Events only.
	ReasonRestarting    = "Restarting"
	ReasonRestartingJob = "RestartingJob"
	ReasonTTLExpired    = "TTLExpired"
)
