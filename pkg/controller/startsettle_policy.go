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
	"k8s.io/apimachinery/pkg/api/equality"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// startSettle is how long the status of a starting job may leave replicas
// that started recorded as Pending. The replicas of a job start moments
// apart, one pod event batch rarely holds them all, and a job is not
// Running before every replica runs: waiting a little records them in one
// write instead of one per batch.
const startSettle = 2 * time.Second

// startHoldInput is what a start's hold is decided on.
type startHoldInput struct {
	// old is the status as stored, cur the status planned now.
	old, cur *v1beta1.TrainingJobStatus
	// replica looks a replica up by its name: its status as recorded, and
	// the pod that runs it now.
	replica func(name string) (recorded *v1beta1.ReplicaStatus, pod *corev1.Pod, ok bool)
	// events is how many events the plan has to record.
	events int
	now    time.Time
}

// decideStartHold says whether this reconcile's status write can wait, and
// until when. It can wait when the only change from the stored status is
// replicas of a Pending or Resuming job that went from Pending to Running,
// the job stays in its phase, no event is to be recorded, and the first of
// those replicas started less than startSettle ago by its pod's own clock.
// A replica without a start time, or with one in the controller's future,
// is written at once, so a hold always ends at a fixed time.
func decideStartHold(in startHoldInput) (until time.Time, hold bool) {
	if in.events > 0 || in.old.Phase != in.cur.Phase ||
		(in.cur.Phase != v1beta1.JobPending && in.cur.Phase != v1beta1.JobResuming) {
		return time.Time{}, false
	}
	// The status as it would be without the starts must be the stored one.
	without := in.cur.DeepCopy()
	without.Aggregate = in.old.Aggregate
	var first time.Time
	for ti := range without.Tasks {
		for ri := range without.Tasks[ti].ReplicaStatus {
			rs := &without.Tasks[ti].ReplicaStatus[ri]
			prev, pod, ok := in.replica(rs.Name)
			if !ok || prev == nil || prev.Phase != v1beta1.ReplicaPending ||
				rs.Phase != v1beta1.ReplicaRunning || prev.UID != rs.UID {
				continue
			}
			if pod == nil {
				return time.Time{}, false
			}
			since, ok := podRunningSince(pod)
			if !ok || since.After(in.now) {
				return time.Time{}, false
			}
			if first.IsZero() || since.Before(first) {
				first = since
			}
			*rs = *prev.DeepCopy()
		}
	}
	if first.IsZero() || !equality.Semantic.DeepEqual(without, in.old) {
		return time.Time{}, false
	}
	until = first.Add(startSettle)
	return until, in.now.Before(until)
}

// podRunningSince is when a pod started running: the earliest start of
// its running containers.
func podRunningSince(p *corev1.Pod) (time.Time, bool) {
	var since time.Time
	for _, cs := range p.Status.ContainerStatuses {
		if run := cs.State.Running; run != nil && !run.StartedAt.IsZero() &&
			(since.IsZero() || run.StartedAt.Time.Before(since)) {
			since = run.StartedAt.Time
		}
	}
	return since, !since.IsZero()
}
