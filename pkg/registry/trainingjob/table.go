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

package trainingjob

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/registry/tables"
)

// tableColumns are the columns kubectl get prints; priority 1 columns appear
// only with -o wide.
var tableColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the job."},
	{Name: "Phase", Type: "string", Description: "Coarse state of the job; \"Pending (WaitingForGang)\" while its pods wait for room for the whole gang, \"Pending (WaitingForAdmission)\" while it waits in a Kueue queue, \"Paused (Preempted)\" and the like once Kueue evicted it, \"Pending (ImagePullBackOff)\", \"Pending (Unschedulable)\" and the like while a replica cannot start."},
	{Name: "Ready", Type: "string", Description: "Replicas running or succeeded, of all replicas."},
	{Name: "Restarts", Type: "integer", Description: "Pod replacements used, counted against backoffLimit."},
	{Name: "Progress", Type: "string", Description: "Share of the work done, as the job's pods last reported it (status.progress.percent)."},
	{Name: "Age", Type: "string", Description: "Time since the job was created."},
	{Name: "Mode", Type: "string", Priority: 1, Description: "Immediate, Debug or Pause."},
	{Name: "Replicas", Type: "string", Priority: 1, Description: "Replicas per type; for an elastic job's scaled type, those with a pod of those it aims for (worker:2/4)."},
	{Name: "Duration", Type: "string", Priority: 1, Description: "Time the job has been running, or ran until it finished."},
	{Name: "ETA", Type: "string", Priority: 1, Description: "Time left until the job is expected to finish, by its last progress report (status.progress.estimatedFinishTime)."},
	{Name: "Metric", Type: "string", Priority: 1, Description: "The first metric of the job's last progress report, name=value."},
}

// tableConvertor renders jobs as kubectl table rows.
type tableConvertor struct {
	// now is the clock for ages and durations; tests fix it.
	now func() time.Time
}

func (c tableConvertor) ConvertToTable(_ context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return tables.Convert(object, tableOptions, tableColumns, c.row)
}

func (c tableConvertor) row(obj runtime.Object) (metav1.TableRow, error) {
	job, ok := obj.(batch.TrainingJob)
	if !ok {
		return metav1.TableRow{}, fmt.Errorf("not a training job: %T", obj)
	}
	spec, status := job.CommonSpec(), job.JobStatus()
	now := c.now()

	replicas := make([]string, 0, len(spec.ReplicaSpecs))
	for _, r := range spec.ReplicaSpecs {
		replicas = append(replicas, fmt.Sprintf("%s:%d", r.Type, batch.ReplicasOf(&r)))
	}
	// Sums in int64: a job stored before the replica cap, or a status
	// written by another client, may hold counts near the int32 limit.
	total := batch.TotalReplicas(spec.ReplicaSpecs)
	if ej, ok := job.(batch.ElasticJob); ok && batch.ElasticEnabled(ej.ElasticSpec()) && len(spec.ReplicaSpecs) > 0 {
		// The scaled type shows the replicas that have a pod, of those
		// the job aims for.
		e := ej.ElasticSpec()
		_, masterFirst := job.(*batch.PyTorchTrainingJob)
		scaled, fixed := batch.ElasticScaledType(spec.ReplicaSpecs, masterFirst)
		total = batch.ElasticTotal(total, e.MinReplicas, e.MaxReplicas, e.ExpectedReplicas)
		typ := spec.ReplicaSpecs[scaled].Type
		replicas[scaled] = fmt.Sprintf("%s:%d/%d", typ, replicasWithPods(status, typ), max(total-fixed, 0))
	}
	ready := int64(status.Aggregate.Running) + int64(status.Aggregate.Succeeded)
	phase := string(status.Phase)
	if phase == "" {
		phase = string(batch.JobPending)
	}
	if reason := queuedReason(spec, status); reason != "" {
		phase += " (" + reason + ")"
	} else if waitingForGang(spec, status) {
		phase += " (" + batch.ReasonWaitingForGang + ")"
	} else if reason := startBlocker(spec, status); reason != "" {
		phase += " (" + reason + ")"
	}

	return metav1.TableRow{
		Cells: []any{
			job.GetName(),
			phase,
			fmt.Sprintf("%d/%d", ready, total),
			int64(status.BackoffCount),
			progressPercent(status.Progress),
			tables.Age(job.GetCreationTimestamp(), now),
			runMode(spec),
			strings.Join(replicas, ","),
			runDuration(status, now),
			timeLeft(status, now),
			firstMetric(status.Progress),
		},
	}, nil
}

