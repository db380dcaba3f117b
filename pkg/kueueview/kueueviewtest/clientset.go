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

// Package kueueviewtest serves kueueview.Client from Kueue's generated
// clientset, for tests that hold their queues in its fake.
package kueueviewtest

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/watchlist"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	visibilityv1beta2 "sigs.k8s.io/kueue/apis/visibility/v1beta2"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"
)

// Clientset is a kueueview.Client over a generated clientset. (It does not
// import kueueview, so that kueueview's own tests may use it.)
type Clientset struct {
	kueueclient.Interface
}

// IsWatchListSemanticsUnSupported passes on what the clientset says of
// streamed lists: the fake one serves none, and an informer that waited
// for one would never sync.
func (c Clientset) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(c.Interface)
}

func (c Clientset) ListClusterQueues(ctx context.Context, opts metav1.ListOptions) (*kueuev1beta2.ClusterQueueList, error) {
	return c.KueueV1beta2().ClusterQueues().List(ctx, opts)
}

func (c Clientset) WatchClusterQueues(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return c.KueueV1beta2().ClusterQueues().Watch(ctx, opts)
}

func (c Clientset) ListLocalQueues(ctx context.Context, namespace string, opts metav1.ListOptions) (*kueuev1beta2.LocalQueueList, error) {
	return c.KueueV1beta2().LocalQueues(namespace).List(ctx, opts)
}

func (c Clientset) WatchLocalQueues(ctx context.Context, namespace string, opts metav1.ListOptions) (watch.Interface, error) {
	return c.KueueV1beta2().LocalQueues(namespace).Watch(ctx, opts)
}

func (c Clientset) ListWorkloads(ctx context.Context, namespace string, opts metav1.ListOptions) (*kueuev1beta2.WorkloadList, error) {
	return c.KueueV1beta2().Workloads(namespace).List(ctx, opts)
}

func (c Clientset) WatchWorkloads(ctx context.Context, namespace string, opts metav1.ListOptions) (watch.Interface, error) {
	return c.KueueV1beta2().Workloads(namespace).Watch(ctx, opts)
}

func (c Clientset) ClusterQueuePending(ctx context.Context, name string) (*visibilityv1beta2.PendingWorkloadsSummary, error) {
	return c.VisibilityV1beta2().ClusterQueues().GetPendingWorkloadsSummary(ctx, name, metav1.GetOptions{})
}

func (c Clientset) LocalQueuePending(ctx context.Context, namespace, name string) (*visibilityv1beta2.PendingWorkloadsSummary, error) {
	return c.VisibilityV1beta2().LocalQueues(namespace).GetPendingWorkloadsSummary(ctx, name, metav1.GetOptions{})
}
