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

package batch

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// QueueLabel is Kueue's label that puts a job in a LocalQueue. It and
// spec.scheduler.t9kScheduler.queue name the same queue; the label wins,
// as Kueue's users write it.
const QueueLabel = "kueue.x-k8s.io/queue-name"

// QueueName is the queue a job with these labels and this
// spec.scheduler.t9kScheduler.queue names, or "".
func QueueName(labels map[string]string, schedulerQueue string) string {
	if q := labels[QueueLabel]; q != "" {
		return q
	}
	return schedulerQueue
}

// QueueAdmitted says whether a job's conditions show it admitted by its
// queue: the Queued condition is False for ReasonAdmitted. The queue then
// holds quota for pods that may be running, so the job must keep naming
// it (Kueue's webhooks keep a running job's queue name the same way).
func QueueAdmitted(conditions []metav1.Condition) bool {
	c := meta.FindStatusCondition(conditions, ConditionQueued)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == ReasonAdmitted
}

// QueueWaiting says whether a job's conditions show it waiting in a queue:
// the Queued condition is True, for any reason but that it names no queue
// where one is required. Such a job runs only once admitted, even if its
// queue name is then removed.
func QueueWaiting(conditions []metav1.Condition) bool {
	c := meta.FindStatusCondition(conditions, ConditionQueued)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason != ReasonQueueNameRequired
}
