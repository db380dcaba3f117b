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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// Kueue's waitForPodsReady (on by default from v0.19) evicts an admitted
// Workload whose PodsReady condition is not True within its timeout, counted
// from the admission while the reason is WaitForStart, and from the
// condition's last transition while it is WaitForRecovery (recoveryTimeout).
// A Workload without the condition counts as not ready, so an integration
// that never writes it has every job evicted once the timeout passes.
//
// The controller's rule for "ready": every pod the admission allows (one
// per replica, or an elastic job's admitted count) is Ready or its replica
// has succeeded. That is what Kueue's own Job and JobSet integrations
// count. With the InOrder start-up order, later replica types start only
// once the leaders are Ready, so the job is ready when the last of them
// is: the timeout covers the whole ordered start.

// PodsReadyCondition is the Workload's next PodsReady condition, from the
// current one (nil when absent) and whether the pods are ready now. The
// reasons are jobframework's: Started the first time the pods are all
// ready, WaitForRecovery once a ready job lost a pod (Kueue then allows
// recoveryTimeout), Recovered when it is whole again, WaitForStart before
// the first start.
func PodsReadyCondition(current *metav1.Condition, ready bool) metav1.Condition {
	recovering := current != nil &&
		(current.Status == metav1.ConditionTrue || current.Reason == kueuev1beta2.WorkloadWaitForRecovery)
	switch {
	case ready && current != nil &&
		(current.Reason == kueuev1beta2.WorkloadWaitForRecovery || current.Reason == kueuev1beta2.WorkloadRecovered):
		return podsReady(metav1.ConditionTrue, kueuev1beta2.WorkloadRecovered, "every pod of the job is ready again")
	case ready:
		return podsReady(metav1.ConditionTrue, kueuev1beta2.WorkloadStarted, "every pod of the job is ready or has succeeded")
	case recovering:
		return podsReady(metav1.ConditionFalse, kueuev1beta2.WorkloadWaitForRecovery,
			"a pod of the job is gone or not ready; waiting for its replacement")
	default:
		return podsReady(metav1.ConditionFalse, kueuev1beta2.WorkloadWaitForStart, "not every pod of the job is ready yet")
	}
}

func podsReady(status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: kueuev1beta2.WorkloadPodsReady, Status: status, Reason: reason, Message: message}
}
