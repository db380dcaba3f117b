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
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
)

// node is a node with labels, taints and the declared features given.
func node(name string, labels map[string]string, taints []corev1.Taint, features ...string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status:     corev1.NodeStatus{DeclaredFeatures: features},
	}
}

// restartsInPlace is a node whose kubelet restarts containers in place.
func restartsInPlace(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return node(name, labels, taints, "InPlacePodVerticalScaling", featureRestartAllContainers)
}

func TestInPlaceUnavailable(t *testing.T) {
	simulated := map[string]string{"type": "kwok"}
	real := map[string]string{"type": "real"}
	realTaint := corev1.Taint{Key: "real", Value: "true", Effect: corev1.TaintEffectNoSchedule}
	onReal := corev1.Toleration{Key: "real", Operator: corev1.TolerationOpExists}
	for name, tc := range map[string]struct {
		nodes       []*corev1.Node
		pod         corev1.PodSpec
		unavailable bool
	}{
		"no node at all": {},
		"every node restarts in place": {
			nodes: []*corev1.Node{restartsInPlace("a", nil), restartsInPlace("b", nil)},
		},
		"no node declares the feature": {
			nodes:       []*corev1.Node{node("a", nil, nil), node("b", nil, nil, "InPlacePodVerticalScaling")},
			unavailable: true,
		},
		"one node of many does": {
			nodes: []*corev1.Node{node("a", nil, nil), restartsInPlace("b", nil), node("c", nil, nil)},
		},
		"the node that does is not selected": {
			nodes:       []*corev1.Node{node("sim", simulated, nil), restartsInPlace("real", real)},
			pod:         corev1.PodSpec{NodeSelector: simulated},
			unavailable: true,
		},
		"the node that does is selected": {
			nodes: []*corev1.Node{node("sim", simulated, nil), restartsInPlace("real", real)},
			pod:   corev1.PodSpec{NodeSelector: real},
		},
		"required node affinity leaves it out": {
			nodes: []*corev1.Node{node("sim", simulated, nil), restartsInPlace("real", real)},
			pod: corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "type", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"real"}}},
				}}},
			}}},
			unavailable: true,
		},
		"the node that does is tainted": {
			nodes:       []*corev1.Node{node("sim", simulated, nil), restartsInPlace("real", real, realTaint)},
			unavailable: true,
		},
		"the pod tolerates the taint": {
			nodes: []*corev1.Node{node("sim", simulated, nil), restartsInPlace("real", real, realTaint)},
			pod:   corev1.PodSpec{Tolerations: []corev1.Toleration{onReal}},
		},
		"a taint that only prefers is no bar": {
			nodes: []*corev1.Node{node("sim", simulated, nil),
				restartsInPlace("real", real, corev1.Taint{Key: "real", Effect: corev1.TaintEffectPreferNoSchedule})},
		},
		"no candidate: every node is tainted": {
			nodes: []*corev1.Node{node("sim", simulated, []corev1.Taint{realTaint})},
		},
	} {
		t.Run(name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			nodes, err := newNodeFeatures(fake.NewClientset())
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range tc.nodes {
				if err := nodes.informer.GetStore().Add(n); err != nil {
					t.Fatal(err)
				}
			}
			why := nodes.inPlaceUnavailable(logger, &corev1.Pod{Spec: tc.pod})
			if (why != "") != tc.unavailable {
				t.Fatalf("inPlaceUnavailable = %q, want unavailable %v", why, tc.unavailable)
			}
			if tc.unavailable && !strings.Contains(why, featureRestartAllContainers) {
				t.Errorf("%q does not name the feature the nodes lack", why)
			}
		})
	}
}

// TestTrimNode: the cache keeps what decides where a pod may run with
// in-place restarts, and drops the rest of a node.
func TestTrimNode(t *testing.T) {
	n := restartsInPlace("a", map[string]string{"type": "real"}, corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoSchedule})
	n.ResourceVersion = "7"
	n.Annotations = map[string]string{"big": strings.Repeat("x", 1000)}
	n.Status.Images = []corev1.ContainerImage{{Names: []string{"image"}, SizeBytes: 1}}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	obj, err := trimNode(n)
	if err != nil {
		t.Fatal(err)
	}
	got := obj.(*corev1.Node)
	if got.Name != "a" || got.ResourceVersion != "7" || got.Labels["type"] != "real" || len(got.Spec.Taints) != 1 ||
		len(got.Status.DeclaredFeatures) != 2 {
		t.Errorf("trimmed node lost what the controller reads: %+v", got)
	}
	if got.Annotations != nil || got.Status.Images != nil || got.Status.Conditions != nil {
		t.Errorf("trimmed node kept what the controller does not read: %+v", got)
	}
}
