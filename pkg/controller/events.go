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

// The reasons of the job's conditions and events are defined beside the
// policy that sets them (as ReasonDeadlineExceeded in deadline_policy.go).
// The events about the objects a job owns (created, adopted, deleted, a
// name taken) have theirs in package owner; owner.ReasonFailedCreate is also
// the ReplicaFailure condition's reason when the apiserver refuses a pod.

// Reasons of the Completed and Failed conditions and their events, which
// the finish sets and the metrics count by.
const (
	ReasonSucceeded = "Succeeded"
	ReasonFailed    = "Failed"
)

// pendingEvent is an event a plan decided, recorded once the status that
// explains it is stored.
type pendingEvent struct {
	eventType, reason, message string
}
