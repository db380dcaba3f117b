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
	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// podReasonEvicted is the status.reason the kubelet gives a pod it evicted.
const podReasonEvicted = "Evicted"

// isDisrupted says whether a pod was lost to something other than its own
// program: an eviction, a preemption, a node going away. Such a pod is
// replaced whatever the restart policy, without using up the backoff.
func isDisrupted(pod *corev1.Pod) bool {
	if pod.Status.Reason == podReasonEvicted {
		return true
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// exitCode is the exit code of a failed pod: that of the training container
// when it terminated, else the first non-zero code of any container. ok is
// false when no container reported one (the pod failed before or around its
// containers, e.g. at admission).
func exitCode(a podbuilder.Adapter, pod *corev1.Pod) (code int32, ok bool) {
	if t := failedTermination(a, pod); t != nil {
		return t.ExitCode, true
	}
	return 0, false
}

// failedTermination is how a failed pod's deciding container ended: the
// training container's termination, else the first non-zero one, else nil.
func failedTermination(a podbuilder.Adapter, pod *corev1.Pod) *corev1.ContainerStateTerminated {
	training := ""
	if i := podbuilder.TrainingContainer(a, &pod.Spec); i >= 0 {
		training = pod.Spec.Containers[i].Name
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == training && cs.State.Terminated != nil {
			return cs.State.Terminated
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return t
		}
	}
	return nil
}

// restartsOnFailure says whether a replica's failed pod is replaced. With
// ExitCode, a pod that failed without any exit code is treated as retryable:
// nothing the program did decided its fate.
func restartsOnFailure(policy v1beta1.RestartPolicy, code int32, known bool) bool {
	switch policy {
	case v1beta1.RestartPolicyOnFailure, v1beta1.RestartPolicyAlways:
		return true
	case v1beta1.RestartPolicyExitCode:
		return !known || v1beta1.RetryableExitCodes[code]
	default: // Never, and anything unknown
		return false
	}
}

// restartsOnSuccess says whether a replica's succeeded pod is replaced.
func restartsOnSuccess(policy v1beta1.RestartPolicy) bool {
	return policy == v1beta1.RestartPolicyAlways
}

func backoffLimit(spec *v1beta1.TrainingJobSpec) int32 {
	if spec.RunPolicy.BackoffLimit == nil {
		return v1beta1.DefaultBackoffLimit
	}
	return max(*spec.RunPolicy.BackoffLimit, 0)
}

// cleanUpPolicy is the canonical clean-up policy, Unfinished by default.
func cleanUpPolicy(spec *v1beta1.TrainingJobSpec) v1beta1.CleanUpPolicy {
	switch spec.RunPolicy.CleanUpPolicy {
	case v1beta1.CleanUpPolicyAll, "all":
		return v1beta1.CleanUpPolicyAll
	case v1beta1.CleanUpPolicyNone, "none":
		return v1beta1.CleanUpPolicyNone
	default:
		return v1beta1.CleanUpPolicyUnfinished
	}
}

func pauseEnabled(spec *v1beta1.TrainingJobSpec) bool { return v1beta1.PauseEnabled(spec) }
