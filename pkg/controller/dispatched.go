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
	"fmt"

	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/kueue"
	"tensorstack.dev/training/pkg/controller/owner"
	"tensorstack.dev/training/pkg/podbuilder"
)

// syncDispatched is the reconcile of a job that names MultiKueue in
// spec.managedBy, in the manager cluster: MultiKueue runs it in a worker
// cluster and copies the worker's status onto it. Kueue still needs its
// Workload here, made as for any queued job, which MultiKueue dispatches;
// that Workload is all the controller keeps. No pod, no Service, no status
// write: those are the worker's. A job that names no queue, or a controller
// that cannot queue with Kueue now, leaves the job alone: it runs nowhere
// until MultiKueue dispatches it.
func (c *Controller) syncDispatched(ctx context.Context, h *kindHandler, cached v1beta1.TrainingJob, logger klog.Logger) error {
	q, _ := c.queueing.Current()
	if q == nil || kueue.QueueName(cached) == "" {
		logger.V(4).Info("Leaving the job to MultiKueue; no Workload to keep", "queue", kueue.QueueName(cached))
		return nil
	}
	job, ok := h.statusCopy(cached)
	if !ok {
		return fmt.Errorf("%T is not a %s", cached, h.Kind())
	}
	// Events need the kind, which objects from the cache may lack.
	job.GetObjectKind().SetGroupVersionKind(h.gvk)
	jobOwner := &owner.Job{Object: job, Kind: h.Kind(), Recorder: c.recorder, Logger: logger}
	st, err := q.Read(jobOwner)
	if err != nil {
		return err
	}
	topo := podbuilder.NewTopology(h.Adapter, job, c.clusterDomain)
	status := job.JobStatus()
	want, err := queueWant(job, topo, kueue.Want{
		QueueName: kueue.QueueName(job),
		// No pod ever runs here: an evicted Workload's quota may go back
		// at once (MultiKueue removes the worker's copy).
		Stopped:    true,
		PodsReady:  kueue.DispatchedPodsReady(status, topo.Total),
		Phase:      status.Phase,
		AvoidNodes: status.SuspectNodeNames(),
		Now:        c.clock.Now(),
	})
	if err != nil {
		return err
	}
	return q.Sync(ctx, jobOwner, st, want)
}
