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
	"strings"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/kueue"
	"tensorstack.dev/training/pkg/podbuilder"
)

// ReasonTooManyPodSets is the Queued condition's reason for a job with more
// replica types than Kueue's pod sets allow.
const ReasonTooManyPodSets = "TooManyPodSets"

// What a queued job says about its queue and asks of its Workload, over the
// job, its topology and its Workload's state alone (queue.go decides which
// queue, reads the Workload and acts on it).

// queueHold is why a queued job waits with no Workload state to say so.
type queueHold struct {
	reason, message string
}

// queueWait is the reason and message of the Queued condition of a job
// that waits: why it is held (hold), else what its Workload (q, in
// queueName) says; podSets is how many pod sets the job has.
func queueWait(hold *queueHold, q *kueue.State, queueName string, podSets int) (reason, message string) {
	if hold != nil {
		return hold.reason, hold.message
	}
	switch {
	case q.Evicted != nil:
		return q.Evicted.Reason, "evicted by Kueue: " + q.Evicted.Message
	case q.Mismatch != "":
		return v1beta1.ReasonPrebuiltWorkloadMismatch, fmt.Sprintf("the job names Workload %s (%s), which was not built "+
			"for it: %s; Kueue would not admit it for the job", q.Workload.Name, kueue.PrebuiltWorkloadKey, q.Mismatch)
	case q.Workload == nil && podSets > kueue.MaxPodSets:
		return ReasonTooManyPodSets, fmt.Sprintf("Kueue admits at most %d pod sets, and the job has %d replica types with replicas",
			kueue.MaxPodSets, podSets)
	case q.Workload == nil:
		return v1beta1.ReasonWaitingForAdmission, fmt.Sprintf("waiting for its Workload in queue %s", queueName)
	case q.Waiting != nil:
		message = fmt.Sprintf("waiting for admission in queue %s: %s", queueName, q.Waiting.Message)
		if levels := kueue.RequestedLevels(q.Workload); len(levels) > 0 {
			message += fmt.Sprintf(" (the job asks for topology level %s)", strings.Join(levels, ", "))
		}
		return v1beta1.ReasonWaitingForAdmission, message
	}
	return v1beta1.ReasonWaitingForAdmission, fmt.Sprintf("quota reserved in queue %s; waiting for admission checks", queueName)
}

// admittedMessage is the Queued condition's message of an admitted job: the
// ClusterQueue, and the replicas an elastic job runs of those it asks for.
func admittedMessage(topo *podbuilder.Topology, q *kueue.State) string {
	message := "admitted by ClusterQueue " + string(q.Workload.Status.Admission.ClusterQueue)
	if last := len(topo.Groups) - 1; last >= 0 {
		if g, n := &topo.Groups[last], admittedCount(topo, last, q); n < g.Replicas {
			message += fmt.Sprintf("; %d of the %d %s replicas, the others wait until the job is admitted again", n, g.Replicas, g.Type)
		}
	}
	return message
}

// podSetCount is how many pod sets a job's Workload has: one per replica
// type with replicas.
func podSetCount(topo *podbuilder.Topology) int {
	n := 0
	for _, g := range topo.Groups {
		if g.Replicas > 0 {
			n++
		}
	}
	return n
}

// queueWant completes what a queued job asks of its Workload (want, with
// what only the caller knows): its activity, which follows pause, and,
// unless it has finished, its pod sets.
func queueWant(job v1beta1.TrainingJob, topo *podbuilder.Topology, want kueue.Want) (kueue.Want, error) {
	want.Active = !pauseEnabled(job.CommonSpec())
	if want.Phase.IsFinished() {
		return want, nil
	}
	var err error
	want.PodSets, want.Digest, err = kueue.PodSets(job.GetAnnotations(), topo.Groups,
		func(gi int) int32 { return elasticMinCount(topo, gi) }, want.AvoidNodes)
	return want, err
}
