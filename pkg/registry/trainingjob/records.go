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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/apis/batch"
)

// JobRecorder keeps a record of each deleted job (trainingjobrecord.Keeper).
type JobRecorder interface {
	// Keep writes the record of a job just deleted, with its kind and its
	// progress history.
	Keep(ctx context.Context, job batch.TrainingJob, kind string, history []batch.ProgressSample, thinned int64)
}

// afterDelete is the job store's AfterDelete: the job's record is written,
// with its progress history, before the history goes with the job. The hook
// runs once the job is gone from storage, so a job that is only marked for
// deletion (finalizers pending) gets its record when it is really removed.
// It has no request context, so it bounds its own time.
func afterDelete(history *progressHistory, records JobRecorder, kind string) func(runtime.Object, *metav1.DeleteOptions) {
	return func(obj runtime.Object, options *metav1.DeleteOptions) {
		job, ok := obj.(batch.TrainingJob)
		// The store runs the hook for a dry run too, which must leave the
		// history and write no record.
		if !ok || dryRun(options) {
			return
		}
		if records != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			key := jobKey{namespace: job.GetNamespace(), name: job.GetName(), uid: job.GetUID()}
			samples, thinned, err := history.read(ctx, key)
			if err != nil {
				klog.ErrorS(err, "Reading a deleted job's progress history for its record failed; the record has none",
					"job", klog.KObj(job))
			}
			records.Keep(ctx, job, kind, samples, thinned)
			cancel()
		}
		history.removeWithJob(obj, options)
	}
}

func dryRun(options *metav1.DeleteOptions) bool { return options != nil && len(options.DryRun) > 0 }
