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
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/apis/batch"
)

// EventLister reads the events of one object.
type EventLister interface {
	// Events are the events whose involved object has the UID, in the
	// namespace.
	Events(ctx context.Context, namespace string, uid types.UID) ([]corev1.Event, error)
}

// Bounds are how many records a namespace keeps and for how long.
type Bounds struct {
	// PerNamespace is the most records a namespace keeps: past it, the
	// records of the jobs deleted longest ago go. Zero keeps any number.
	PerNamespace int
	// Retention is how long after its job's deletion a record is kept. Zero
	// keeps it until it is deleted, or dropped past PerNamespace.
	Retention time.Duration
}

// Defaults of the apiserver's --job-records-per-namespace and
// --job-record-retention.
const (
	DefaultPerNamespace = 1000
	DefaultRetention    = 30 * 24 * time.Hour
)

// Keeper writes the records of deleted jobs and holds the records to their
// bounds.
type Keeper struct {
	store  *genericregistry.Store
	events EventLister
	encode func(batch.TrainingJob) ([]byte, error)
	bounds Bounds
	now    func() time.Time
}

// NewKeeper keeps records in store. encode writes a job as the record's
// job field holds it (its served version, as JSON); events, when not nil,
// gives each record the job's last events.
func NewKeeper(store *genericregistry.Store, encode func(batch.TrainingJob) ([]byte, error), events EventLister, bounds Bounds) *Keeper {
	return &Keeper{store: store, events: events, encode: encode, bounds: bounds, now: time.Now}
}

// Keep writes the record of a job just deleted. A failure is logged: the
// job is gone whatever happens to its record.
func (k *Keeper) Keep(ctx context.Context, job batch.TrainingJob, kind string, history []batch.ProgressSample, thinned int64) {
	logger := klog.FromContext(ctx).WithValues("job", klog.KObj(job))
	var events []corev1.Event
	if k.events != nil {
		var err error
		if events, err = k.events.Events(ctx, job.GetNamespace(), job.GetUID()); err != nil {
			logger.Error(err, "Reading a deleted job's events for its record failed; the record has none")
		}
	}
	record, err := build(deletedJob{job: job, kind: kind, encode: k.encode, samples: history, thinned: thinned,
		events: events, deleted: k.now(), maxBytes: batch.MaxTrainingJobRecordBytes})
	if err != nil {
		logger.Error(err, "Building a deleted job's record failed; none is kept")
		return
	}
	ctx = genericapirequest.WithNamespace(ctx, job.GetNamespace())
	_, err = k.store.Create(ctx, record, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		// The same job deleted twice over: its first deletion wrote it.
		return
	case err != nil:
		logger.Error(err, "Writing a deleted job's record failed; none is kept")
		return
	}
	if err := k.trim(ctx, job.GetNamespace()); err != nil {
		logger.Error(err, "Dropping a namespace's oldest job records failed", "namespace", job.GetNamespace())
	}
}

// trim drops a namespace's records past Bounds.PerNamespace, those of the
// jobs deleted longest ago first.
func (k *Keeper) trim(ctx context.Context, namespace string) error {
	if k.bounds.PerNamespace <= 0 {
		return nil
	}
	records, err := k.list(genericapirequest.WithNamespace(ctx, namespace))
	if err != nil || len(records) <= k.bounds.PerNamespace {
		return err
	}
	// A record is written once, so the order of their resourceVersions is
	// the order of the deletions, finer than their times' seconds.
	slices.SortFunc(records, func(a, b *batch.TrainingJobRecord) int { return cmp.Compare(writeOrder(a), writeOrder(b)) })
	return k.remove(ctx, records[:len(records)-k.bounds.PerNamespace])
}

// expire drops every record kept longer than Bounds.Retention.
func (k *Keeper) expire(ctx context.Context) error {
	if k.bounds.Retention <= 0 {
		return nil
	}
	records, err := k.list(genericapirequest.WithNamespace(ctx, metav1.NamespaceAll))
	if err != nil {
		return err
	}
	oldest := k.now().Add(-k.bounds.Retention)
	var expired []*batch.TrainingJobRecord
	for _, r := range records {
		if r.DeletionTime.Time.Before(oldest) {
			expired = append(expired, r)
		}
	}
	return k.remove(ctx, expired)
}

// Run drops expired records until ctx ends, checking a tenth of the
// retention apart (at least a second, at most ten minutes).
func (k *Keeper) Run(ctx context.Context) {
	if k.bounds.Retention <= 0 {
		return
	}
	every := min(max(k.bounds.Retention/10, time.Second), 10*time.Minute)
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := k.expire(ctx); err != nil {
			klog.FromContext(ctx).Error(err, "Dropping expired job records failed")
		}
	}, every)
}

// writeOrder is the resourceVersion a record was written at.
func writeOrder(r *batch.TrainingJobRecord) uint64 {
	rv, err := storage.APIObjectVersioner{}.ObjectResourceVersion(r)
	if err != nil {
		return 0
	}
	return rv
}

// list reads the records of the context's namespace (all, for none), as
// they are now: a record just written is among them.
func (k *Keeper) list(ctx context.Context) ([]*batch.TrainingJobRecord, error) {
	obj, err := k.store.List(ctx, &metainternalversion.ListOptions{})
	if err != nil {
		return nil, err
	}
	list := obj.(*batch.TrainingJobRecordList)
	out := make([]*batch.TrainingJobRecord, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// remove deletes records, each only if it is still the one read.
func (k *Keeper) remove(ctx context.Context, records []*batch.TrainingJobRecord) error {
	var errs []error
	for _, r := range records {
		uid := r.UID
		ctx := genericapirequest.WithNamespace(ctx, r.Namespace)
		_, _, err := k.store.Delete(ctx, r.Name, rest.ValidateAllObjectFunc, &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
