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
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

func TestTrimPodKeepsWhatTheControllerReads(t *testing.T) {
	now := metav1.Now()
	meta := metav1.ObjectMeta{
		Name: "j-worker-0", Namespace: "ns", UID: "u1", ResourceVersion: "7", DeletionTimestamp: &now,
		Labels:          map[string]string{v1beta1.LabelJobName: "j"},
		Annotations:     map[string]string{"a": "b"},
		Finalizers:      []string{v1beta1.ReplicaOutcomeFinalizer},
		OwnerReferences: []metav1.OwnerReference{{Name: "j", UID: "job-uid", Controller: ptr.To(true)}},
	}
	status := corev1.PodStatus{
		Phase: corev1.PodFailed, Reason: "Evicted", StartTime: &now,
		Conditions: []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "tensorflow",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137}}}},
	}
	// An in-place restart agent: its restart policy and rule are read.
	agent := corev1.Container{Name: podbuilder.RestartAgentContainerName, Image: "tf:2", Command: []string{"sh"},
		RestartPolicy: ptr.To(corev1.ContainerRestartPolicyNever),
		RestartPolicyRules: []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestartAllContainers,
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{75}}}}}
	pod := &corev1.Pod{
		ObjectMeta: *meta.DeepCopy(),
		Spec: corev1.PodSpec{
			NodeName: "node-1", SchedulerName: "sched", Hostname: "j-worker-0", Subdomain: "j",
			RestartPolicy:   corev1.RestartPolicyNever,
			SchedulingGroup: &corev1.PodSchedulingGroup{PodGroupName: ptr.To("g")},
			InitContainers:  []corev1.Container{{Name: "init", Image: "busybox"}},
			Containers: []corev1.Container{{
				Name: "tensorflow", Image: "tf:2", Command: []string{"python"}, Args: []string{"train.py"},
				Env:       []corev1.EnvVar{{Name: "TF_CONFIG", Value: "{}"}},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			}, {Name: "sidecar", Image: "s:1"}, agent},
			Volumes: []corev1.Volume{{Name: "data"}},
		},
		Status: *status.DeepCopy(),
	}
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}

	got, err := trimForCache(pod)
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Pod{
		ObjectMeta: meta,
		Spec: corev1.PodSpec{
			NodeName: "node-1", SchedulerName: "sched", Hostname: "j-worker-0", Subdomain: "j",
			RestartPolicy:   corev1.RestartPolicyNever,
			SchedulingGroup: &corev1.PodSchedulingGroup{PodGroupName: ptr.To("g")},
			InitContainers:  []corev1.Container{{Name: "init"}},
			Containers: []corev1.Container{{Name: "tensorflow"}, {Name: "sidecar"},
				{Name: agent.Name, RestartPolicy: agent.RestartPolicy, RestartPolicyRules: agent.RestartPolicyRules}},
		},
		Status: status,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("trimmed pod (-want +got):\n%s", diff)
	}
	// What the controller derives from a cached pod is the same as from the
	// whole pod.
	if i := podbuilder.TrainingContainer(podbuilder.TensorFlow, &got.(*corev1.Pod).Spec); i != 0 {
		t.Errorf("training container of the trimmed pod = %d, want 0", i)
	}
	if !podbuilder.CanRestartInPlace(got.(*corev1.Pod)) {
		t.Errorf("the trimmed pod lost its agent's restart rule")
	}
	if diff := cmp.Diff(containerStatuses(want, nil), containerStatuses(got.(*corev1.Pod), nil)); diff != "" {
		t.Errorf("container statuses (-want +got):\n%s", diff)
	}
}

// TestTrimPodKeepsPlacementUntilScheduled: a pod that restarts in place
// keeps where it may run (its node selector, required node affinity and
// tolerations) until it is scheduled, for planInPlaceNodes; other pods, and
// scheduled ones, do not.
func TestTrimPodKeepsPlacementUntilScheduled(t *testing.T) {
	agent := corev1.Container{Name: podbuilder.RestartAgentContainerName,
		RestartPolicyRules: []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestartAllContainers}}}
	affinity := &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "type", Operator: corev1.NodeSelectorOpIn, Values: []string{"real"}}}}}}}
	pod := func(node string, containers ...corev1.Container) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{
			NodeName: node, NodeSelector: map[string]string{"type": "real"},
			Tolerations: []corev1.Toleration{{Key: "real", Operator: corev1.TolerationOpExists}},
			Affinity: &corev1.Affinity{NodeAffinity: affinity,
				PodAntiAffinity: &corev1.PodAntiAffinity{}},
			Containers: append([]corev1.Container{{Name: "pytorch", Image: "i"}}, containers...),
		}}
	}
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		keep bool
	}{
		"in place, not scheduled":  {pod("", agent), true},
		"in place, scheduled":      {pod("node-1", agent), false},
		"recreated, not scheduled": {pod(""), false},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := trimForCache(tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			spec := got.(*corev1.Pod).Spec
			kept := spec.NodeSelector != nil && spec.Tolerations != nil && spec.Affinity != nil && spec.Affinity.NodeAffinity != nil
			dropped := spec.NodeSelector == nil && spec.Tolerations == nil && spec.Affinity == nil
			switch {
			case tc.keep && !kept:
				t.Errorf("placement dropped: %+v", spec)
			case tc.keep && spec.Affinity.PodAntiAffinity != nil:
				t.Errorf("pod anti-affinity kept, which no node decision reads: %+v", spec.Affinity)
			case !tc.keep && !dropped:
				t.Errorf("placement kept: %+v", spec)
			}
		})
	}
}

func TestTrimForCacheDropsManagedFieldsOfOtherObjects(t *testing.T) {
	mf := []metav1.ManagedFieldsEntry{{Manager: "m"}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", ManagedFields: mf},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"a": "b"}}}
	job := &v1beta1.TensorFlowTrainingJob{ObjectMeta: metav1.ObjectMeta{Name: "j", ManagedFields: mf},
		Spec: v1beta1.TensorFlowTrainingJobSpec{}}
	job.Spec.ReplicaSpecs = []v1beta1.ReplicaSpec{{Type: v1beta1.ReplicaTypeWorker}}
	for _, obj := range []metav1.Object{svc, job} {
		if _, err := trimForCache(obj); err != nil {
			t.Fatal(err)
		}
		if obj.GetManagedFields() != nil {
			t.Errorf("%s: managedFields kept", obj.GetName())
		}
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || svc.Spec.Selector["a"] != "b" {
		t.Errorf("Service spec changed: %+v", svc.Spec)
	}
	if len(job.Spec.ReplicaSpecs) != 1 {
		t.Errorf("job spec changed: %+v", job.Spec)
	}
	// Anything else passes unchanged.
	if got, err := trimForCache("tombstone"); err != nil || got != "tombstone" {
		t.Errorf("trimForCache(string) = %v, %v", got, err)
	}
}
