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
	"errors"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// Every replica pod is created with v1beta1.ReplicaOutcomeFinalizer, so it
// cannot disappear (pod GC, node deletion, kubectl delete) before the job's
// status holds what became of it. The controller takes the finalizer off:
//   - once the stored status records the pod's outcome: an entry with the
//     pod's UID and the phase Succeeded, Failed or Deleted (Deleted: it is
//     being replaced, paused or its run mode or topology changed);
//   - from every pod of a finished job, whose outcome no longer matters,
//     and from pods that belong to no replica of the job;
//   - from every pod of a job being deleted, or already gone (the pods are
//     then orphans the garbage collector is deleting).

// hasOutcomeFinalizer says whether a pod still holds its replica's outcome
// for the job's status (v1beta1.ReplicaOutcomeFinalizer).
func hasOutcomeFinalizer(pod *corev1.Pod) bool {
	return slices.Contains(pod.Finalizers, v1beta1.ReplicaOutcomeFinalizer)
}

// removeFinalizerPatch takes the finalizer off and leaves any others.
var removeFinalizerPatch = []byte(fmt.Sprintf(`{"metadata":{"$deleteFromPrimitiveList/finalizers":[%q]}}`,
	v1beta1.ReplicaOutcomeFinalizer))

// releaseParallelism bounds the finalizer patches a reconcile has in
// flight at once.
const releaseParallelism = 8

// releasePods takes the finalizer off the pods. The patches go out
// together: a finished job releases every pod at once, and made one after
// another they held an urgent worker for a round trip each while other
// jobs waited to be marked done (make bench-controller at 500 jobs: 2.3 s
// from a job's last pod exit to its Succeeded, p50).
func (c *Controller) releasePods(ctx context.Context, logger klog.Logger, pods []*corev1.Pod) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	slots := make(chan struct{}, releaseParallelism)
	for _, p := range pods {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			_, err := c.kubeClient.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType,
				removeFinalizerPatch, metav1.PatchOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				mu.Lock()
				errs = append(errs, fmt.Errorf("removing finalizer %s from pod %s: %w", v1beta1.ReplicaOutcomeFinalizer, p.Name, err))
				mu.Unlock()
				return
			}
			logger.V(4).Info("Removed the outcome finalizer", "pod", klog.KObj(p))
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// releaseAll takes the finalizer off every pod that carries the job's
// labels and is controlled by a job of that kind and name, or by nothing:
// for a job that is being deleted or is gone, no outcome is needed. uid,
// when set, keeps pods of another job of the same name.
func (c *Controller) releaseAll(ctx context.Context, logger klog.Logger, key jobKey, uid types.UID) error {
	objs, err := c.podIndexer.ByIndex(podJobIndex, podJobIndexKey(key.Namespace, key.Kind, key.Name))
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	var release []*corev1.Pod
	for _, obj := range objs {
		p, ok := obj.(*corev1.Pod)
		if !ok || !hasOutcomeFinalizer(p) {
			continue
		}
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil &&
			(ref.Kind != key.Kind || ref.Name != key.Name || (uid != "" && ref.UID != uid)) {
			continue
		}
		release = append(release, p)
	}
	return c.releasePods(ctx, logger, release)
}
