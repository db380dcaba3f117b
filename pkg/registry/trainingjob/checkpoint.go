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
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/validation"
)

// CheckpointREST is the checkpoint subresource of a job kind: a POST of a
// CheckpointReport records a checkpoint the job finished writing as
// status.checkpoint.latest, which new pods resume from. Reports are rare
// (one per checkpoint), so each is stored at once.
type CheckpointREST struct {
	// store reads jobs; checkpointStore writes the reports.
	store           *genericregistry.Store
	checkpointStore *genericregistry.Store
	reporters       *reporterCheck
	clock           clock.PassiveClock
}

var _ rest.NamedCreater = &CheckpointREST{}

func newCheckpointREST(store, checkpointStore *genericregistry.Store, config ProgressConfig) *CheckpointREST {
	var clk clock.PassiveClock = clock.RealClock{}
	if config.Clock != nil {
		clk = config.Clock
	}
	return &CheckpointREST{
		store:           store,
		checkpointStore: checkpointStore,
		reporters:       newReporterCheck(config.Pods, store.DefaultQualifiedResource, "checkpoint"),
		clock:           clk,
	}
}

// New returns an empty report.
func (r *CheckpointREST) New() runtime.Object { return &batch.CheckpointReport{} }

// Destroy does nothing: the main resource owns the shared storage.
func (r *CheckpointREST) Destroy() {}

// Create checks a report and who sent it, and stores it as the job's latest
// checkpoint.
func (r *CheckpointREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	report := obj.(*batch.CheckpointReport)
	if err := reportNamesJob(report, "checkpoint", name); err != nil {
		return nil, err
	}
	if errs := validation.ValidateCheckpointReport(report); len(errs) > 0 {
		return nil, apierrors.NewInvalid(batch.Kind("CheckpointReport"), name, errs)
	}
	job, err := reportedJob(ctx, r.store, name)
	if err != nil {
		return nil, err
	}
	dir, ok := batch.CheckpointDir(job)
	if !ok {
		return nil, apierrors.NewConflict(r.store.DefaultQualifiedResource, name,
			fmt.Errorf("the job has no spec.runPolicy.checkpoint, so it takes no checkpoint reports"))
	}
	reporter, err := r.reporters.reporterInfo(ctx, job)
	if err != nil {
		return nil, err
	}
	path, inside := batch.CheckpointPath(dir, report.Path)
	if !inside {
		return nil, apierrors.NewInvalid(batch.Kind("CheckpointReport"), name, field.ErrorList{field.Invalid(field.NewPath("path"), report.Path,
			fmt.Sprintf("must lie inside the checkpoint directory %s (the mount of volume %s)", dir, job.CommonSpec().RunPolicy.Checkpoint.VolumeName))})
	}
	if createValidation != nil {
		if err := createValidation(ctx, report.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	now := metav1.NewMicroTime(r.clock.Now())
	record := batch.CheckpointRecord{CheckpointValues: report.CheckpointValues, Reporter: reporter.name, ReportTime: now, Node: reporter.node}
	record.Path = path
	answer := report.DeepCopy()
	answer.Name, answer.Namespace = job.GetName(), job.GetNamespace()
	answer.Path = path
	if len(options.DryRun) > 0 {
		// Checked against the job as read; a real write checks again.
		if err := stepMayFollow(job.JobStatus(), &record, reporter.podCreated, name); err != nil {
			return nil, err
		}
		return answer, nil
	}
	if err := r.write(ctx, job, record, reporter.podCreated); err != nil {
		return nil, err
	}
	answer.ReportTime = &now
	return answer, nil
}

// write stores a checkpoint as the job's latest, unless the job is gone,
// was replaced by another of the same name, or has finished.
func (r *CheckpointREST) write(ctx context.Context, read batch.TrainingJob, record batch.CheckpointRecord, podCreated *time.Time) error {
	name, uid := read.GetName(), read.GetUID()
	transform := func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
		job, err := reportedJobToWrite(r.store, old, name, uid)
		if err != nil {
			return nil, err
		}
		status := job.JobStatus()
		if err := stepMayFollow(status, &record, podCreated, name); err != nil {
			return nil, err
		}
		if status.Checkpoint == nil {
			status.Checkpoint = &batch.CheckpointStatus{}
		}
		batch.RecordCheckpoint(status.Checkpoint, record)
		return job, nil
	}
	_, _, err := r.checkpointStore.Update(ctx, name,
		rest.DefaultUpdatedObjectInfo(nil, transform), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc,
		false, &metav1.UpdateOptions{})
	return err
}

// stepMayFollow refuses a checkpoint whose step is below the latest one's,
// unless its pod's job was restarted since that checkpoint: training that
// began again from scratch (or an older checkpoint) may report lower steps.
// A pod created after the checkpoint is of a restarted job; so is one whose
// job began an attempt since, as a restart in place keeps the same pods.
// Reports from outside a pod (podCreated nil) may not go back.
func stepMayFollow(status *batch.TrainingJobStatus, record *batch.CheckpointRecord, podCreated *time.Time, name string) error {
	if status.Checkpoint == nil || status.Checkpoint.Latest == nil {
		return nil
	}
	latest := status.Checkpoint.Latest
	if latest.Step == nil || record.Step == nil || *record.Step >= *latest.Step {
		return nil
	}
	if podCreated != nil && (podCreated.After(latest.ReportTime.Time) || attemptBegunAfter(status, latest.ReportTime.Time)) {
		return nil
	}
	return apierrors.NewInvalid(batch.Kind("CheckpointReport"), name, field.ErrorList{field.Invalid(field.NewPath("step"), *record.Step,
		fmt.Sprintf("must not be below the latest checkpoint's step %d unless the job was restarted since (the reporting pod is newer than that checkpoint, or its attempt began after it)",
			*latest.Step))})
}

// attemptBegunAfter says whether the job's current attempt began after t.
func attemptBegunAfter(status *batch.TrainingJobStatus, t time.Time) bool {
	n := len(status.Attempts)
	return n > 0 && status.Attempts[n-1].EndTime == nil && status.Attempts[n-1].StartTime.After(t)
}
