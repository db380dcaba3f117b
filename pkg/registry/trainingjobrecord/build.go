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

package trainingjobrecord

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// What a record leaves out to stay within MaxTrainingJobRecordBytes, in the
// order it gives them up: the least missed first.
const (
	leftOutProgress  = "progress"
	leftOutEvents    = "events"
	leftOutJobStatus = "job.status"
	leftOutJobSpec   = "job.spec"
)

// lastAppliedAnnotation is kubectl's copy of the last applied manifest,
// which repeats the spec; a record keeps the spec itself.
const lastAppliedAnnotation = corev1.LastAppliedConfigAnnotation

// Name is the name of the record of a job: the job's name and the start of
// its UID, so that every job of a name deleted in turn keeps its own, and a
// job deleted twice over (its TTL racing a user) writes one.
func Name(jobName string, uid string) string {
	if len(uid) > 8 {
		uid = uid[:8]
	}
	return jobName + "-" + uid
}

// deletedJob is what a record is built from.
type deletedJob struct {
	job      batch.TrainingJob
	kind     string
	encode   func(batch.TrainingJob) ([]byte, error)
	samples  []batch.ProgressSample
	thinned  int64
	events   []corev1.Event
	deleted  time.Time
	maxBytes int
}

// build makes the record of a deleted job, within maxBytes as JSON: it
// thins the progress history to MaxRecordProgressSamples and the events to
// MaxRecordEvents, then, while the record is too large, gives up what
// leftOut lists, in that order, and says so.
func build(d deletedJob) (*batch.TrainingJobRecord, error) {
	job := d.job.DeepCopyObject().(batch.TrainingJob)
	job.SetManagedFields(nil)
	if a := job.GetAnnotations(); a[lastAppliedAnnotation] != "" {
		a = maps.Clone(a)
		delete(a, lastAppliedAnnotation)
		job.SetAnnotations(a)
	}
	raw, err := d.encode(job)
	if err != nil {
		return nil, err
	}
	status := job.JobStatus()
	r := &batch.TrainingJobRecord{
		ObjectMeta: metav1.ObjectMeta{
			Name:      Name(job.GetName(), string(job.GetUID())),
			Namespace: job.GetNamespace(),
			Labels:    map[string]string{v1beta1.LabelJobName: job.GetName(), v1beta1.LabelJobKind: d.kind},
		},
		JobKind: d.kind, JobName: job.GetName(), JobUID: job.GetUID(), Phase: status.Phase,
		JobCreationTime: job.GetCreationTimestamp(), DeletionTime: metav1.NewTime(d.deleted),
		StartTime: status.StartTime, CompletionTime: status.CompletionTime,
		Job: runtime.RawExtension{Raw: raw},
	}
	r.Progress, r.ThinnedSamples = thin(d.samples, batch.MaxRecordProgressSamples)
	r.ThinnedSamples += d.thinned
	r.Events = recordedEvents(d.events)

	for size := jsonSize(r); size > d.maxBytes; size = jsonSize(r) {
		switch {
		case len(r.Progress) > 0:
			// Halve it: the whole run stays in view, coarser.
			keep := len(r.Progress) / 2
			var dropped int64
			r.Progress, dropped = thin(r.Progress, keep)
			r.ThinnedSamples += dropped
			r.LeftOut = addOnce(r.LeftOut, leftOutProgress)
		case len(r.Events) > 0:
			r.Events = nil
			r.LeftOut = append(r.LeftOut, leftOutEvents)
		case !slices.Contains(r.LeftOut, leftOutJobStatus):
			raw, err := d.encode(withStatusOutline(job))
			if err != nil {
				return nil, err
			}
			r.Job.Raw = raw
			r.LeftOut = append(r.LeftOut, leftOutJobStatus)
		case !slices.Contains(r.LeftOut, leftOutJobSpec):
			raw, err := d.encode(withoutSpec(job))
			if err != nil {
				return nil, err
			}
			r.Job.Raw = raw
			r.LeftOut = append(r.LeftOut, leftOutJobSpec)
		default:
			return r, errTooLarge{size: size, max: d.maxBytes}
		}
	}
	return r, nil
}

