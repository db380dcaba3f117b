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
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// annotatePods merge-patches annotations onto pods (a nil value removes
// one) and returns how many it patched: how the controller talks to a
// running pod (startup gates, checkpoint requests, resume points). A pod
// gone meanwhile needs nothing.
func annotatePods(ctx context.Context, pods corev1client.PodInterface, logger klog.Logger, targets []*corev1.Pod,
	annotations map[string]any, what string) (int, error) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return 0, err
	}
	patched := 0
	var errs []error
	for _, p := range targets {
		if _, err := pods.Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("%s of pod %s: %w", what, p.Name, err))
			}
			continue
		}
		patched++
		logger.V(2).Info("Annotated pod", "pod", klog.KObj(p), "what", what)
	}
	return patched, errors.Join(errs...)
}

// askForCheckpoint puts a stop's checkpoint request, as the job's
// status.checkpoint records it, on the pods asked, after that status is
// stored, and takes a called-off request off the pods that keep running
// (unasks).
func askForCheckpoint(ctx context.Context, pods corev1client.PodInterface, logger klog.Logger, checkpoint *v1beta1.CheckpointStatus,
	asks, unasks []*corev1.Pod) error {
	var errs []error
	if checkpoint != nil && checkpoint.RequestTime != nil && len(asks) > 0 {
		value := checkpoint.RequestTime.Format(metav1.RFC3339Micro)
		_, err := annotatePods(ctx, pods, logger, asks, map[string]any{v1beta1.AnnotationCheckpointRequest: value}, "asking for a checkpoint")
		errs = append(errs, err)
		logger.V(2).Info("Asked for a checkpoint", "pods", len(asks), "reason", checkpoint.RequestReason)
	}
	if len(unasks) > 0 {
		_, err := annotatePods(ctx, pods, logger, unasks, map[string]any{v1beta1.AnnotationCheckpointRequest: nil}, "calling off a checkpoint request")
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// updateResumeAnnotations brings the lagging pods' resume annotations up to
// the job's latest checkpoint.
func updateResumeAnnotations(ctx context.Context, pods corev1client.PodInterface, logger klog.Logger,
	checkpoint *v1beta1.CheckpointStatus, lagging []*corev1.Pod) error {
	if len(lagging) == 0 {
		return nil
	}
	annotations := map[string]any{}
	for k, v := range podbuilder.ResumeAnnotations(checkpoint) {
		annotations[k] = v
	}
	_, err := annotatePods(ctx, pods, logger, lagging, annotations, "updating the resume point")
	return err
}
