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

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// ReasonTTLExpired is the event of a finished job deleted once its
// ttlSecondsAfterFinished passed.
const ReasonTTLExpired = "TTLExpired"

// Clean-up and TTL: what happens to a finished job's pods, and to the job.

// cleanUpRemoves says whether a finished job deletes a pod under its
// clean-up policy: All deletes every pod, Unfinished those still running,
// None none; a job that ran out of time (stopRunning) stops its running
// pods whatever the policy. A pod already being deleted needs nothing.
func cleanUpRemoves(policy v1beta1.CleanUpPolicy, stopRunning bool, p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	if policy == v1beta1.CleanUpPolicyAll {
		return true
	}
	return !isTerminated(p) && (policy == v1beta1.CleanUpPolicyUnfinished || stopRunning)
}

// ttlExpiry is when a job that finished at done is deleted under
// ttlSecondsAfterFinished; ok is false when it is kept. A negative TTL,
// which validation refuses, counts as zero.
func ttlExpiry(ttl *int32, done time.Time) (expiry time.Time, ok bool) {
	if ttl == nil {
		return time.Time{}, false
	}
	return done.Add(time.Duration(max(*ttl, 0)) * time.Second), true
}
