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
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/owner"
	"tensorstack.dev/training/pkg/podbuilder"
)

func (f *fixture) deployment(name string) *appsv1.Deployment {
	d, err := f.kubeClient.AppsV1().Deployments("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return d
}

func TestTensorBoard(t *testing.T) {
	cases := []struct {
		name       string
		filesets   []string
		wantArgs   []string
		wantClaims []string
		wantMounts []string
	}{
		{
			name:       "one log directory",
			filesets:   []string{"t9k://pvc/logs/mnist/run1"},
			wantArgs:   []string{"--logdir=/t9k/logs/logs/mnist/run1", "--bind_all", "--port=6006"},
			wantClaims: []string{"logs"},
			wantMounts: []string{"/t9k/logs/logs"},
		},
		{
			name:     "several, one PVC mounted once",
			filesets: []string{"t9k://pvc/logs/a", "t9k://pvc/logs/b/", "t9k://pvc/other"},
			wantArgs: []string{
				"--logdir_spec=logs/a:/t9k/logs/logs/a,logs/b:/t9k/logs/logs/b,other:/t9k/logs/other",
				"--bind_all", "--port=6006",
			},
			wantClaims: []string{"logs", "other"},
			wantMounts: []string{"/t9k/logs/logs", "/t9k/logs/other"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := newTFJob("j").withReplicas("worker", 1).withTensorBoard(tc.filesets...).obj()
			f := newFixture(t, job)
			f.step(job)
			d := f.deployment("j-tensorboard")
			if d == nil {
				t.Fatalf("no deployment")
			}
			if ref := metav1.GetControllerOf(d); ref == nil || ref.UID != "uid-j" {
				t.Errorf("ownerReferences %+v", d.OwnerReferences)
			}
			if d.Labels[v1beta1.LabelJobName] != "j" || d.Labels[v1beta1.LabelJobKind] != podbuilder.TensorFlowKind {
				t.Errorf("labels %v", d.Labels)
			}
			pod := d.Spec.Template
			if _, ok := pod.Labels[v1beta1.LabelJobName]; ok {
				t.Errorf("TensorBoard pods must not be selected by the job's Service: %v", pod.Labels)
			}
			c := pod.Spec.Containers[0]
			if c.Image != "tensorboard:2" || !equalStrings(c.Command, []string{"tensorboard"}) || !equalStrings(c.Args, tc.wantArgs) {
				t.Errorf("container image %s command %v args %v, want args %v", c.Image, c.Command, c.Args, tc.wantArgs)
			}
			// The volumes and mounts are the tensorboard package's
			// (TestDeployment); here, that the reconcile runs what it builds.
			if len(pod.Spec.Volumes) != len(tc.wantClaims) || len(c.VolumeMounts) != len(tc.wantMounts) {
				t.Errorf("%d volumes and %d mounts, want %d and %d", len(pod.Spec.Volumes), len(c.VolumeMounts), len(tc.wantClaims), len(tc.wantMounts))
			}
			svc, err := f.kubeClient.CoreV1().Services("ns").Get(context.Background(), "j-tensorboard", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("service: %v", err)
			}
			if !reflect.DeepEqual(svc.Spec.Selector, pod.Labels) || svc.Spec.Ports[0].Port != 6006 {
				t.Errorf("service selector %v ports %+v", svc.Spec.Selector, svc.Spec.Ports)
			}
			st := f.status(job).Tensorboard
			if st == nil || st.Ready || st.Reason != "Creating" || st.Action != "Create" || st.Dependent == nil ||
				st.Dependent.Kind != "Deployment" || st.Dependent.Name != "j-tensorboard" || st.Dependent.UID != d.UID {
				t.Fatalf("status.tensorboard %+v", st)
			}
		})
	}
}

func TestTensorBoardLifecycle(t *testing.T) {
	job := newPyTorchJob("j").withReplicas("master", 1).withTensorBoard("t9k://pvc/logs/run").obj()
	f := newFixture(t, job)
	f.step(job)

	// The Deployment becomes available.
	d := f.deployment("j-tensorboard")
	d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Message: "has minimum availability"}}
	if _, err := f.kubeClient.AppsV1().Deployments("ns").UpdateStatus(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.observe()
	f.step(job)
	st := f.status(job).Tensorboard
	if !st.Ready || st.Reason != "Available" || st.Type != corev1.EventTypeNormal || st.Note != "has minimum availability" {
		t.Fatalf("status.tensorboard %+v, want ready", st)
	}

	// A new image updates the Deployment.
	changed := f.job(job)
	changed.CommonSpec().TensorboardSpec.Image = "tensorboard:3"
	f.updateJob(changed)
	f.step(changed)
	if img := f.deployment("j-tensorboard").Spec.Template.Spec.Containers[0].Image; img != "tensorboard:3" {
		t.Fatalf("image %s after the spec changed", img)
	}
	if st := f.status(changed).Tensorboard; st.Action != "Update" {
		t.Errorf("action %q, want Update", st.Action)
	}
	f.mustSync(changed)
	for _, a := range f.kubeClient.Actions() {
		if a.GetResource().Resource == "deployments" && a.GetVerb() != "get" {
			t.Errorf("unexpected %s of the deployment without a change", a.GetVerb())
		}
	}
	f.observe()

	// Removed from the spec: Deployment and Service go.
	removed := f.job(changed)
	removed.CommonSpec().TensorboardSpec = nil
	f.updateJob(removed)
	f.step(removed)
	if f.deployment("j-tensorboard") != nil {
		t.Errorf("deployment still exists")
	}
	if _, err := f.kubeClient.CoreV1().Services("ns").Get(context.Background(), "j-tensorboard", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("service still exists: %v", err)
	}
	if f.status(removed).Tensorboard != nil {
		t.Errorf("status.tensorboard %+v after removal", f.status(removed).Tensorboard)
	}
}

