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

package kueueview

import (
	"cmp"
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	visibilityv1beta2 "sigs.k8s.io/kueue/apis/visibility/v1beta2"
)

// VisibilityGroupVersion is the version of Kueue's visibility API the view
// asks: Kueue v0.15 and later serve it beside v1beta1.
const VisibilityGroupVersion = "visibility.kueue.x-k8s.io/v1beta2"

// NotServed is the note of a cluster without Kueue's visibility API.
const NotServed = "Kueue's visibility API (" + VisibilityGroupVersion + ") is not served in this cluster"

// Visibility returns how to ask Kueue for a ClusterQueue's pending
// Workloads, or, when the API server does not serve the visibility API,
// nil and the note that says so. Discovery is not a question of rights:
// a user refused the API itself learns it per ClusterQueue.
func Visibility(ctx context.Context, disc discovery.DiscoveryInterface, client Client) (Pending, string) {
	if _, err := disc.ServerResourcesForGroupVersion(VisibilityGroupVersion); err != nil {
		return nil, NotServed
	}
	return func(clusterQueue string, localQueues []LocalQueue) ([]visibilityv1beta2.PendingWorkload, string, error) {
		summary, err := client.ClusterQueuePending(ctx, clusterQueue)
		if err == nil {
			return summary.Items, "", nil
		}
		if !apierrors.IsForbidden(err) || len(localQueues) == 0 {
			return nil, "", err
		}
		// Kueue lets a batch user read the queues of their LocalQueues
		// (localqueues/pendingworkloads), not the ClusterQueue's: their own
		// Workloads, each with its place in the whole ClusterQueue.
		var items []visibilityv1beta2.PendingWorkload
		for _, lq := range localQueues {
			summary, lqErr := client.LocalQueuePending(ctx, lq.Namespace, lq.Name)
			if lqErr != nil {
				return nil, "", err
			}
			items = append(items, summary.Items...)
		}
		slices.SortFunc(items, func(a, b visibilityv1beta2.PendingWorkload) int {
			return cmp.Compare(a.PositionInClusterQueue, b.PositionInClusterQueue)
		})
		return items, "from your LocalQueues only (you may not read the ClusterQueue's): positions count the Workloads not shown", nil
	}, ""
}

// Refusals are the lists the API refused, by what was listed.
type Refusals map[string]error

// Read lists the ClusterQueues, and the LocalQueues and Workloads of
// namespace ("" for all), and builds the snapshot. A list the API refuses
// is left out and returned among the refusals; the others are shown.
func Read(ctx context.Context, disc discovery.DiscoveryInterface, client Client, namespace string) (Snapshot, Refusals) {
	refused := Refusals{}
	var cqs []kueuev1beta2.ClusterQueue
	if list, err := client.ListClusterQueues(ctx, metav1.ListOptions{}); err != nil {
		refused["ClusterQueues"] = err
	} else {
		cqs = list.Items
	}
	var lqs []kueuev1beta2.LocalQueue
	if list, err := client.ListLocalQueues(ctx, namespace, metav1.ListOptions{}); err != nil {
		refused["LocalQueues"] = err
	} else {
		lqs = list.Items
	}
	var wls []kueuev1beta2.Workload
	if list, err := client.ListWorkloads(ctx, namespace, metav1.ListOptions{}); err != nil {
		refused["Workloads"] = err
	} else {
		wls = list.Items
	}
	pending, note := Visibility(ctx, disc, client)
	return Build(cqs, lqs, wls, pending, note), refused
}
