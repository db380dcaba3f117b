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
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// ReasonFailureTolerated is the event of a replica that failed for good
// while the job runs on: a GenericJob whose failure rules do not hold.
const ReasonFailureTolerated = "FailureTolerated"

// failedSlots answers, for a kind's failure rules, which replicas failed
// and will not run again (slot.failedForGood), by their pods' names.
type failedSlots struct {
	job    string
	byName map[string]*slot
}

func (f failedSlots) failed(id podbuilder.ReplicaID) bool {
	s := f.byName[podbuilder.PodName(f.job, id)]
	return s != nil && s.failedForGood
}

// bestOutcome sees every replica that has not failed for good as
// succeeded: the best the job can still come to.
type bestOutcome failedSlots

func (b bestOutcome) Succeeded(id podbuilder.ReplicaID) bool { return !failedSlots(b).failed(id) }

func (b bestOutcome) AllSucceeded() bool {
	for _, s := range b.byName {
		if s.failedForGood {
			return false
		}
	}
	return true
}

// failureFailsJob says whether the replicas failed for good so far (a
// replica failure that its restart policy does not restart) fail the job,
// and what that adds to the failure's message. In every kind but one they
// do. A kind with failure rules (podbuilder.FailureJudge: a GenericJob's
// spec.failureRules) runs on, unless the replicas failed for good complete
// a rule, or no success rule can hold without them.
func failureFailsJob(a podbuilder.Adapter, t *podbuilder.Topology, policy v1beta1.SuccessPolicy,
	failed failedSlots) (fails bool, why string) {
	judge, ok := a.(podbuilder.FailureJudge)
	switch {
	case !ok:
		return true, ""
	case judge.FailsJob(t, failed.failed):
		return true, "; a failure rule holds"
	case !jobSucceeded(a, t, policy, bestOutcome(failed)):
		return true, "; no success rule can hold any more"
	}
	return false, ""
}