func TestTensorBoardInvalidFileset(t *testing.T) {
	job := newTFJob("j").withReplicas("worker", 1).withTensorBoard("s3://bucket/logs").obj()
	f := newFixture(t, job)
	f.step(job)
	if f.deployment("j-tensorboard") != nil {
		t.Fatalf("deployment created from an invalid fileset")
	}
	st := f.status(job).Tensorboard
	if st == nil || st.Ready || st.Reason != "InvalidSpec" || st.Type != corev1.EventTypeWarning {
		t.Fatalf("status.tensorboard %+v", st)
	}
	// The job itself runs regardless.
	if len(f.podNames()) != 1 {
		t.Fatalf("the job's pods were not created")
	}
}

// TestTensorBoardClaimsLikeTheJobService: the TensorBoard's Deployment and
// Service go through the same owned-object helper as the job's Service: an
// orphan with the job's labels is adopted, an object of someone else is
// reported and left alone.
func TestTensorBoardClaimsLikeTheJobService(t *testing.T) {
	job := newPyTorchJob("j").withReplicas("master", 1).withTensorBoard("t9k://pvc/logs/run").obj()
	labels := map[string]string{v1beta1.LabelJobName: "j", v1beta1.LabelJobKind: podbuilder.PyTorchKind}
	orphanSvc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "j-tensorboard", Namespace: "ns", UID: "svc", Labels: labels}}
	foreign := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "j-tensorboard", Namespace: "ns", UID: "dep",
		Labels: labels, OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Other", Name: "o", UID: "o", Controller: ptrBool(true)}}}}

	f := newFixture(t, job, orphanSvc, foreign)
	f.step(job)
	st := f.status(job).Tensorboard
	if st == nil || st.Reason != owner.ReasonNameConflict || st.Type != corev1.EventTypeWarning {
		t.Fatalf("status.tensorboard %+v, want a NameConflict warning", st)
	}
	if ref := metav1.GetControllerOf(f.deployment("j-tensorboard")); ref == nil || ref.UID != "o" {
		t.Fatalf("the foreign deployment was taken over: %+v", ref)
	}
	if !hasEvent(f.events(), corev1.EventTypeWarning, owner.ReasonNameConflict) {
		t.Errorf("no NameConflict event")
	}

	// Once the foreign Deployment is gone, the job runs its own and adopts
	// the orphan Service.
	if err := f.kubeClient.AppsV1().Deployments("ns").Delete(context.Background(), "j-tensorboard", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.observe()
	f.step(job)
	if ref := metav1.GetControllerOf(f.deployment("j-tensorboard")); ref == nil || ref.UID != "uid-j" {
		t.Fatalf("the job's deployment: controller %+v", ref)
	}
	svc, err := f.kubeClient.CoreV1().Services("ns").Get(context.Background(), "j-tensorboard", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(svc); ref == nil || ref.UID != "uid-j" {
		t.Fatalf("the orphan TensorBoard service was not adopted: %+v", svc.OwnerReferences)
	}
	if !hasEvent(f.events(), corev1.EventTypeNormal, owner.ReasonAdopted) {
		t.Errorf("no Adopted event")
	}
}
