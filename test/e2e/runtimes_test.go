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

package e2e

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	clientset "tensorstack.dev/training/pkg/generated/clientset/versioned"
	"tensorstack.dev/training/test/e2e/framework"
)

// simulatedRuntime is a TrainingRuntime of PyTorch jobs on the simulated
// nodes: a master and a worker on the image given, running for a minute.
func simulatedRuntime(name, image string) *v1beta1.TrainingRuntime {
	pod := func() corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
				framework.AnnotationExitCode: "0", framework.AnnotationRunDuration: "60s"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: v1beta1.PyTorchContainerName, Image: image}}},
		}
	}
	return &v1beta1.TrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1beta1.TrainingRuntimeSpec{Template: v1beta1.TrainingJobTemplate{Pytorch: &v1beta1.PyTorchTrainingJobSpec{
			TrainingJobSpec: v1beta1.TrainingJobSpec{ReplicaSpecs: []v1beta1.ReplicaSpec{
				{Type: v1beta1.ReplicaTypeMaster, Replicas: ptr.To[int32](1), Template: pod()},
				{Type: v1beta1.ReplicaTypeWorker, Replicas: ptr.To[int32](1), Template: pod()},
			}},
		}}},
	}
}

// jobFromRuntime is a PyTorch job naming a TrainingRuntime, with numNodes.
func jobFromRuntime(name, runtime string, nodes int32) *v1beta1.PyTorchTrainingJob {
	return &v1beta1.PyTorchTrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1beta1.PyTorchTrainingJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{
			RuntimeRef: &v1beta1.RuntimeRef{Name: runtime, Kind: "TrainingRuntime"},
			Trainer:    &v1beta1.Trainer{NumNodes: ptr.To(nodes)},
		}},
	}
}

// TestRuntimeChangeLeavesJobsAlone: a runtime changed after a job was
// made from it changes neither the job's stored templates nor its pods; a
// job made after the change gets it.
func TestRuntimeChangeLeavesJobsAlone(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "runtime-snapshot")
	ctx := f.Context()
	runtimes := f.Training.BatchV1beta1().TrainingRuntimes(f.Namespace)
	rt, err := runtimes.Create(ctx, simulatedRuntime("sim", "registry.example/train:1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	jobs := f.Training.BatchV1beta1().PyTorchTrainingJobs(f.Namespace)
	before, err := jobs.Create(ctx, jobFromRuntime("before", "sim", 3), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref := f.Ref(framework.KindPyTorch, "before")
	f.WaitForRunningPods(ref, 3)

	rt.Spec.Template.Pytorch.ReplicaSpecs[1].Template.Spec.Containers[0].Image = "registry.example/train:2"
	if _, err := runtimes.Update(ctx, rt, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stored, err := jobs.Get(ctx, "before", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range before.Spec.ReplicaSpecs {
		if b, a := before.Spec.ReplicaSpecs[i].Template.Spec.Containers[0].Image, stored.Spec.ReplicaSpecs[i].Template.Spec.Containers[0].Image; a != b {
			t.Errorf("%s's stored image changed with the runtime: %s, was %s", stored.Spec.ReplicaSpecs[i].Type, a, b)
		}
	}
	for _, p := range f.Pods(ref) {
		if img := p.Spec.Containers[0].Image; img != "registry.example/train:1" {
			t.Errorf("pod %s runs %s after the runtime changed, want the image of its creation", p.Name, img)
		}
	}

	if _, err := jobs.Create(ctx, jobFromRuntime("after", "sim", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range f.WaitForRunningPods(f.Ref(framework.KindPyTorch, "after"), 2) {
		want := "registry.example/train:1"
		if strings.Contains(p.Name, "-worker-") {
			want = "registry.example/train:2"
		}
		if img := p.Spec.Containers[0].Image; img != want {
			t.Errorf("pod %s of the later job runs %s, want %s", p.Name, img, want)
		}
	}
}

// TestRuntimeRBAC: who may write and use runtimes, through the aggregator
// and the installed user roles: a user bound to view reads both scopes and
// writes neither (403 on a ClusterTrainingRuntime); one bound to edit writes
// its namespace's and makes jobs from them; one who may create jobs but not
// get runtimes is refused a job naming one, as the API refuses them.
func TestRuntimeRBAC(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "runtime-rbac")
	ctx := f.Context()
	bind := func(user, kind, role string) {
		t.Helper()
		if _, err := f.Kube.RbacV1().RoleBindings(f.Namespace).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.Kube.RbacV1().Roles(f.Namespace).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "job-creator"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1beta1.GroupName},
			Resources: []string{v1beta1.PyTorchTrainingJobResource}, Verbs: []string{"create", "get"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind("viewer", "ClusterRole", "view")
	bind("editor", "ClusterRole", "edit")
	bind("creator", "Role", "job-creator")
	client := func(user string) clientset.Interface {
		c, err := clientset.NewForConfig(f.UserConfig(user, "e2e-users"))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	viewer, editor, creator := client("viewer"), client("editor"), client("creator")

	// RBAC reaches the authorizer through informers: wait for the editor.
	var created *v1beta1.TrainingRuntime
	f.Eventually(framework.Timeout, "the editor to write a TrainingRuntime", func(ctx context.Context) (bool, error) {
		var err error
		created, err = editor.BatchV1beta1().TrainingRuntimes(f.Namespace).Create(ctx, simulatedRuntime("team", framework.Image), metav1.CreateOptions{})
		if apierrors.IsForbidden(err) {
			return false, nil
		}
		return err == nil, err
	})
	if _, err := editor.BatchV1beta1().PyTorchTrainingJobs(f.Namespace).Create(ctx, jobFromRuntime("edited", "team", 2), metav1.CreateOptions{}); err != nil {
		t.Errorf("the editor making a job from the namespace's runtime: %v", err)
	}
	if _, err := editor.BatchV1beta1().ClusterTrainingRuntimes().Create(ctx, &v1beta1.ClusterTrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Name: f.Namespace}, Spec: created.Spec}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the editor writing a ClusterTrainingRuntime: %v, want 403", err)
	}

	if _, err := viewer.BatchV1beta1().TrainingRuntimes(f.Namespace).Get(ctx, "team", metav1.GetOptions{}); err != nil {
		t.Errorf("the viewer reading the namespace's runtime: %v", err)
	}
	if list, err := viewer.BatchV1beta1().ClusterTrainingRuntimes().List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) < 5 {
		t.Errorf("the viewer listing the cluster's runtimes: %v (%d), want the shipped five at least", err, len(list.Items))
	}
	_, err := viewer.BatchV1beta1().ClusterTrainingRuntimes().Create(ctx, &v1beta1.ClusterTrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Name: f.Namespace}, Spec: created.Spec}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("the viewer writing a ClusterTrainingRuntime: %v, want 403", err)
	}
	if err := viewer.BatchV1beta1().TrainingRuntimes(f.Namespace).Delete(ctx, "team", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the viewer deleting a TrainingRuntime: %v, want 403", err)
	}

	_, err = creator.BatchV1beta1().PyTorchTrainingJobs(f.Namespace).Create(ctx, jobFromRuntime("refused", "team", 2), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "trainingruntimes") || !strings.Contains(err.Error(), "creator") {
		t.Errorf("a job naming a runtime its creator may not get: %v, want 403 naming the runtime and the user", err)
	}
	if _, err := f.Training.BatchV1beta1().PyTorchTrainingJobs(f.Namespace).Get(ctx, "refused", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused job was stored: %v", err)
	}
}
