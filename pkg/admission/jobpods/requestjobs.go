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

package jobpods

import (
	"sync"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// requestJobsKey is where the plugins keep a request's requestJobs among
// its admission attributes' per-request values.
//
// The attributes' reinvocation context is the one store the admission
// chain gives a request that lives as long as the request and that every
// plugin sees, so both plugins of this package find there what the other
// worked out: a create's job converted and previewed once, not twice.
const requestJobsKey = "batch.tensorstack.dev/jobpods"

// requestJobs is what this package's plugins work out of one write of a
// job: the job and, on an update, the stored job, in the served version,
// and the pods the controller would build for each, each computed at most
// once. The previews are shared: callers must not change them.
type requestJobs struct {
	job, old v1beta1.TrainingJob

	runOnce, oldRunOnce sync.Once
	run, oldRun         previewResult
}

type previewResult struct {
	previews []podbuilder.PodPreview
	err      error
}

// asRun is podbuilder.Preview of the job.
func (r *requestJobs) asRun() ([]podbuilder.PodPreview, error) {
	r.runOnce.Do(func() { r.run.previews, r.run.err = podbuilder.Preview(r.job) })
	return r.run.previews, r.run.err
}

// oldAsRun is podbuilder.Preview of the stored job; only on an update.
func (r *requestJobs) oldAsRun() ([]podbuilder.PodPreview, error) {
	r.oldRunOnce.Do(func() { r.oldRun.previews, r.oldRun.err = podbuilder.Preview(r.old) })
	return r.oldRun.previews, r.oldRun.err
}
