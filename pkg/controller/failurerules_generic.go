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
	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// ReasonFailureTolerated is the event of a replica that failed for good
// while the job runs on: a GenericJob whose failure rules do not hold.
const ReasonFailureTolerated = "FailureTolerated"

// failForGood decides a replica failure that its restart policy does not
// restart. In every kind but one it fails the job. A kind with failure
// rules (podbuilder.FailureJudge: a GenericJob's spec.failureRules) leaves
// the replica failed and runs on, unless the replicas failed for good now
// complete a rule, or no success rule can hold without them.
func (r *reconciler) failForGood(s *slot, reason, message string) (string, string) {
	s.failedForGood = true
	judge, ok := r.kind.Adapter.(podbuilder.FailureJudge)
	if !ok {
		return reason, message
	}
	if judge.FailsJob(r.topo, r.failedForGood) {
		return reason, message + "; a failure rule holds"
	}
	if !jobSucceeded(r.kind.Adapter, r.topo, r.spec.RunPolicy.SuccessPolicy, bestOutcome{r}) {
		return reason, message + "; no success rule can hold any more"
	}
	s.phase = v1beta1.ReplicaFailed
	r.failure = message
	if s.prev == nil || s.prev.Phase != v1beta1.ReplicaFailed {
		r.event(corev1.EventTypeWarning, ReasonFailureTolerated,
			"%s; the job runs on: no failure rule holds, and a success rule still can", message)
	}
	return "", ""
}

// failedForGood says whether a replica failed and will not run again.
func (r *reconciler) failedForGood(id podbuilder.ReplicaID) bool {
	s := r.byName[podbuilder.PodName(r.job.GetName(), id)]
	return s != nil && s.failedForGood
}

// bestOutcome sees every replica that has not failed for good as
// succeeded: the best the job can still come to.
type bestOutcome struct{ r *reconciler }

func (b bestOutcome) Succeeded(id podbuilder.ReplicaID) bool { return !b.r.failedForGood(id) }

func (b bestOutcome) AllSucceeded() bool {
	for _, s := range b.r.slots {
		if s.failedForGood {
			return false
		}
	}
	return true
}
