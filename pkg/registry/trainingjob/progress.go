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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/validation"
)

// DefaultProgressWriteInterval is how often, at most, a job's progress
// reports reach etcd.
const DefaultProgressWriteInterval = 5 * time.Second

// ProgressConfig is how the progress subresource writes and whom it trusts.
type ProgressConfig struct {
	// Interval is the shortest time between two stored reports of a job;
	// zero means DefaultProgressWriteInterval.
	Interval time.Duration
	// Pods finds the pod a pod-bound token names; nil refuses every report
	// sent with such a token, as nothing can check the pod's job.
	Pods PodGetter
	// Clock is the coalescer's clock; nil is the real one.
	Clock clock.WithDelayedExecution
}

// ProgressREST is the progress subresource of a job kind: a POST of a
// ProgressReport records how far the job has come in status.progress. A
// job's reports reach storage at most once per interval; in between, the
// latest report waits and replaces any earlier waiting one.
type ProgressREST struct {
	// store reads jobs; writes go through the coalescer to progressStore.
	store     *genericregistry.Store
	reporters *reporterCheck
	writer    *progressCoalescer
}

var _ rest.NamedCreater = &ProgressREST{}

func newProgressREST(store, progressStore *genericregistry.Store, history *progressHistory, config ProgressConfig) *ProgressREST {
	interval := config.Interval
	if interval <= 0 {
		interval = DefaultProgressWriteInterval
	}
	var clk clock.WithDelayedExecution = clock.RealClock{}
	if config.Clock != nil {
		clk = config.Clock
	}
	write := func(ctx context.Context, key jobKey, report pendingReport, replaced int64) error {
		return writeProgress(ctx, progressStore, history, key, report, replaced)
	}
	return &ProgressREST{
		store:     store,
		reporters: newReporterCheck(config.Pods, store.DefaultQualifiedResource, "progress"),
		writer:    newProgressCoalescer(interval, clk, write),
	}
}

// New returns an empty report.
func (r *ProgressREST) New() runtime.Object { return &batch.ProgressReport{} }

// Destroy does nothing: the main resource owns the shared storage.
func (r *ProgressREST) Destroy() {}

// Create checks a report and who sent it, then stores it now or holds it
// for the job's next write.
func (r *ProgressREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	report := obj.(*batch.ProgressReport)
	if err := reportNamesJob(report, "progress", name); err != nil {
		return nil, err
	}
	if errs := validation.ValidateProgressReport(report); len(errs) > 0 {
		return nil, apierrors.NewInvalid(batch.Kind("ProgressReport"), name, errs)
	}
	job, err := reportedJob(ctx, r.store, name)
	if err != nil {
		return nil, err
	}
	reporter, err := r.reporters.reporter(ctx, job)
	if err != nil {
		return nil, err
	}
	if createValidation != nil {
		if err := createValidation(ctx, report.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	answer := report.DeepCopy()
	answer.Name, answer.Namespace = job.GetName(), job.GetNamespace()
	if len(options.DryRun) > 0 {
		answer.Status = batch.ProgressReportStatus{}
		return answer, nil
	}
	key := jobKey{namespace: job.GetNamespace(), name: job.GetName(), uid: job.GetUID()}
	pending := pendingReport{values: report.ProgressValues, reporter: reporter, received: r.writer.clock.Now()}
	answer.Status, err = r.writer.report(ctx, key, pending)
	if err != nil {
		return nil, err
	}
	return answer, nil
}

// reportNamesJob refuses a report whose metadata.name is another job's than
// the URL's.
func reportNamesJob(report runtime.Object, what, name string) error {
	if requestMeta, err := meta.Accessor(report); err == nil && requestMeta.GetName() != "" && requestMeta.GetName() != name {
		return apierrors.NewBadRequest(fmt.Sprintf("metadata.name %q of the %s report does not match the job %q in the URL", requestMeta.GetName(), what, name))
	}
	return nil
}

// reportedJob reads the job a report is for, refusing one that finished.
// The watch cache answers: a report costs no etcd read. A job created a
// moment ago may not be in it yet; etcd decides before a 404.
func reportedJob(ctx context.Context, store *genericregistry.Store, name string) (batch.TrainingJob, error) {
	obj, err := store.Get(ctx, name, &metav1.GetOptions{ResourceVersion: "0"})
	if apierrors.IsNotFound(err) {
		obj, err = store.Get(ctx, name, &metav1.GetOptions{})
	}
	if err != nil {
		return nil, err
	}
	job := obj.(batch.TrainingJob)
	if err := finishedConflict(store, name, job.JobStatus().Phase); err != nil {
		return nil, err
	}
	return job, nil
}

// finishedConflict is the 409 of a report for a job that has finished, or
// nil while it has not.
func finishedConflict(store *genericregistry.Store, name string, phase batch.JobPhase) error {
	if !phase.IsFinished() {
		return nil
	}
	return apierrors.NewConflict(store.DefaultQualifiedResource, name,
		fmt.Errorf("the job has %s; it takes no more progress reports", phase))
}

// writeProgress stores one report in a job's status.progress, unless the
// job is gone, was replaced by another of the same name, or has finished,
// and adds its metrics to the job's progress history.
func writeProgress(ctx context.Context, progressStore *genericregistry.Store, history *progressHistory, key jobKey, report pendingReport, replaced int64) error {
	transform := func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
		job, err := reportedJobToWrite(progressStore, old, key.name, key.uid)
		if err != nil {
			return nil, err
		}
		status := job.JobStatus()
		if p := status.Progress; p != nil && p.ReportTime != nil && p.ReportTime.Time.After(report.received) {
			// A newer report got here first (a final one is written at
			// once, maybe while a held one still is): keep it.
			return job, nil
		}
		status.Progress = nextProgress(status.Progress, report, replaced)
		return job, nil
	}
	stored, _, err := progressStore.Update(ctx, key.name,
		rest.DefaultUpdatedObjectInfo(nil, transform), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc,
		false, &metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	// The sample status.progress.history took, if this report made one
	// (stored times keep microseconds).
	p := stored.(batch.TrainingJob).JobStatus().Progress
	if p == nil || len(p.History) == 0 || !p.History[len(p.History)-1].ReportTime.Time.Equal(report.received.Truncate(time.Microsecond)) {
		return nil
	}
	if err := history.append(ctx, key, p.History[len(p.History)-1]); err != nil {
		// The report is stored; only the long history misses it.
		klog.ErrorS(err, "A progress report's metrics did not reach the job's progress history", "job", klog.KRef(key.namespace, key.name))
	}
	return nil
}

// reportedJobToWrite is a copy of the stored job a report goes into,
// unless the job was replaced by another of the same name or has finished.
func reportedJobToWrite(store *genericregistry.Store, stored runtime.Object, name string, uid types.UID) (batch.TrainingJob, error) {
	job := stored.DeepCopyObject().(batch.TrainingJob)
	if job.GetUID() != uid {
		return nil, apierrors.NewConflict(store.DefaultQualifiedResource, name,
			fmt.Errorf("the job was deleted and created again (uid %s, not %s)", job.GetUID(), uid))
	}
	if err := finishedConflict(store, name, job.JobStatus().Phase); err != nil {
		return nil, err
	}
	return job, nil
}

// jobKey names one job for the coalescer; the UID keeps a job created
// again under the same name apart from its predecessor.
type jobKey struct {
	namespace, name string
	uid             types.UID
}
