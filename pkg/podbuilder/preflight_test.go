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

package podbuilder

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// TestAvoidNodes: every alternative of the template's required node
// affinity gets the condition, and a pod without one gets a term of its
// own; nothing changes without suspects.
func TestAvoidNodes(t *testing.T) {
	notOn := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"n1", "n2"}}
	zoneA := corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}
	zoneB := corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}}
	withTerms := func(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
		}}
	}
	cases := map[string]struct {
		affinity *corev1.Affinity
		nodes    []string
		want     *corev1.Affinity
	}{
		"no suspects": {nil, nil, nil},
		"no affinity": {nil, []string{"n1", "n2"}, withTerms(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{notOn}})},
		"two alternatives": {
			withTerms(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{zoneA}},
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{zoneB}}),
			[]string{"n1", "n2"},
			withTerms(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{zoneA}, MatchFields: []corev1.NodeSelectorRequirement{notOn}},
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{zoneB}, MatchFields: []corev1.NodeSelectorRequirement{notOn}}),
		},
		"only a pod affinity": {
			&corev1.Affinity{PodAffinity: &corev1.PodAffinity{}}, []string{"n1", "n2"},
			&corev1.Affinity{PodAffinity: &corev1.PodAffinity{}, NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{notOn}}}},
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Affinity: tc.affinity}}
			avoidNodes(pod, tc.nodes)
			if !equality.Semantic.DeepEqual(pod.Spec.Affinity, tc.want) {
				t.Errorf("affinity %+v, want %+v", pod.Spec.Affinity, tc.want)
			}
		})
	}
}

// TestAddPreflight: the check runs first, with the training container's
// image (unless it names one), resources and the node's name.
func TestAddPreflight(t *testing.T) {
	training := &corev1.Container{Name: "pytorch", Image: "train:v1", ImagePullPolicy: corev1.PullNever,
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}
	for name, tc := range map[string]struct {
		check     v1beta1.Preflight
		wantImage string
	}{
		"the training image":  {v1beta1.Preflight{Command: []string{"nvidia-smi"}}, "train:v1"},
		"an image of its own": {v1beta1.Preflight{Image: "nccl-tests:v2", Command: []string{"all_reduce_perf"}}, "nccl-tests:v2"},
	} {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "user-init"}}}}
			addPreflight(pod, training, &tc.check)
			init := pod.Spec.InitContainers
			if len(init) != 2 || init[0].Name != batch.PreflightContainerName || init[1].Name != "user-init" {
				t.Fatalf("init containers %+v, want the check first", init)
			}
			c := init[0]
			if c.Image != tc.wantImage || !equality.Semantic.DeepEqual(c.Command, tc.check.Command) ||
				!c.Resources.Limits.Name("nvidia.com/gpu", resource.DecimalSI).Equal(resource.MustParse("8")) {
				t.Errorf("check %+v, want image %s, the command, and the training container's GPUs", c, tc.wantImage)
			}
			if len(c.Env) != 1 || c.Env[0].Name != EnvNodeName || c.Env[0].ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
				t.Errorf("check env %+v, want %s from spec.nodeName", c.Env, EnvNodeName)
			}
		})
	}
}
