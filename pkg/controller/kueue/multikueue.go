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

package kueue

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/owner"
)

// Kueue's MultiKueue runs a job in a worker cluster. In the manager cluster
// the job names MultiKueue in spec.managedBy; the controller there keeps its
// Workload (which MultiKueue dispatches) and nothing else, and reports the
// Workload's PodsReady from the status MultiKueue copies back
// (DispatchedPodsReady). In the worker cluster MultiKueue first creates a
// copy of that Workload, then a copy of the job naming it: the controller
// there takes that prebuilt Workload instead of creating one, and runs the
// job as any other queued job.

// PrebuiltWorkloadKey is the annotation (Kueue v0.18 and later) or label
// (earlier) with which MultiKueue names the Workload it made for a job.
const PrebuiltWorkloadKey = "kueue.x-k8s.io/prebuilt-workload-name"

// PrebuiltWorkload is the name of the Workload made for the job
// beforehand, or "".
func PrebuiltWorkload(job metav1.Object) string {
	if name := job.GetAnnotations()[PrebuiltWorkloadKey]; name != "" {
		return name
	}
	return job.GetLabels()[PrebuiltWorkloadKey]
}

// workloadNameOf is the name of the job's Workload: the prebuilt one, else
// the one the controller creates.
func workloadNameOf(job *owner.Job) string {
	if name := PrebuiltWorkload(job.Object); name != "" {
		return name
	}
	return WorkloadName(job.Kind, job.Object.GetName())
}

// adopt makes the job the controller of its prebuilt Workload, as
// jobframework does, so that the garbage collector deletes the Workload
// with the job and the Workload's changes reach the job. The
// resourceVersion keeps it from taking a Workload that changed meanwhile.
func (q *Queue) adopt(ctx context.Context, job *owner.Job, wl *kueuev1beta2.Workload) error {
	refs := append(wl.DeepCopy().OwnerReferences, job.ControllerRef())
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"ownerReferences": refs, "resourceVersion": wl.ResourceVersion},
	})
	if err != nil {
		return err
	}
	if _, err := q.client.KueueV1beta2().Workloads(wl.Namespace).Patch(ctx, wl.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("adopting the prebuilt Workload %s: %w", wl.Name, err)
	}
	job.Logger.V(2).Info("Adopted the prebuilt Workload", "workload", klog.KObj(wl))
	job.Normalf(ReasonAdopted, "Took Workload %s, prebuilt for the job by MultiKueue", wl.Name)
	return nil
}

// ReasonAdopted is the event of a job that took its prebuilt Workload.
const ReasonAdopted = "AdoptedWorkload"

// DispatchedPodsReady says, for a job MultiKueue runs in a worker cluster,
// whether the status copied back from the worker shows every replica
// running or succeeded: the manager's Workload needs PodsReady too, or
// Kueue's waitForPodsReady evicts it. wantReplicas is the job's replica
// count.
func DispatchedPodsReady(status *v1beta1.TrainingJobStatus, wantReplicas int32) bool {
	a := status.Aggregate
	return wantReplicas > 0 && a.Running+a.Succeeded >= wantReplicas
}
