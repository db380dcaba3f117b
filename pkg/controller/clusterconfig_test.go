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
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/podbuilder"
)

// clusterConfigActions are the verbs the controller sent on config maps,
// and whether each came before any pod was created.
func (f *fixture) clusterConfigActions() (verbs []string, beforePods []bool) {
	podsCreated := false
	for _, a := range f.kubeClient.Actions() {
		switch {
		case a.GetResource().Resource == "configmaps":
			verbs = append(verbs, a.GetVerb())
			beforePods = append(beforePods, !podsCreated)
		case a.GetResource().Resource == "pods" && a.GetVerb() == "create":
			podsCreated = true
		}
	}
	return verbs, beforePods
}

// TestClusterConfigMapBeforeThePods: a GenericJob's addresses are written
// into a config map the job controls, named for the job's UID, before its
// pods, which refer to it; the controller never reads one.
func TestClusterConfigMapBeforeThePods(t *testing.T) {
	job := newGenericJob("g").withReplicas("coordinator", 1).withReplicas("worker", 2).obj()
	f := newFixture(t, job)
	f.mustSync(job)
	verbs, before := f.clusterConfigActions()
	if len(verbs) != 1 || verbs[0] != "create" || !before[0] {
		t.Fatalf("config map actions %v (before the pods: %v), want one create before the pods", verbs, before)
	}
	name := podbuilder.ClusterConfigMapName(f.job(job))
	cm, err := f.kubeClient.CoreV1().ConfigMaps("ns").Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(cm); ref == nil || ref.UID != f.job(job).GetUID() {
		t.Errorf("config map %s is controlled by %v, want the job", name, ref)
	}
	for _, p := range f.createdPods() {
		env := f.containerEnv(&p.Spec.Containers[0])
		if want := "worker-0.g.ns.svc,worker-1.g.ns.svc"; env["TENSORSTACK_WORKER_HOSTS"] != want {
			t.Errorf("%s: TENSORSTACK_WORKER_HOSTS %q, want %q", p.Name, env["TENSORSTACK_WORKER_HOSTS"], want)
		}
	}
}

// TestClusterConfigMapOfAnEarlierShapeIsReplaced: a config map of the
// job's name and UID that exists already (written before the job was
// scaled, or by someone else) is overwritten before new pods are made.
func TestClusterConfigMapOfAnEarlierShapeIsReplaced(t *testing.T) {
	job := newGenericJob("g").withReplicas("worker", 2).obj()
	f := newFixture(t, job)
	stale := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: podbuilder.ClusterConfigMapName(f.job(job)), Namespace: "ns"},
		Data:       map[string]string{"TENSORSTACK_WORKER_HOSTS": "somewhere-else"},
	}
	if _, err := f.kubeClient.CoreV1().ConfigMaps("ns").Create(f.ctx, stale, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.kubeClient.ClearActions()
	f.mustSync(job)
	if verbs, before := f.clusterConfigActions(); len(verbs) != 2 || verbs[1] != "update" || !before[1] {
		t.Fatalf("config map actions %v (before the pods: %v), want a create refused, then an update, before the pods", verbs, before)
	}
	for _, p := range f.createdPods() {
		if got := f.containerEnv(&p.Spec.Containers[0])["TENSORSTACK_WORKER_HOSTS"]; got != "worker-0.g.ns.svc,worker-1.g.ns.svc" {
			t.Errorf("%s: TENSORSTACK_WORKER_HOSTS %q, the stale config map's", p.Name, got)
		}
	}
}

// TestNoPodsWithoutTheClusterConfigMap: while the config map cannot be
// written, no pod is made (its containers could not start); a kind that
// publishes nothing writes none.
func TestNoPodsWithoutTheClusterConfigMap(t *testing.T) {
	job := newTFJob("tf").withReplicas("worker", 2).obj()
	f := newFixture(t, job)
	f.failNext("create", "configmaps", 1, errors.New("etcd is gone"))
	if _, err := f.sync(job); err == nil {
		t.Error("the sync succeeded without the config map")
	}
	if n := len(f.createdPods()); n != 0 {
		t.Errorf("%d pods created without their config map", n)
	}
	f.mustSync(job)
	if n := len(f.createdPods()); n != 2 {
		t.Errorf("%d pods once the config map was written, want 2", n)
	}

	pt := newPyTorchJob("pt").withReplicas("master", 1).withReplicas("worker", 1).obj()
	g := newFixture(t, pt)
	g.mustSync(pt)
	if verbs, _ := g.clusterConfigActions(); len(verbs) != 0 {
		t.Errorf("a PyTorch job wrote config maps: %v", verbs)
	}
}
