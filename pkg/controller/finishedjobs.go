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
	"context"
	"math"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// Finished jobs are not cached. A cluster keeps weeks of them for their
// history, and the controller has nothing to do for most: their pods are
// gone or kept as they are, their outcome is written. Caching them would make
// its memory grow with the history, so the job informers select unfinished
// jobs only (unfinishedJobs), and a job leaves the cache with the status
// write that finishes it. The little a finished job still needs is done from
// a fresh read (lookUpJob): the clean-up of its pods as their changes come
// in, and its deletion once ttlSecondsAfterFinished has passed, which a
// controller that starts anew finds by one paged list (queueExpiringJobs).

// unfinishedJobs is the field selector of the job informers.
var unfinishedJobs = fields.AndSelectors(
	fields.OneTermNotEqualSelector(v1beta1.FieldStatusPhase, string(v1beta1.JobSucceeded)),
	fields.OneTermNotEqualSelector(v1beta1.FieldStatusPhase, string(v1beta1.JobFailed)),
).String()

// lookUpJob returns the job to reconcile: the cached one, or, when the cache
// has none, the job as stored if it is finished. A stored job that is not
// finished is not yet in the cache, whose event will queue it; nil without
// an error means there is nothing to reconcile, NotFound that the job is
// gone.
func (c *Controller) lookUpJob(ctx context.Context, h *kindHandler, key jobKey) (v1beta1.TrainingJob, error) {
	job, err := h.get(key.Namespace, key.Name)
	if !apierrors.IsNotFound(err) {
		return job, err
	}
	stored, err := h.getFresh(ctx, key.Namespace, key.Name)
	if err != nil {
		return nil, err
	}
	if !stored.JobStatus().Phase.IsFinished() {
		return nil, nil
	}
	return stored, nil
}

// expiringJobsPage is how many finished jobs queueExpiringJobs reads at a
// time: its memory is one page, whatever the history.
const expiringJobsPage = 500

// queueExpiringJobs queues every finished job that has a TTL, at its expiry.
// A controller that was not running when a job finished, or that restarted
// since, learns of the job's TTL only this way: finished jobs are not in its
// cache.
func (c *Controller) queueExpiringJobs(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	queued := 0
	for kind, h := range c.kinds {
		for _, phase := range []v1beta1.JobPhase{v1beta1.JobSucceeded, v1beta1.JobFailed} {
			opts := metav1.ListOptions{
				FieldSelector: fields.OneTermEqualSelector(v1beta1.FieldStatusPhase, string(phase)).String(),
				Limit:         expiringJobsPage,
			}
			for {
				jobs, next, err := h.listPage(ctx, opts)
				if err != nil {
					return err
				}
				for _, job := range jobs {
					if !job.JobStatus().Phase.IsFinished() {
						continue // not what was asked for
					}
					if expiry, ok := jobExpiry(job); ok {
						c.queue.AddAfter(jobKey{Kind: kind, Namespace: job.GetNamespace(), Name: job.GetName()},
							max(expiry.Sub(c.clock.Now()), 0))
						queued++
					}
				}
				if next == "" {
					break
				}
				opts.Continue = next
			}
		}
	}
	logger.Info("Queued the finished jobs that have a TTL", "jobs", queued)
	return nil
}

// queueExpiringJobsUntilDone runs queueExpiringJobs until it succeeds once,
// backing off between failed tries.
func (c *Controller) queueExpiringJobsUntilDone(ctx context.Context) {
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Cap: time.Minute, Steps: math.MaxInt32}
	_ = wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		if err := c.queueExpiringJobs(ctx); err != nil {
			klog.FromContext(ctx).Error(err, "Listing the finished jobs that have a TTL; trying again")
			return false, nil
		}
		return true, nil
	})
}

// jobExpiry is when a finished job is deleted under its TTL.
func jobExpiry(job v1beta1.TrainingJob) (time.Time, bool) {
	done := job.GetCreationTimestamp().Time
	if t := job.JobStatus().CompletionTime; t != nil {
		done = t.Time
	}
	return ttlExpiry(job.CommonSpec().RunPolicy.TTLSecondsAfterFinished, done)
}