// errTooLarge is a record that stays over its bound with everything it may
// leave out gone: only its metadata could be that large, which the API's
// limits on names, labels and annotations keep far below the bound.
type errTooLarge struct{ size, max int }

func (e errTooLarge) Error() string {
	return fmt.Sprintf("a job's record is %d bytes with every part it may leave out gone, over %d", e.size, e.max)
}

// withStatusOutline is the job with only the status a reader of its
// history needs most: phase, conditions, times and attempts, without the
// attempts' log lines.
func withStatusOutline(job batch.TrainingJob) batch.TrainingJob {
	out := job.DeepCopyObject().(batch.TrainingJob)
	s := out.JobStatus()
	kept := batch.TrainingJobStatus{
		Phase: s.Phase, Conditions: s.Conditions, StartTime: s.StartTime, CompletionTime: s.CompletionTime,
		BackoffCount: s.BackoffCount, Attempts: s.Attempts, AttemptCount: s.AttemptCount, Accounting: s.Accounting,
	}
	for i := range kept.Attempts {
		for j := range kept.Attempts[i].FailedReplicas {
			kept.Attempts[i].FailedReplicas[j].Logs = ""
		}
	}
	*s = kept
	return out
}

// withoutSpec is the job's outline with no spec: the metadata and status
// outline alone.
func withoutSpec(job batch.TrainingJob) batch.TrainingJob {
	out := withStatusOutline(job)
	*out.CommonSpec() = batch.TrainingJobSpec{}
	return out
}

// thin keeps at most max samples: all of them when they fit, else every
// other one of the oldest until they do, the newest kept as they are. It
// returns how many it dropped.
func thin(samples []batch.ProgressSample, max int) ([]batch.ProgressSample, int64) {
	if len(samples) <= max {
		return slices.Clone(samples), 0
	}
	out := slices.Clone(samples)
	for len(out) > max {
		half := len(out) / 2
		if half < 2 {
			// Too few to thin: the oldest go.
			out = out[len(out)-max:]
			break
		}
		older := make([]batch.ProgressSample, 0, half)
		for i := 0; i < half; i += 2 {
			older = append(older, out[i])
		}
		out = append(older, out[half:]...)
	}
	return out, int64(len(samples) - len(out))
}

// recordedEvents are the newest MaxRecordEvents of a job's events, newest
// first, their messages cut to MaxRecordEventMessageBytes.
func recordedEvents(events []corev1.Event) []batch.RecordedEvent {
	sorted := slices.Clone(events)
	slices.SortStableFunc(sorted, func(a, b corev1.Event) int { return eventTime(b).Compare(eventTime(a)) })
	if len(sorted) > batch.MaxRecordEvents {
		sorted = sorted[:batch.MaxRecordEvents]
	}
	out := make([]batch.RecordedEvent, 0, len(sorted))
	for _, e := range sorted {
		message := batch.CutBytes(e.Message, batch.MaxRecordEventMessageBytes)
		source := e.Source.Component
		if source == "" {
			source = e.ReportingController
		}
		out = append(out, batch.RecordedEvent{
			Type: e.Type, Reason: e.Reason, Message: message, Count: max(e.Count, 1),
			FirstTime: firstTime(e), LastTime: metav1.NewTime(eventTime(e)), Source: source,
		})
	}
	return out
}

// eventTime is when an event last happened, whichever API wrote it.
func eventTime(e corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

func firstTime(e corev1.Event) metav1.Time {
	switch {
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp
	case !e.EventTime.IsZero():
		return metav1.NewTime(e.EventTime.Time)
	}
	return e.CreationTimestamp
}

func jsonSize(r *batch.TrainingJobRecord) int {
	data, err := json.Marshal(r)
	if err != nil {
		return int(^uint(0) >> 1)
	}
	return len(data)
}

func addOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