// replicasWithPods counts the replicas of a type whose pod exists, as the
// status last recorded them.
func replicasWithPods(status *batch.TrainingJobStatus, typ batch.ReplicaType) int {
	n := 0
	for _, t := range status.Tasks {
		if t.Type != typ {
			continue
		}
		for _, r := range t.ReplicaStatus {
			if r.UID != "" && r.Phase != batch.ReplicaCreating && r.Phase != batch.ReplicaDeleted {
				n++
			}
		}
	}
	return n
}

// waitingForGang says whether a job that has not started, or not started
// again, waits for room for its whole gang.
func waitingForGang(spec *batch.TrainingJobSpec, status *batch.TrainingJobStatus) bool {
	switch status.Phase {
	case "", batch.JobPending, batch.JobResuming:
	default:
		return false
	}
	c := meta.FindStatusCondition(status.Conditions, batch.ConditionGangScheduled)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == batch.ReasonWaitingForGang && runMode(spec) != "Pause"
}

// startBlocker is why a job that has not started, or not started again,
// cannot start, as its Running condition names it (ImagePullBackOff,
// CreateContainerConfigError, Unschedulable, ...), or "" while its pods are
// only on their way, whose condition carries the phase as its reason.
func startBlocker(spec *batch.TrainingJobSpec, status *batch.TrainingJobStatus) string {
	switch status.Phase {
	case batch.JobPending, batch.JobResuming:
	default:
		return ""
	}
	c := meta.FindStatusCondition(status.Conditions, batch.ConditionRunning)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason == string(status.Phase) || runMode(spec) == "Pause" {
		return ""
	}
	return c.Reason
}

// queuedReason is why a job waits in its Kueue queue, or "": the reason of
// its True Queued condition, unless the user paused it.
func queuedReason(spec *batch.TrainingJobSpec, status *batch.TrainingJobStatus) string {
	if status.Phase.IsFinished() || runMode(spec) == "Pause" {
		return ""
	}
	if c := meta.FindStatusCondition(status.Conditions, batch.ConditionQueued); c != nil && c.Status == metav1.ConditionTrue {
		return c.Reason
	}
	return ""
}

func runMode(spec *batch.TrainingJobSpec) string {
	switch {
	case batch.DebugEnabled(spec):
		return "Debug"
	case batch.PauseEnabled(spec):
		return "Pause"
	default:
		return "Immediate"
	}
}

// runDuration is batch.RunLength as a table cell; empty before the job
// started.
func runDuration(status *batch.TrainingJobStatus, now time.Time) string {
	d, started := batch.RunLength(status.StartTime, status.CompletionTime, now)
	if !started {
		return ""
	}
	return duration.HumanDuration(d)
}

func progressPercent(p *batch.ProgressStatus) string {
	if p == nil || p.Percent == nil {
		return ""
	}
	return fmt.Sprintf("%d%%", *p.Percent)
}

// timeLeft is the time until the estimated finish of a job still on its
// way; empty without an estimate or once the job finished.
func timeLeft(status *batch.TrainingJobStatus, now time.Time) string {
	p := status.Progress
	if p == nil || p.EstimatedFinishTime == nil || status.Phase.IsFinished() {
		return ""
	}
	left := p.EstimatedFinishTime.Sub(now)
	if left <= 0 {
		return "0s"
	}
	return duration.HumanDuration(left)
}

func firstMetric(p *batch.ProgressStatus) string {
	if p == nil || len(p.Metrics) == 0 {
		return ""
	}
	return p.Metrics[0].Name + "=" + p.Metrics[0].Value
}
