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
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// Nodes that keep failing are left out (status.suspectNodes): a replica
// that fails for a reason that blames its node makes the node suspect, and
// the job's pods created after that avoid it (podbuilder.AvoidNodes). The
// controller changes only its own job: it never cordons or taints a node,
// and other jobs go on using it. A failed preflight check replaces the
// replica on another node, counted against backoffLimit only the first
// time a node fails it.

// ReasonNodeSuspect is the event of a node the job's next pods avoid.
const ReasonNodeSuspect = "NodeSuspect"

// The pod and condition reasons that blame a node: the kubelet's eviction,
// a device the kubelet could not allocate at admission, and the deletions
// of a pod whose node is gone (the taint manager's and the pod GC's).
const (
	podReasonUnexpectedAdmissionError = "UnexpectedAdmissionError"
	disruptionDeletionByTaintManager  = "DeletionByTaintManager"
	disruptionDeletionByPodGC         = "DeletionByPodGC"
)

// nodeBlame says whether a failed pod's end blames its node, and how; empty
// when it blames the program, or the pod never had a node.
func nodeBlame(a podbuilder.Adapter, spec *v1beta1.TrainingJobSpec, p *corev1.Pod) (reason, message string) {
	if p == nil || p.Spec.NodeName == "" {
		return "", ""
	}
	if t := preflightFailure(p); t != nil {
		return v1beta1.SuspectNodePreflightFailed, fmt.Sprintf("the preflight check of %s exited with %d", p.Name, t.ExitCode)
	}
	switch p.Status.Reason {
	case podReasonEvicted:
		return v1beta1.SuspectNodeEvicted, fmt.Sprintf("the kubelet evicted %s: %s", p.Name, batch.CutBytes(p.Status.Message, 256))
	case podReasonUnexpectedAdmissionError:
		return v1beta1.SuspectNodeDeviceFailure, fmt.Sprintf("%s failed at admission: %s", p.Name, batch.CutBytes(p.Status.Message, 256))
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue &&
			(c.Reason == disruptionDeletionByTaintManager || c.Reason == disruptionDeletionByPodGC) {
			return v1beta1.SuspectNodeLost, fmt.Sprintf("%s was deleted with its node unreachable or gone (%s)", p.Name, c.Reason)
		}
	}
	if t := failedTermination(a, p); t != nil && slices.Contains(spec.RunPolicy.NodeFailureExitCodes, t.ExitCode) {
		return v1beta1.SuspectNodeFailureExitCode, fmt.Sprintf("%s exited with %d, one of runPolicy.nodeFailureExitCodes", p.Name, t.ExitCode)
	}
	return "", ""
}

// preflightFailure is how a pod's preflight check failed, or nil when it
// passed, did not run or is still running.
func preflightFailure(p *corev1.Pod) *corev1.ContainerStateTerminated {
	for _, cs := range p.Status.InitContainerStatuses {
		if t := cs.State.Terminated; cs.Name == batch.PreflightContainerName && t != nil && t.ExitCode != 0 {
			return t
		}
	}
	return nil
}

// addSuspectNode adds a node to a job's suspect nodes unless it is there
// already, dropping the oldest entries beyond MaxSuspectNodes; added says
// whether it was new.
func addSuspectNode(nodes []v1beta1.SuspectNode, node v1beta1.SuspectNode) (_ []v1beta1.SuspectNode, added bool) {
	if slices.ContainsFunc(nodes, func(n v1beta1.SuspectNode) bool { return n.Name == node.Name }) {
		return nodes, false
	}
	nodes = append(nodes, node)
	if over := len(nodes) - batch.MaxSuspectNodes; over > 0 {
		nodes = slices.Clone(nodes[over:])
	}
	return nodes, true
}
