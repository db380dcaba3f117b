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

package dashboard

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// jobSummary is a job as a row of the list shows it. The list gets these
// rather than whole jobs: a job's progress history alone can be many times
// the size of everything else the row needs.
type jobSummary struct {
	Kind      string            `json:"kind"`
	Resource  string            `json:"resource"`
	Namespace string            `json:"namespace"`
	Name      string            `json:"name"`
	UID       string            `json:"uid"`
	Labels    map[string]string `json:"labels,omitempty"`
	Created   metav1.Time       `json:"created"`
	Phase     v1beta1.JobPhase  `json:"phase,omitempty"`
	// Paused tells whether the spec asks for the pause mode, which decides
	// the action the row offers.
	Paused bool `json:"paused,omitempty"`
	// Percent is the reported percentage, else step/totalSteps; absent when
	// the job reported neither.
	Percent             *int32       `json:"percent,omitempty"`
	Step                *int64       `json:"step,omitempty"`
	TotalSteps          *int64       `json:"totalSteps,omitempty"`
	EstimatedFinishTime *metav1.Time `json:"estimatedFinishTime,omitempty"`
	Queue               string       `json:"queue,omitempty"`
	// Restarts counts the job's restarts in a row (status.backoffCount).
	Restarts int32 `json:"restarts"`
	// Interruptions, LostSteps and LostReplicaSeconds are the work lost
	// to interruptions (status.accounting).
	Interruptions      int32 `json:"interruptions,omitempty"`
	LostSteps          int64 `json:"lostSteps,omitempty"`
	LostReplicaSeconds int64 `json:"lostReplicaSeconds,omitempty"`
}

// listedJob is what a stream of the list keeps of a job: its name and
// namespace, which key it in the stream's informer, and its row. Each stream
// keeps every job in scope, and a whole job (pod templates, every replica's
// status, the checkpoints) is many times its row: with 1,000 jobs and 200
// streams open, the server held 600 MiB, over its limit of 256
// (docs/benchmarks.md).
type listedJob struct {
	metav1.ObjectMeta
	row jobSummary
}

func keepListed(kind jobKind, job v1beta1.TrainingJob) any {
	return &listedJob{ObjectMeta: metav1.ObjectMeta{Name: job.GetName(), Namespace: job.GetNamespace()}, row: summarize(kind, job)}
}

func summarize(kind jobKind, job v1beta1.TrainingJob) jobSummary {
	spec, status := job.CommonSpec(), job.JobStatus()
	s := jobSummary{
		Kind:      kind.Name,
		Resource:  kind.Resource,
		Namespace: job.GetNamespace(),
		Name:      job.GetName(),
		UID:       string(job.GetUID()),
		Labels:    job.GetLabels(),
		Created:   job.GetCreationTimestamp(),
		Phase:     status.Phase,
		Paused:    spec.RunMode != nil && spec.RunMode.Pause != nil && spec.RunMode.Pause.Enabled,
		Restarts:  status.BackoffCount,
	}
	var schedulerQueue string
	if spec.Scheduler != nil && spec.Scheduler.T9kScheduler != nil {
		schedulerQueue = spec.Scheduler.T9kScheduler.Queue
	}
	s.Queue = batch.QueueName(job.GetLabels(), schedulerQueue)
	if p := status.Progress; p != nil {
		s.Percent, s.Step, s.TotalSteps = p.Percent, p.Step, p.TotalSteps
		if s.Percent == nil && p.Step != nil && p.TotalSteps != nil && *p.TotalSteps > 0 {
			percent := int32(min(100, *p.Step*100 / *p.TotalSteps))
			s.Percent = &percent
		}
		if !status.Phase.IsFinished() {
			s.EstimatedFinishTime = p.EstimatedFinishTime
		}
	}
	if a := status.Accounting; a != nil {
		s.Interruptions, s.LostSteps, s.LostReplicaSeconds = a.Interruptions, a.LostSteps, a.LostReplicaSeconds
	}
	return s
}
