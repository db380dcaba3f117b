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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-helpers/nodedeclaredfeatures/features/restartallcontainers"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// featureRestartAllContainers is what a kubelet that restarts every
// container of a pod on a RestartAllContainers rule declares in its node's
// status.declaredFeatures. The scheduler places a pod that carries such a
// rule only on a node that declares it; on a cluster whose kubelets are
// older than 1.36, or on simulated nodes, no node does, and an in-place
// pod would stay Pending.
const featureRestartAllContainers = restartallcontainers.RestartAllContainersOnContainerExits

// nodeFeatures keeps, of every node, what decides whether a pod could run
// there with in-place restarts: its labels and taints (where the pod may be
// scheduled) and its declared features. Its cost is a node count of small
// objects, whatever the nodes' images, volumes and conditions.
type nodeFeatures struct {
	informer cache.SharedIndexInformer
}

// declaredFeatureIndex indexes the nodes by the features they declare, so
// that the nodes able to restart a pod in place are found without looking
// at every node.
const declaredFeatureIndex = "declared-feature"

func newNodeFeatures(client kubernetes.Interface) (*nodeFeatures, error) {
	inf := coreinformers.NewNodeInformer(client, 0, cache.Indexers{declaredFeatureIndex: func(obj any) ([]string, error) {
		if n, ok := obj.(*corev1.Node); ok {
			return n.Status.DeclaredFeatures, nil
		}
		return nil, nil
	}})
	if err := inf.SetTransform(trimNode); err != nil {
		return nil, err
	}
	return &nodeFeatures{informer: inf}, nil
}

// trimNode keeps what nodeFeatures reads.
func trimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion, Labels: n.Labels},
		Spec:       corev1.NodeSpec{Taints: n.Spec.Taints},
		Status:     corev1.NodeStatus{DeclaredFeatures: n.Status.DeclaredFeatures},
	}, nil
}

// inPlaceUnavailable says why a pod built to restart in place could not
// run anywhere: nodes it may be scheduled on exist (its node selector and
// required node affinity match them, its tolerations cover their NoSchedule
// and NoExecute taints), and none declares featureRestartAllContainers.
// It returns "" when one does, and when no node is a candidate at all: the
// pod waits for nodes either way, and the nodes that come may have it.
// The nodes that declare the feature are looked at first, so that a pod
// waiting for room on one of them, reconcile after reconcile, costs a look
// at those nodes only.
func (n *nodeFeatures) inPlaceUnavailable(logger klog.Logger, pod *corev1.Pod) string {
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	mayRunOn := func(node *corev1.Node) bool {
		if match, err := affinity.Match(node); err != nil || !match {
			return false
		}
		_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logger, node.Spec.Taints, pod.Spec.Tolerations, schedulingTaint, true)
		return !untolerated
	}
	capable, err := n.informer.GetIndexer().ByIndex(declaredFeatureIndex, featureRestartAllContainers)
	if err != nil {
		return ""
	}
	for _, obj := range capable {
		if node, ok := obj.(*corev1.Node); ok && mayRunOn(node) {
			return ""
		}
	}
	candidates := 0
	for _, obj := range n.informer.GetStore().List() {
		if node, ok := obj.(*corev1.Node); ok && mayRunOn(node) {
			candidates++
		}
	}
	if candidates == 0 {
		return ""
	}
	return fmt.Sprintf("none of the %d node(s) its pods may run on declares %s, which restarting a pod's containers in place needs",
		candidates, featureRestartAllContainers)
}

// schedulingTaint says whether a taint keeps a pod that does not tolerate
// it off the node.
func schedulingTaint(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}
